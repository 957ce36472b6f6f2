// SPDX-License-Identifier: MIT
/*
 * Output: the decoration "[tid] module:func:file:line: ", the default stderr
 * sink, a callback, syslog, hex dumps, the stack dump flag, and the rate
 * limit of pr_debug_ratelimited ("N callbacks suppressed").
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

__attribute__((noinline)) void out_site(int v)
{
	pr_debug("value %d", v);	/* no newline: one is added */
}

__attribute__((noinline)) void out_nl(int v)
{
	pr_debug("line %d\n", v);
}

__attribute__((noinline)) void out_long(void)
{
	static char big[3000];

	memset(big, 'x', sizeof(big) - 1);
	pr_debug("long %s end\n", big);
}

__attribute__((noinline)) void out_hex(const void *buf, size_t len)
{
	print_hex_dump_debug("hx: ", DUMP_PREFIX_OFFSET, 16, 1, buf, len, true);
}

__attribute__((noinline)) void out_hex4(const void *buf, size_t len)
{
	print_hex_dump_debug("w: ", DUMP_PREFIX_NONE, 16, 4, buf, len, false);
}

__attribute__((noinline)) void out_rl(int v)
{
	pr_debug_ratelimited("rl %d\n", v);
}

/*
 * An injectable clock for the rate-limit tests, so that they move time instead
 * of sleeping through the 5 s interval.  The library reads the rate limit's
 * time with clock_gettime(CLOCK_MONOTONIC_COARSE); this program defines
 * clock_gettime() (exported: -rdynamic), which the dynamic linker binds the
 * library's call to.  While fake_ms is set, that clock reads fake_ms; every
 * other clock, and that one otherwise, is the real one.  Criterion runs each
 * test in its own process: a test's clock does not leak into the next.
 */
static unsigned long long fake_ms;	/* 0: the real clock */

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);

	if (fake_ms && clk == CLOCK_MONOTONIC_COARSE) {
		ts->tv_sec = (time_t)(fake_ms / 1000);
		ts->tv_nsec = (long)(fake_ms % 1000) * 1000000L;
		return 0;
	}
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "clock_gettime");
	return real(clk, ts);
}

/* Stop the clock at the real time; fake_advance() moves it. */
static void fake_start(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	fake_ms = (unsigned long long)ts.tv_sec * 1000ull + (unsigned long long)ts.tv_nsec / 1000000ull;
}

static void fake_advance(unsigned ms)
{
	fake_ms += ms;
}

static unsigned line_of(const char *needle)
{
	char *l = dynamic_debug_listing(), *p;
	unsigned line = 0;

	for (p = strtok(l, "\n"); p; p = strtok(NULL, "\n")) {
		if (p[0] == '#' || !strstr(p, needle))
			continue;
		*strchr(p, ' ') = '\0';
		line = (unsigned)atoi(strrchr(p, ':') + 1);
		break;
	}
	free(l);
	return line;
}

Test(dynamic_debug_output, decorations)
{
	struct dynamic_debug_capture c;
	char want[256];
	unsigned ln = line_of("\"value %d\"");

	dynamic_debug_capture_start(&c);
	cr_assert_eq(dynamic_debug_write("func out_site +p", NULL), 0);
	out_site(1);
	cr_assert_str_eq(c.buf, "value 1\n");
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site +m", NULL), 0);
	out_site(2);
	cr_assert_str_eq(c.buf, "dynamic_debug_output: value 2\n");
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site =pmf", NULL), 0);
	out_site(3);
	cr_assert_str_eq(c.buf, "dynamic_debug_output:out_site: value 3\n");
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site =pmfsl", NULL), 0);
	out_site(4);
	snprintf(want, sizeof(want), "dynamic_debug_output:out_site:test/unit/dynamic_debug_output.c:%u: value 4\n", ln);
	cr_assert_str_eq(c.buf, want);
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site =pt", NULL), 0);
	out_site(5);
	snprintf(want, sizeof(want), "[%d] value 5\n", (int)gettid());
	cr_assert_str_eq(c.buf, want);
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site =ptmfsl", NULL), 0);
	out_site(6);
	snprintf(want, sizeof(want), "[%d] dynamic_debug_output:out_site:test/unit/dynamic_debug_output.c:%u: value 6\n",
		 (int)gettid(), ln);
	cr_assert_str_eq(c.buf, want);
	c.len = 0;
	cr_assert_eq(dynamic_debug_write("func out_site =pl", NULL), 0);
	out_site(7);
	snprintf(want, sizeof(want), "%u: value 7\n", ln);
	cr_assert_str_eq(c.buf, want);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_output, long_messages_are_whole)
{
	struct dynamic_debug_capture c;

	dynamic_debug_capture_start(&c);
	cr_assert_eq(dynamic_debug_write("func out_long =pf", NULL), 0);
	out_long();
	cr_assert_eq(c.n, 1);
	cr_assert_eq(c.len, strlen("out_long: long ") + 2999 + strlen(" end\n"));
	cr_assert(!strncmp(c.buf, "out_long: long xxx", 18));
	cr_assert(!strcmp(c.buf + c.len - 5, " end\n"));
	kk_dyndbg_set_sink(NULL, NULL);
}

/* Run @fn with stderr going to a file; return what was written. */
static char *capture_stderr(void (*fn)(void))
{
	char path[] = "/tmp/kk-dd-stderr.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	static char buf[8192];
	ssize_t n;

	cr_assert(fd >= 0 && saved >= 0);
	fflush(stderr);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return buf;
}

static void run_nl(void)
{
	out_nl(42);
}

Test(dynamic_debug_output, default_sink_is_stderr)
{
	kk_dyndbg_set_sink(NULL, NULL);
	cr_assert_eq(dynamic_debug_write("func out_nl =pf", NULL), 0);
	cr_assert_str_eq(capture_stderr(run_nl), "out_nl: line 42\n");
}

static void run_syslog(void)
{
	openlog("ddtest", LOG_PERROR, LOG_USER);	/* LOG_PERROR: a copy on stderr */
	out_nl(7);
	closelog();
}

Test(dynamic_debug_output, syslog_sink)
{
	kk_dyndbg_set_sink(kk_dyndbg_sink_syslog, KK_DYNDBG_SYSLOG_ARG(LOG_DEBUG));
	cr_assert_eq(dynamic_debug_write("func out_nl =pf", NULL), 0);
	char *e = capture_stderr(run_syslog);

	cr_assert(strstr(e, "ddtest"), "%s", e);
	cr_assert(strstr(e, "out_nl: line 7"), "%s", e);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_output, hex_dump)
{
	struct dynamic_debug_capture c;
	unsigned char b[20];

	for (int i = 0; i < 20; i++)
		b[i] = (unsigned char)(0x41 + i);
	b[3] = 0x01;
	dynamic_debug_capture_start(&c);
	out_hex(b, sizeof(b));
	cr_assert_eq(c.n, 0);
	cr_assert_eq(dynamic_debug_write("func out_hex +p; func out_hex4 +p", NULL), 0);
	out_hex(b, sizeof(b));
	cr_assert_eq(c.n, 2);
	cr_assert_str_eq(c.buf,
		"hx: 00000000: 41 42 43 01 45 46 47 48 49 4a 4b 4c 4d 4e 4f 50  ABC.EFGHIJKLMNOP\n"
		"hx: 00000010: 51 52 53 54                                      QRST\n");
	c.len = 0;
	out_hex4(b, 8);
	cr_assert_str_eq(c.buf, "w: 01434241 48474645\n");
	/* the hex-dump site is listed like any other */
	cr_assert_str_eq(dynamic_debug_flags_of("]out_hex "), "p");
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_output, stack_dump_flag)
{
	struct dynamic_debug_capture c;

	dynamic_debug_capture_start(&c);
	cr_assert_eq(dynamic_debug_write("func out_nl =pd", NULL), 0);
	out_nl(1);
	cr_assert_gt(c.n, 2, "%s", c.buf);
	cr_assert(!strncmp(c.buf, "line 1\n #0 ", 11), "%s", c.buf);
	/* the first frame is the site's function or (after a tail call) its caller */
	char *f0 = c.buf + 7;

	*strchr(f0, '\n') = '\0';
	cr_assert(strstr(f0, "out_nl") || strstr(f0, "stack_dump_flag"), "%s", f0);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_output, ratelimited_burst_and_suppressed_report, .timeout = 20)
{
	struct dynamic_debug_capture c;

	fake_start();
	dynamic_debug_capture_start(&c);
	for (int i = 0; i < 30; i++)
		out_rl(i);
	cr_assert_eq(c.n, 0, "disabled: nothing, not even counted");
	cr_assert_eq(dynamic_debug_write("func out_rl +p", NULL), 0);
	for (int i = 0; i < 25; i++)
		out_rl(i);
	cr_assert_eq(c.n, 10, "burst of 10: %s", c.buf);
	cr_assert(strstr(c.buf, "rl 9\n") && !strstr(c.buf, "rl 10\n"), "%s", c.buf);
	/* the kernel's interval: 5 s; just before its end, still suppressed */
	fake_advance(4999);
	out_rl(99);
	cr_assert_eq(c.n, 10, "inside the interval: %s", c.buf);
	fake_advance(2);
	c.len = 0;
	c.buf[0] = '\0';
	out_rl(100);
	cr_assert_str_eq(c.buf, "out_rl: 16 callbacks suppressed\nrl 100\n");
	kk_dyndbg_set_sink(NULL, NULL);
}

static void run_ratelimit(void)
{
	static DEFINE_RATELIMIT_STATE(rs, 50, 3);
	int ok = 0;

	fake_start();
	for (int i = 0; i < 10; i++)
		ok += __ratelimit(&rs);
	cr_assert_eq(ok, 3);
	fake_advance(49);
	cr_assert_eq(__ratelimit(&rs), 0, "inside the 50 ms interval");
	fake_advance(31);
	cr_assert_eq(__ratelimit(&rs), 1);
}

Test(dynamic_debug_output, generic_ratelimit)
{
	char *e = capture_stderr(run_ratelimit);

	cr_assert_str_eq(e, "run_ratelimit: 8 callbacks suppressed\n");
	struct ratelimit_state off = RATELIMIT_STATE_INIT(off, 0, 1);

	for (int i = 0; i < 5; i++)
		cr_assert_eq(__ratelimit(&off), 1, "interval 0: no limit");
}

static void *thread_print(void *arg)
{
	(void)arg;
	for (int i = 0; i < 200; i++)
		out_nl(i);
	return NULL;
}

Test(dynamic_debug_output, threads_and_switching)
{
	struct dynamic_debug_capture c;
	pthread_t th[3];

	dynamic_debug_capture_start(&c);
	cr_assert_eq(dynamic_debug_write("func out_nl =p", NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_create(&th[i], NULL, thread_print, NULL);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(dynamic_debug_write(i % 2 ? "func out_nl -p" : "func out_nl +p", NULL), 0);
	for (int i = 0; i < 3; i++)
		pthread_join(th[i], NULL);
	cr_assert_eq(dynamic_debug_write("func out_nl +p", NULL), 0);
	int before = c.n;

	out_nl(1);
	cr_assert_eq(c.n, before + 1);
	/* every captured message is whole */
	for (char *p = strtok(c.buf, "\n"); p; p = strtok(NULL, "\n"))
		cr_assert(!strncmp(p, "line ", 5), "%s", p);
	kk_dyndbg_set_sink(NULL, NULL);
}
