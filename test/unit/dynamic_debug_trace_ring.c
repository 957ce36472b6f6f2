// SPDX-License-Identifier: MIT
/*
 * The trace ring's numbers and limits (issue 39): the header's counts add
 * up also while a thread writes, a clear resets them, text time stamps have
 * nanoseconds, the default ring holds a burst of a busy server, and the
 * readers can be limited to threads (dynamic_debug/trace_threads); printed
 * lines carry printk's time stamp when dynamic_debug/print_time is on, and
 * dynamic_debug/trace_clock shows the text in wall-clock time.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <regex.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

__attribute__((noinline)) void rg_seq(int tag, unsigned long i)
{
	pr_debug("rseq %d %lu\n", tag, i);
}

static char *read_file(const char *name)
{
	char *t = NULL;
	size_t n;

	cr_assert_eq(kk_control_read(name, &t, &n), 0, "%s", name);
	return t ? t : strdup("");
}

/* The header's numbers: in buffer, written, overwritten. */
static void header(const char *t, unsigned long *shown, unsigned long *written,
		   unsigned long *over)
{
	const char *h = strstr(t, "entries-in-buffer/entries-written: ");

	cr_assert(h && sscanf(h, "entries-in-buffer/entries-written: %lu/%lu", shown, written) == 2,
		  "%.300s", t);
	h = strstr(t, "# lost: overwritten ");
	cr_assert(h && sscanf(h, "# lost: overwritten %lu", over) == 1, "%.300s", t);
}

/* Lines of @t that contain @needle. */
static long count_lines(const char *t, const char *needle)
{
	long n = 0;

	for (const char *p = t; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* ---- the numbers ---------------------------------------------------------------- */

static atomic_int stop_writing;
static atomic_ulong writes_done;

static void *busy_writer(void *arg)
{
	(void)arg;
	for (unsigned long i = 0; !atomic_load(&stop_writing); i++) {
		rg_seq(1, i);
		atomic_store(&writes_done, i + 1);
	}
	return NULL;
}

/*
 * in buffer + overwritten == written in every read, while a thread keeps
 * wrapping a 4 KiB ring.  The old header loaded the counts before it copied
 * the ring, so the records written meanwhile made the sum wrong.
 */
Test(dynamic_debug_trace_ring, counts_add_up_while_a_thread_writes)
{
	unsigned long shown, written, over, bad = 0, last_bad[3] = { 0 };
	pthread_t th;

	cr_assert_eq(kk_dyndbg_trace_set_size(4096), 0);
	dynamic_debug_must_write("func rg_seq +T");
	pthread_create(&th, NULL, busy_writer, NULL);
	for (int i = 0; i < 300; i++) {
		unsigned long before = atomic_load(&writes_done);
		char *t;

		/* each read overlaps the writer: wait for it to write again */
		while (atomic_load(&writes_done) < before + 50)
			sched_yield();
		if (i == 150)	/* the rule holds from a clear too */
			kk_dyndbg_trace_clear();
		t = read_file("dynamic_debug/trace");
		header(t, &shown, &written, &over);
		if (shown + over != written) {
			bad++;
			last_bad[0] = shown;
			last_bad[1] = over;
			last_bad[2] = written;
		}
		free(t);
	}
	atomic_store(&stop_writing, 1);
	pthread_join(th, NULL);
	cr_assert_eq(bad, 0, "%lu of 300 reads did not add up, e.g. %lu in buffer + %lu overwritten "
		     "!= %lu written", bad, last_bad[0], last_bad[1], last_bad[2]);
}

/* ftrace's "echo > trace" clears the counts with the records; so does ours. */
Test(dynamic_debug_trace_ring, clearing_resets_the_counts)
{
	unsigned long shown, written, over;
	char *t;

	cr_assert_eq(kk_dyndbg_trace_set_size(4096), 0);
	dynamic_debug_must_write("func rg_seq +T");
	for (unsigned long i = 0; i < 1000; i++)
		rg_seq(2, i);
	t = read_file("dynamic_debug/trace");
	header(t, &shown, &written, &over);
	cr_assert(written == 1000 && over > 0 && shown + over == written, "%.300s", t);
	free(t);
	cr_assert_eq(control_file_write("dynamic_debug/trace", "", NULL), 0);
	t = read_file("dynamic_debug/trace");
	header(t, &shown, &written, &over);
	cr_assert(shown == 0 && written == 0 && over == 0, "not reset by the clear: %.300s", t);
	free(t);
	for (unsigned long i = 0; i < 3; i++)
		rg_seq(2, 1000 + i);
	t = read_file("dynamic_debug/trace");
	header(t, &shown, &written, &over);
	cr_assert(shown == 3 && written == 3 && over == 0, "%.300s", t);
	cr_assert_eq(count_lines(t, "rseq 2 "), 3, "%s", t);
	free(t);
}

/* "  TID [SEC.NNNNNNNNN] ...": nanoseconds, as LTTng gives them. */
Test(dynamic_debug_trace_ring, text_time_stamps_have_nanoseconds)
{
	regex_t re;
	regmatch_t m;
	char *t;

	dynamic_debug_must_write("func rg_seq +T");
	rg_seq(3, 0);
	t = read_file("dynamic_debug/trace");
	cr_assert_eq(regcomp(&re, "^ *[0-9]+ \\[ *[0-9]+\\.[0-9]{9}\\] rseq 3 0$",
			     REG_EXTENDED | REG_NEWLINE), 0);
	cr_assert_eq(regexec(&re, t, 1, &m, 0), 0, "no [SEC.NNNNNNNNN] line: %s", t);
	regfree(&re);
	free(t);
}

/*
 * The default ring holds a busy server's burst: Valkey wrote 100k records a
 * second and 64 KiB held 1,100 of them (10 ms).  10,000 (100 ms) must fit.
 */
Test(dynamic_debug_trace_ring, default_ring_holds_a_burst)
{
	unsigned long shown, written, over;
	char *t;

	dynamic_debug_must_write("func rg_seq +T");
	for (unsigned long i = 0; i < 10000; i++)
		rg_seq(4, i);
	t = read_file("dynamic_debug/trace");
	header(t, &shown, &written, &over);
	cr_assert(shown == 10000 && over == 0, "%lu in a %zu-byte ring, %lu overwritten", shown,
		  kk_dyndbg_trace_get_size(), over);
	free(t);
}

/* ---- threads -------------------------------------------------------------------- */

struct named {
	const char *name;
	int tag;
	atomic_int tid;
	int go[2], done[2];
};

/* Names itself, records one line, and waits to be released (so its tid stays its own). */
static void *named_thread(void *arg)
{
	struct named *n = arg;
	char c;

	pthread_setname_np(pthread_self(), n->name);
	atomic_store(&n->tid, (int)syscall(SYS_gettid));
	rg_seq(n->tag, 0);
	(void)!write(n->done[1], "x", 1);
	(void)!read(n->go[0], &c, 1);
	return NULL;
}

static void start_named(struct named *n, pthread_t *th)
{
	char c;

	cr_assert_eq(pipe(n->go), 0);
	cr_assert_eq(pipe(n->done), 0);
	pthread_create(th, NULL, named_thread, n);
	cr_assert_eq(read(n->done[0], &c, 1), 1);
}

static void stop_named(struct named *n, pthread_t th)
{
	(void)!write(n->go[1], "x", 1);
	pthread_join(th, NULL);
	close(n->go[0]);
	close(n->go[1]);
	close(n->done[0]);
	close(n->done[1]);
}

Test(dynamic_debug_trace_ring, trace_threads_limits_the_readers)
{
	struct named a = { .name = "tt-alpha", .tag = 50 }, b = { .name = "tt-beta", .tag = 51 };
	pthread_t ta, tb;
	char *t, *r, list[64];

	dynamic_debug_must_write("func rg_seq +T");
	start_named(&a, &ta);
	start_named(&b, &tb);
	rg_seq(52, 0);	/* this thread */
	t = read_file("dynamic_debug/trace_threads");
	cr_assert_str_eq(t, "", "empty = every thread");
	free(t);
	/* by name */
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", "tt-alpha\n", NULL), 0);
	t = read_file("dynamic_debug/trace");
	cr_assert(strstr(t, "rseq 50 0\n") && !strstr(t, "rseq 51") && !strstr(t, "rseq 52"),
		  "%s", t);
	free(t);
	/* by tid, and a glob, several at once (commas or lines) */
	snprintf(list, sizeof(list), "%d, tt-b*", (int)syscall(SYS_gettid));
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", list, NULL), 0);
	t = read_file("dynamic_debug/trace_threads");
	snprintf(list, sizeof(list), "%d\ntt-b*\n", (int)syscall(SYS_gettid));
	cr_assert_str_eq(t, list);
	free(t);
	t = read_file("dynamic_debug/trace_pipe");
	cr_assert(!strstr(t, "rseq 50") && strstr(t, "rseq 51 0\n") && strstr(t, "rseq 52 0\n"),
		  "%s", t);
	free(t);
	/* a bad list is refused in one line and changes nothing */
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", "12, a-name-longer-than-15", &r),
		     -EINVAL);
	cr_assert(strstr(r, "longer than 15") && strchr(r, '\n') == r + strlen(r) - 1, "%s", r);
	free(r);
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", "0", NULL), -EINVAL);
	t = read_file("dynamic_debug/trace_threads");
	cr_assert_str_eq(t, list);
	free(t);
	/* empty again: all */
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", "", NULL), 0);
	t = read_file("dynamic_debug/trace");
	cr_assert(strstr(t, "rseq 50 0\n") && strstr(t, "rseq 51 0\n") && strstr(t, "rseq 52 0\n"),
		  "%s", t);
	free(t);
	stop_named(&a, ta);
	stop_named(&b, tb);
}

/* The header counts the shown threads' rings only, and still adds up. */
Test(dynamic_debug_trace_ring, trace_threads_header_counts_the_shown_threads)
{
	struct named a = { .name = "tt-gamma", .tag = 53 };
	unsigned long shown, written, over;
	pthread_t ta;
	char *t;

	dynamic_debug_must_write("func rg_seq +T");
	start_named(&a, &ta);
	for (unsigned long i = 0; i < 5; i++)
		rg_seq(54, i);
	cr_assert_eq(control_file_write("dynamic_debug/trace_threads", "tt-gamma", NULL), 0);
	t = read_file("dynamic_debug/trace");
	header(t, &shown, &written, &over);
	cr_assert(shown == 1 && written == 1 && over == 0, "%.300s", t);
	free(t);
	stop_named(&a, ta);
}

/* ---- printed lines: printk's time ------------------------------------------------ */

static char printed[1024];

static void capture(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)arg;
	snprintf(printed, sizeof(printed), "%.*s", (int)len, msg);
}

static bool matches(const char *s, const char *pattern)
{
	regex_t re;
	bool ok;

	cr_assert_eq(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0, "%s", pattern);
	ok = regexec(&re, s, 0, NULL, 0) == 0;
	regfree(&re);
	return ok;
}

/* Like printk.time=1: "[    5.123456] " before the line, one switch for all sites. */
Test(dynamic_debug_trace_ring, print_time_stamps_printed_lines_as_printk)
{
	char *t, *r;

	kk_dyndbg_set_sink(capture, NULL);
	dynamic_debug_must_write("func rg_seq +p");
	t = read_file("dynamic_debug/print_time");
	cr_assert_str_eq(t, "0\n", "off by default, as printk.time");
	free(t);
	rg_seq(60, 0);
	cr_assert_str_eq(printed, "rseq 60 0\n");
	cr_assert_eq(control_file_write("dynamic_debug/print_time", "1\n", NULL), 0);
	rg_seq(60, 1);
	cr_assert(matches(printed, "^\\[ *[0-9]+\\.[0-9]{6}\\] rseq 60 1\n$"), "%s", printed);
	/* before the site's decorations, as printk's time is before the message */
	dynamic_debug_must_write("func rg_seq +tf");
	rg_seq(60, 2);
	cr_assert(matches(printed, "^\\[ *[0-9]+\\.[0-9]{6}\\] \\[[0-9]+\\] rg_seq: rseq 60 2\n$"),
		  "%s", printed);
	cr_assert_eq(control_file_write("dynamic_debug/print_time", "yes", &r), -EINVAL);
	cr_assert_str_eq(r, "expected 1 or 0\n");
	free(r);
	t = read_file("dynamic_debug/print_time");
	cr_assert_str_eq(t, "1\n", "a refused write changed it");
	free(t);
	cr_assert_eq(control_file_write("dynamic_debug/print_time", "0", NULL), 0);
	rg_seq(60, 3);
	cr_assert(matches(printed, "^\\[[0-9]+\\] rg_seq: rseq 60 3\n$"), "%s", printed);
	kk_dyndbg_set_sink(NULL, NULL);
}

/* ---- trace_clock: the text's clock, as ftrace's file chooses it --------------------- */

/* The seconds of the first record line of @t ("  TID [SEC.NNNNNNNNN] ..."). */
static long long first_seconds(const char *t)
{
	const char *p = t;
	long long sec = -1;

	while (*p == '#')	/* the header */
		p = strchr(p, '\n') + 1;
	p = strchr(p, '[');
	cr_assert(p && sscanf(p + 1, "%lld.", &sec) == 1, "%s", t);
	return sec;
}

Test(dynamic_debug_trace_ring, trace_clock_shows_wall_clock_time_on_request)
{
	struct timespec mono, real;
	char *t, *r;

	dynamic_debug_must_write("func rg_seq +T");
	rg_seq(70, 0);
	t = read_file("dynamic_debug/trace_clock");
	cr_assert_str_eq(t, "[mono] realtime\n");
	free(t);
	clock_gettime(CLOCK_MONOTONIC, &mono);
	t = read_file("dynamic_debug/trace");
	cr_assert_leq(first_seconds(t), (long long)mono.tv_sec, "%s", t);
	free(t);
	cr_assert_eq(control_file_write("dynamic_debug/trace_clock", "realtime\n", NULL), 0);
	t = read_file("dynamic_debug/trace_clock");
	cr_assert_str_eq(t, "mono [realtime]\n");
	free(t);
	/* the same record, now in UTC seconds: the host's clock, not the time since boot */
	clock_gettime(CLOCK_REALTIME, &real);
	t = read_file("dynamic_debug/trace");
	cr_assert(llabs(first_seconds(t) - (long long)real.tv_sec) < 600, "%s", t);
	cr_assert(strstr(t, "rseq 70 0\n"), "a change of clock cleared the trace: %s", t);
	free(t);
	cr_assert_eq(control_file_write("dynamic_debug/trace_clock", "local", &r), -EINVAL);
	cr_assert_str_eq(r, "expected mono or realtime\n");
	free(r);
	t = read_file("dynamic_debug/trace_clock");
	cr_assert_str_eq(t, "mono [realtime]\n", "a refused write changed the clock");
	free(t);
}
