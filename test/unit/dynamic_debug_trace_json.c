// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_pipe_json (issue 39): every record as one JSON object
 * a line, with typed, named arguments, wall-clock time, and a "lost" line
 * per thread whose records were overwritten before they were read.  The
 * test records sites with every kind of conversion and nasty strings, and
 * test/unit/dynamic_debug_trace_json.py checks what was read with Python's
 * json module.
 */
#define KBUILD_MODNAME "dynamic_debug_trace_json"
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

static int js_all_line;

__attribute__((noinline)) void js_all(const char *bad)
{
	int n;

	errno = ENOENT;
	js_all_line = __LINE__ + 1;
	pr_debug("d=%d i=%i u=%u x=%x o=%o c=%c e=%e f=%f g=%g s=%s p=%p err: %m hh=%hhd "
		 "ll=%lld zu=%zu w=%*d nan=%f q=%s nl=%s ctl=%s bad=%s %d %% n%n end\n",
		 -5, 7, 4000000000u, 0xbeefu, 8u, 'A', 1.5e10, 3.25, -0.0001, "plain",
		 (void *)(uintptr_t)0x1234, (signed char)-3, -9007199254740993LL, SIZE_MAX, 6, 42,
		 (double)NAN, "say \"hi\"", "a\nb", "x\001y", bad, 99, &n);
}

/* What js_all's message is, as printf makes it. */
static int js_all_text(char *buf, size_t n, const char *bad)
{
	int k;

	errno = ENOENT;
	return snprintf(buf, n, "d=%d i=%i u=%u x=%x o=%o c=%c e=%e f=%f g=%g s=%s p=%p err: %m hh=%hhd "
			"ll=%lld zu=%zu w=%*d nan=%f q=%s nl=%s ctl=%s bad=%s %d %% n%n end\n",
			-5, 7, 4000000000u, 0xbeefu, 8u, 'A', 1.5e10, 3.25, -0.0001, "plain",
			(void *)(uintptr_t)0x1234, (signed char)-3, -9007199254740993LL, SIZE_MAX, 6,
			42, (double)NAN, "say \"hi\"", "a\nb", "x\001y", bad, 99, &k);
}

static const char js_all_fmt[] = "d=%d i=%i u=%u x=%x o=%o c=%c e=%e f=%f g=%g s=%s p=%p err: %m "
				 "hh=%hhd ll=%lld zu=%zu w=%*d nan=%f q=%s nl=%s ctl=%s bad=%s %d "
				 "%% n%n end\n";

static const char *volatile null_str;	/* NULL, unknown to the compiler's format check */

__attribute__((noinline)) void js_more(void)
{
	pr_debug("inf=%f ninf=%f ld=%Lg big=%#llx neg=%hd uc=%hhu %s\n", (double)INFINITY,
		 -(double)INFINITY, 1.5L, 0xfedcba9876543210ULL, (short)-2, (unsigned char)255,
		 null_str);
}

__attribute__((noinline)) void js_cut(void)
{
	/* wide strings are not recorded: packing stops there */
	pr_debug("n=%d then %ls w=%d\n", 5, L"x", 6);
}

__attribute__((noinline)) void js_quote(void)
{
	pr_debug("say \"%s\"\ttab\n", "q\"\\");
}

__attribute__((noinline)) void js_seq(unsigned long i)
{
	pr_debug("jseq %lu\n", i);
}

static char tmpdir[] = "/tmp/kk-json-XXXXXX";

static void make_tmp(void)
{
	cr_assert(mkdtemp(tmpdir), "mkdtemp");
}

static void cleanup(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	(void)!system(cmd);
}

/* A read of trace_pipe_json into TMP/@name. */
static void read_json(const char *name)
{
	char path[128], *t = NULL;
	size_t n = 0;
	FILE *f;

	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_json", &t, &n), 0);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert(f);
	if (n)
		fwrite(t, 1, n, f);
	fclose(f);
	free(t);
}

static void write_tmp(const char *name, const char *data, size_t n)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	cr_assert(f);
	fwrite(data, 1, n, f);
	fclose(f);
}

/* Run the checker: "MODE FILE ARGS..."; its one line on failure. */
static void check(const char *args)
{
	const char *src = getenv("KK_SRC");
	char cmd[1024], out[1024] = "";
	size_t n;
	FILE *p;
	int st;

	if (system("command -v python3 >/dev/null 2>&1") != 0)
		cr_skip_test("python3 is not installed: the JSON is not checked");
	snprintf(cmd, sizeof(cmd), "cd %s && python3 %s/test/unit/dynamic_debug_trace_json.py %s 2>&1",
		 tmpdir, src ? src : ".", args);
	p = popen(cmd, "r");
	cr_assert(p);
	n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	st = pclose(p);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s\n%s", args, out);
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

TestSuite(dynamic_debug_trace_json, .init = make_tmp, .fini = cleanup);

Test(dynamic_debug_trace_json, every_conversion_typed_and_named)
{
	const char *bad = "\xff\xfe ok \xc3\x28";
	char msg[1024], args[512];
	int64_t off;

	pthread_setname_np(pthread_self(), "json-main");
	dynamic_debug_must_write("func js_all +T");
	js_all(bad);
	write_tmp("msg", msg, (size_t)js_all_text(msg, sizeof(msg), bad));
	write_tmp("fmt", js_all_fmt, strlen(js_all_fmt));
	read_json("all");
	off = clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC);
	snprintf(args, sizeof(args), "all all msg fmt %d %d json-main %d %lld", (int)getpid(),
		 (int)syscall(SYS_gettid), js_all_line, (long long)off);
	check(args);
}

Test(dynamic_debug_trace_json, non_finite_long_double_null_and_cut_records)
{
	dynamic_debug_must_write("func js_more +T");
	dynamic_debug_must_write("func js_cut +T");
	dynamic_debug_must_write("func js_quote +T");
	js_more();
	js_cut();
	js_quote();
	read_json("more");
	check("more more");
}

/* A consuming read: what one read returned, the next does not. */
Test(dynamic_debug_trace_json, consumes_as_trace_pipe_does)
{
	char *t = NULL;
	size_t n = 0;

	dynamic_debug_must_write("func js_seq +T");
	js_seq(1);
	read_json("first");
	check("valid first");
	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe", &t, &n), 0);
	cr_assert(!t || !strstr(t, "jseq 1"), "trace_pipe showed what trace_pipe_json consumed: %s", t);
	free(t);
	js_seq(2);
	t = NULL;
	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe", &t, &n), 0);
	cr_assert(t && strstr(t, "jseq 2"), "%s", t ? t : "");
	free(t);
	t = NULL;
	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_json", &t, &n), 0);
	cr_assert(!t || !strstr(t, "jseq"), "consumed by trace_pipe, shown again: %s", t);
	free(t);
}

struct wrapper {
	unsigned long n;
	int tid;
	int go[2], done[2];
};

/* Writes n records (wrapping its ring), says so, and waits to be released. */
static void *wrap_thread(void *arg)
{
	struct wrapper *w = arg;
	char c;

	w->tid = (int)syscall(SYS_gettid);
	for (unsigned long i = 0; i < w->n; i++)
		js_seq(i);
	(void)!write(w->done[1], "x", 1);
	(void)!read(w->go[0], &c, 1);
	return NULL;
}

/* One "lost" line per thread that lost records, before its events; lost + shown = written. */
Test(dynamic_debug_trace_json, lost_records_counted_per_thread)
{
	struct wrapper w[2] = { { .n = 500 }, { .n = 700 } };
	pthread_t th[2];
	char args[128], c;

	cr_assert_eq(kk_dyndbg_trace_set_size(4096), 0);
	dynamic_debug_must_write("func js_seq +T");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(pipe(w[i].go), 0);
		cr_assert_eq(pipe(w[i].done), 0);
		pthread_create(&th[i], NULL, wrap_thread, &w[i]);
		cr_assert_eq(read(w[i].done[0], &c, 1), 1);
	}
	read_json("lost");
	snprintf(args, sizeof(args), "lost lost %d 500 %d 700", w[0].tid, w[1].tid);
	check(args);
	/* since the previous read: 300 more by the main thread, wrapping again */
	for (unsigned long i = 0; i < 300; i++)
		js_seq(i);
	read_json("lost2");
	snprintf(args, sizeof(args), "lost lost2 %d 300", (int)syscall(SYS_gettid));
	check(args);
	for (int i = 0; i < 2; i++) {
		(void)!write(w[i].go[1], "x", 1);
		pthread_join(th[i], NULL);
	}
}

/* trace_threads limits trace_pipe_json as it does trace_pipe. */
Test(dynamic_debug_trace_json, limited_to_threads)
{
	char *t = NULL, list[32];
	size_t n;

	dynamic_debug_must_write("func js_seq +T");
	js_seq(7);
	snprintf(list, sizeof(list), "%d", (int)getpid() + 1000000);
	cr_assert_eq(kk_control_write("dynamic_debug/trace_threads", list, strlen(list), NULL), 0);
	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_json", &t, &n), 0);
	cr_assert(!t || !strstr(t, "jseq 7"), "%s", t);
	free(t);
	js_seq(8);
	snprintf(list, sizeof(list), "%d", (int)syscall(SYS_gettid));
	cr_assert_eq(kk_control_write("dynamic_debug/trace_threads", list, strlen(list), NULL), 0);
	read_json("mine");
	check("valid mine");
}

/* The events of one read: each thread's "jseq N" must be the next it wrote. */
static size_t take_read(const char *t, const struct wrapper *w, unsigned long *next,
			unsigned long long *last_mono)
{
	size_t events = 0;

	for (const char *l = t; l && *l; l = strchr(l, '\n') + 1) {
		unsigned long long ts;
		unsigned long v;
		int tid, k;
		const char *m = strstr(l, "\"message\":\"jseq ");

		cr_assert(strchr(l, '\n'), "a line cut: %.80s", l);
		cr_assert(!strncmp(l, "{\"type\":\"event\"", 15), "not an event (lost?): %.120s", l);
		/* (mono: ts is mono plus the wall clock's offset as each read saw it) */
		cr_assert(sscanf(l, "{\"type\":\"event\",\"ts\":%*u,\"mono\":%llu,", &ts) == 1 && m,
			  "%.120s", l);
		cr_assert(sscanf(strstr(l, "\"tid\":"), "\"tid\":%d", &tid) == 1);
		cr_assert(sscanf(m, "\"message\":\"jseq %lu", &v) == 1);
		/* each read converts the stamps anew: across reads, allow its rounding (1 ms is
		 * far less than the 10 ms between the two threads' records) */
		cr_assert_geq(ts + (events ? 0 : 1000000ull), *last_mono,
			      "out of time order (%llu before): %.120s", *last_mono, l);
		*last_mono = ts;
		for (k = 0; k < 2 && w[k].tid != tid; k++)
			;
		cr_assert_lt(k, 2, "a record of another thread: %.120s", l);
		cr_assert_eq(v, next[k], "thread %d: jseq %lu, want %lu (read twice or skipped)", tid,
			     v, next[k]);
		next[k]++;
		events++;
	}
	return events;
}

/*
 * A read sends at most 128 KiB of JSON, the oldest records first, and
 * consumes only what it sent: reads one after another give every record
 * once, each thread's in order, all in time order, none lost.
 */
Test(dynamic_debug_trace_json, bounded_reads_consume_only_what_they_send)
{
	struct wrapper w[2] = { { .n = 6000 }, { .n = 6000 } };
	unsigned long next[2] = { 0, 0 };
	unsigned long long last_mono = 0;
	pthread_t th[2];
	size_t reads = 0, events;
	char c;

	dynamic_debug_must_write("func js_seq +T");
	for (int i = 0; i < 2; i++) {
		int64_t t0 = clock_ns(CLOCK_MONOTONIC);

		/* 10 ms between the threads' records: shown before the first's, the second's would
		 * be out of order by far more than a clock's rounding */
		while (i && clock_ns(CLOCK_MONOTONIC) - t0 < 10000000)
			;
		cr_assert_eq(pipe(w[i].go), 0);
		cr_assert_eq(pipe(w[i].done), 0);
		pthread_create(&th[i], NULL, wrap_thread, &w[i]);
		cr_assert_eq(read(w[i].done[0], &c, 1), 1);
	}
	do {
		char *t = NULL;
		size_t n = 0;

		cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_json", &t, &n), 0);
		cr_assert_leq(n, 128u << 10, "read %zu: %zu bytes", reads, n);
		events = take_read(t, w, next, &last_mono);
		free(t);
		reads++;
	} while (events && reads < 1000);
	cr_assert_eq(next[0], 6000, "thread 1: %lu of 6000", next[0]);
	cr_assert_eq(next[1], 6000, "thread 2: %lu of 6000", next[1]);
	cr_assert_gt(reads, 2, "%zu reads: not bounded", reads);
	for (int i = 0; i < 2; i++) {
		(void)!write(w[i].go[1], "x", 1);
		pthread_join(th[i], NULL);
	}
}
