// SPDX-License-Identifier: MIT
/*
 * The trace ring (the T flag): the flag in queries and the listing, binary
 * records formatted when read, %s copied at the call, order per thread,
 * wrap-around, concurrent writers with a reader, signal handlers, fork, the
 * panic dump, and the control files.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/panic.h>
#include "dynamic_debug_util.h"
#include "kktest.h"
#include "panic_kid.h"

__attribute__((noinline)) void tr_seq(int tag, unsigned long i)
{
	pr_debug("seq %d %lu\n", tag, i);
}

__attribute__((noinline)) void tr_mixed(int d, long long ll, unsigned char hh, size_t z, double f,
					const char *s, const void *p, char c, int prec)
{
	pr_debug("d=%d ll=%lld hh=%hhu z=%zu f=%.3f s=%s p=%p c=%c pct=%% w=[%*d] ps=[%.*s] "
		 "x=%#x e=%e\n", d, ll, hh, z, f, s, p, c, 6, d, prec, s, (unsigned)d, f);
}

__attribute__((noinline)) void tr_str(const char *s)
{
	pr_debug("str <%s>\n", s);
}

__attribute__((noinline)) void tr_unsupported(int v)
{
	/* wide strings are not recorded: the rest is shown as written */
	pr_debug("before %d then %ls\n", v, L"wide");
}

static void no_desc_fn(int v)
{
	(void)v;
}

__attribute__((noinline)) void tr_nodesc(int v)
{
	_dynamic_func_call_no_desc("tr nodesc %d", no_desc_fn, v);
}

static char *pipe_text(void)
{
	char *t = NULL;
	size_t n;

	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe", &t, &n), 0);
	return t ? t : strdup("");
}

/* The message of a trace line: after "] ". */
static const char *msg_of(const char *line)
{
	const char *p = strstr(line, "] ");

	return p ? p + 2 : NULL;
}

/* ---- the flag ---------------------------------------------------------------- */

Test(dynamic_debug_trace, flag_parses_lists_and_switches_the_site)
{
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "_");
	dynamic_debug_must_write("func tr_seq +T");
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "T");
	dynamic_debug_must_write("func tr_seq +pmf");
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "pTmf");
	dynamic_debug_must_write("func tr_seq -p");
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "Tmf");
	/* a listing line written back keeps the flag */
	dynamic_debug_must_write("func tr_seq =T");
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "T");
	tr_seq(1, 1);		/* T alone switches the site on: it records */
	char *t = dynamic_debug_trace_text();

	cr_assert(strstr(t, "seq 1 1\n"), "%s", t);
	free(t);
	dynamic_debug_must_write("func tr_seq -T");
	cr_assert_str_eq(dynamic_debug_flags_of("tr_seq"), "_");
	kk_dyndbg_trace_clear();
	tr_seq(1, 2);		/* off again: nothing recorded */
	t = dynamic_debug_trace_text();
	cr_assert_null(strstr(t, "seq 1 2"), "%s", t);
	free(t);
}

Test(dynamic_debug_trace, flag_refused_where_nothing_would_record)
{
	char *r = NULL;

	/* a _no_desc site calls its own function, not __dynamic_pr_debug() */
	cr_assert_eq(dynamic_debug_write("func tr_nodesc +T", &r), -EOPNOTSUPP, "%s", r);
	cr_assert(strstr(r, "'T'"), "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("tr_nodesc"), "_");
	dynamic_debug_must_write("func tr_nodesc +p");	/* p stays allowed there */
	cr_assert_str_eq(dynamic_debug_flags_of("tr_nodesc"), "p");
}

Test(dynamic_debug_trace, flag_is_inherited_by_exec)
{
	int p[2], st;
	char buf[8192];
	ssize_t n, got = 0;
	pid_t pid;

	dynamic_debug_must_write("func tr_seq +T");
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { "env", NULL };

		dup2(p[1], 1);
		execv("/usr/bin/env", argv);	/* the library adds KK_DYNDBG_INHERIT */
		_exit(127);
	}
	close(p[1]);
	while ((n = read(p[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	const char *e = strstr(buf, "KK_DYNDBG_INHERIT=");

	cr_assert(e, "%s", buf);
	cr_assert(strstr(e, "func tr_seq +T"), "%.300s", e);
}

static char sunk[4096];
static size_t sunk_len;

static void sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)arg;
	if (sunk_len + len < sizeof(sunk)) {
		memcpy(sunk + sunk_len, msg, len);
		sunk_len += len;
	}
}

Test(dynamic_debug_trace, p_prints_T_records_both_do_both)
{
	char *t;

	kk_dyndbg_set_sink(sink, NULL);
	dynamic_debug_must_write("func tr_seq +T");
	tr_seq(2, 1);
	cr_assert_eq(sunk_len, 0, "T alone printed: %s", sunk);
	dynamic_debug_must_write("func tr_seq +p");
	tr_seq(2, 2);
	cr_assert(strstr(sunk, "seq 2 2\n"), "p+T did not print: %s", sunk);
	cr_assert_null(strstr(sunk, "seq 2 1"), "%s", sunk);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "seq 2 1\n") && strstr(t, "seq 2 2\n"), "%s", t);
	free(t);
	dynamic_debug_must_write("func tr_seq -T");
	tr_seq(2, 3);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(sunk, "seq 2 3\n"), "%s", sunk);
	cr_assert_null(strstr(t, "seq 2 3"), "p alone recorded: %s", t);
	free(t);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_trace, records_of_an_unloaded_object_are_not_formatted)
{
	void *h = dlopen(kkt_build_path("test/lib/libdynamic_debug_mod.so"), RTLD_NOW | RTLD_LOCAL);
	char *t;

	cr_assert_not_null(h, "%s", dlerror());
	dynamic_debug_must_write("module dynamic_debug_mod +T");
	dynamic_debug_must_write("func tr_seq +T");
	((void (*)(int))dlsym(h, "ddm_plain"))(5);
	tr_seq(70, 0);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "ddm plain one 5"), "%s", t);
	free(t);
	/* its format and site are gone with it: the record is counted, not read */
	dlclose(h);
	t = dynamic_debug_trace_text();
	cr_assert_null(strstr(t, "ddm plain"), "%s", t);
	cr_assert(strstr(t, "seq 70 0\n"), "%s", t);
	cr_assert(strstr(t, "# 3 records of unloaded objects not shown"), "%s", t);
	free(t);
}

/* ---- records ----------------------------------------------------------------- */

Test(dynamic_debug_trace, arguments_are_formatted_as_printf_would)
{
	char want[512], *t, *line;
	const char *s = "hello world";
	void *p = (void *)(uintptr_t)0x1234abcd;

	dynamic_debug_must_write("func tr_mixed +T");
	tr_mixed(-42, -1234567890123LL, 200, (size_t)77, 3.14159, s, p, 'Q', 5);
	tr_mixed(7, 0, 0, 0, -0.5, NULL, NULL, 'z', 0);
	t = dynamic_debug_trace_text();
	snprintf(want, sizeof(want), "d=%d ll=%lld hh=%hhu z=%zu f=%.3f s=%s p=%p c=%c pct=%% w=[%*d] "
		 "ps=[%.*s] x=%#x e=%e\n", -42, -1234567890123LL, (unsigned char)200, (size_t)77,
		 3.14159, s, p, 'Q', 6, -42, 5, s, (unsigned)-42, 3.14159);
	line = strstr(t, "d=-42");
	cr_assert(line, "%s", t);
	cr_assert_eq(strncmp(line, want, strlen(want)), 0, "got  %.*s\nwant %s", (int)strlen(want),
		     line, want);
	snprintf(want, sizeof(want), "d=%d ll=%lld hh=%hhu z=%zu f=%.3f s=%s p=%p c=%c pct=%% w=[%*d] "
		 "ps=[%.*s] x=%#x e=%e\n", 7, 0LL, (unsigned char)0, (size_t)0, -0.5, "(null)",
		 (void *)NULL, 'z', 6, 7, 0, "(null)", 7u, -0.5);
	line = strstr(t, "d=7 ");
	cr_assert(line, "%s", t);
	cr_assert_eq(strncmp(line, want, strlen(want)), 0, "got  %.*s\nwant %s", (int)strlen(want),
		     line, want);
	free(t);
}

__attribute__((noinline)) void tr_many(int v)
{
	/* more conversions than a cached packing program holds (24) */
	pr_debug("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d "
		 "%d %d %d %.3s|\n", v, v + 1, v + 2, v + 3, v + 4, v + 5, v + 6, v + 7, v + 8, v + 9,
		 v + 10, v + 11, v + 12, v + 13, v + 14, v + 15, v + 16, v + 17, v + 18, v + 19,
		 v + 20, v + 21, v + 22, v + 23, v + 24, v + 25, v + 26, v + 27, v + 28, "abcdef");
}

Test(dynamic_debug_trace, long_formats_are_packed_whole)
{
	char *t;

	dynamic_debug_must_write("func tr_many +T");
	tr_many(100);
	tr_many(200);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "] 100 101 102 103 104 105 106 107 108 109 110 111 112 113 114 115 116 117 "
			 "118 119 120 121 122 123 124 125 126 127 128 abc|\n"), "%s", t);
	cr_assert(strstr(t, "] 200 201 202 "), "%s", t);
	free(t);
}

Test(dynamic_debug_trace, unsupported_conversions_show_the_rest_of_the_format)
{
	char *t;

	dynamic_debug_must_write("func tr_unsupported +T");
	tr_unsupported(5);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "before 5 then %ls\n"), "%s", t);
	free(t);
}

Test(dynamic_debug_trace, strings_are_copied_at_the_call)
{
	char buf[32], big[1000], *t;

	dynamic_debug_must_write("func tr_str +T");
	strcpy(buf, "original");
	tr_str(buf);
	strcpy(buf, "CHANGED!");	/* after the call: the record keeps the old text */
	memset(big, 'y', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	tr_str(big);
	memset(big, 'n', sizeof(big) - 1);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "str <original>\n"), "%s", t);
	cr_assert_null(strstr(t, "CHANGED"), "%s", t);
	/* a long string is bounded (256 bytes), not dereferenced later */
	cr_assert(strstr(t, "str <yyyyyyyy"), "%s", t);
	cr_assert_null(strstr(t, "nnnn"), "%s", t);
	char *y = strstr(t, "str <y");

	cr_assert_eq(strspn(y + 5, "y"), 256, "%.300s", y);
	free(t);
}

/* Check that the "seq TAG i" lines of @t are i = first, first+1, ...: returns the count. */
static long check_seq(const char *t, int tag, long first)
{
	char needle[32];
	long n = 0, want = first;
	int len = snprintf(needle, sizeof(needle), "seq %d ", tag);

	for (const char *p = t; (p = strstr(p, needle)); p += len) {
		long v = strtol(p + len, NULL, 10);

		if (want >= 0)
			cr_assert_eq(v, want, "tag %d: %ld after %ld", tag, v, want - 1);
		want = v + 1;
		n++;
	}
	return n;
}

Test(dynamic_debug_trace, one_thread_reads_back_in_order)
{
	char *t;

	dynamic_debug_must_write("func tr_seq +T");
	for (unsigned long i = 0; i < 500; i++)
		tr_seq(3, i);
	t = dynamic_debug_trace_text();
	cr_assert_eq(check_seq(t, 3, 0), 500, "%s", t);
	cr_assert(strstr(t, "entries-in-buffer/entries-written: 500/500"), "%.300s", t);
	free(t);
}

/*
 * A record's time is the same in every read.  A stamp is the CPU's counter,
 * converted to ns by each read; a read that estimated the counter's rate
 * anew gave the same record another time (ns apart, or a preemption's
 * length apart), and a bound one reply said could cross the next reply's
 * records.  Records written between reads move the conversion forward only
 * (while the record is newer than the oldest knot kept: 20 reads add 20).
 */
Test(dynamic_debug_trace, a_record_has_the_same_time_in_every_read)
{
	char *first, *t;

	dynamic_debug_must_write("func tr_seq +T");
	for (unsigned long i = 0; i < 200; i++)
		tr_seq(4, i);
	first = dynamic_debug_trace_text();
	cr_assert_eq(check_seq(first, 4, 0), 200, "%s", first);
	for (unsigned long i = 0; i < 20; i++) {
		tr_seq(5, i);	/* a newer record: the conversion moves on */
		t = dynamic_debug_trace_text();
		/* every line of the first read, time and all, is in this one */
		for (const char *l = strstr(first, "seq 4 "); l; l = strstr(l + 1, "seq 4 ")) {
			const char *bol = l;
			char line[128];

			while (bol > first && bol[-1] != '\n')
				bol--;
			snprintf(line, sizeof(line), "%.*s", (int)(strchr(l, '\n') - bol), bol);
			cr_assert(strstr(t, line), "read %lu: \"%s\" changed:\n%.2000s", i + 2, line,
				  t);
		}
		free(t);
	}
	free(first);
}

/*
 * A trace_pipe read sends at most 128 KiB, as a trace_pipe_json read does,
 * and consumes only the lines it sent: the rest comes, in order and whole,
 * with the next reads.  (A read sent all of the rings at once: 16 MiB of
 * text from one thread's full ring, past the endpoint's deadline.)
 */
Test(dynamic_debug_trace, trace_pipe_reads_are_bounded_and_consume_only_what_they_send)
{
	size_t reads = 0, n;
	long got = 0;
	char *t;

	dynamic_debug_must_write("func tr_seq +T");
	for (unsigned long i = 0; i < 15000; i++)	/* 840 KiB of a 1 MiB ring, 500 KiB of text */
		tr_seq(7, i);
	do {
		t = NULL;
		n = 0;
		cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe", &t, &n), 0);
		cr_assert_leq(n, 128u << 10, "read %zu: %zu bytes", reads, n);
		got += check_seq(t, 7, got);
		free(t);
		reads++;
	} while (n && reads < 1000);
	cr_assert_eq(got, 15000, "%ld of 15000 lines in %zu reads", got, reads);
	cr_assert_gt(reads, 3, "%zu reads: not bounded", reads);
}

Test(dynamic_debug_trace, wraps_around_keeping_the_newest)
{
	char *t, *r;
	long n;

	cr_assert_eq(kk_dyndbg_trace_set_size(4096), 0);
	dynamic_debug_must_write("func tr_seq +T");
	for (unsigned long i = 0; i < 5000; i++)
		tr_seq(4, i);
	t = dynamic_debug_trace_text();
	/* the newest, consecutive, ending with the last one */
	r = strstr(t, "seq 4 4999\n");
	cr_assert(r, "%s", t);
	const char *first = strstr(t, "seq 4 ");
	long v0 = strtol(first + 6, NULL, 10);

	n = check_seq(t, 4, v0);
	cr_assert(v0 > 0 && n == 5000 - v0, "first %ld, %ld lines", v0, n);
	cr_assert(n > 20 && n < 200, "%ld records in 4 KiB", n);
	cr_assert(strstr(t, "# lost: overwritten "), "%.300s", t);
	free(t);
}

/*
 * The header's count of lost records: every record written is either in
 * the buffer or counted as overwritten, once (one thread, one ring, no
 * clear).  A write makes room for the largest record it could be, so one
 * write may overwrite several small ones, and the padding at the ring's end
 * is no record.
 */
Test(dynamic_debug_trace, every_record_written_is_shown_or_counted_overwritten)
{
	unsigned long shown, written, over;
	const char *h;
	char *t;

	cr_assert_eq(kk_dyndbg_trace_set_size(4096), 0);
	dynamic_debug_must_write("func tr_seq +T");
	for (unsigned long i = 0; i < 5000; i++)
		tr_seq(5, i);
	t = dynamic_debug_trace_text();
	h = strstr(t, "entries-in-buffer/entries-written: ");
	cr_assert(h && sscanf(h, "entries-in-buffer/entries-written: %lu/%lu", &shown, &written) == 2,
		  "%.300s", t);
	h = strstr(t, "# lost: overwritten ");
	cr_assert(h && sscanf(h, "# lost: overwritten %lu", &over) == 1, "%.300s", t);
	cr_assert_eq(written, 5000, "%.300s", t);
	cr_assert_eq(check_seq(t, 5, 5000 - (long)shown), (long)shown, "%.300s", t);
	cr_expect_eq(shown + over, written, "%lu shown and %lu overwritten of %lu written", shown, over,
		     written);
	free(t);
}

/* ---- threads ----------------------------------------------------------------- */

#define NW 2
#define PER_WRITER 20000
static atomic_int writers_done, writers_go, reads_done;
static pthread_barrier_t writers_start;

static void *writer(void *arg)
{
	int tag = (int)(intptr_t)arg;

	pthread_barrier_wait(&writers_start);
	for (unsigned long i = 0; i < PER_WRITER; i++) {
		tr_seq(tag, i);
		/* halfway, until the reader has read once: it reads while we write */
		while (i == PER_WRITER / 2 && atomic_load(&reads_done) < 2)
			sched_yield();
	}
	atomic_fetch_add(&writers_done, 1);
	/* stay alive: a new thread would take the ring of an exited one */
	while (!atomic_load(&writers_go))
		sched_yield();
	return NULL;
}

/*
 * Every line of a trace_pipe read: "TID [S.US] seq TAG I", each thread's
 * numbers rising; with @exact, rising by one: none missing.
 */
static void check_threads(const char *t, long *last, bool exact)
{
	char *copy = strdup(t), *save = NULL;

	for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		int tag;
		long v;
		const char *m = msg_of(l);

		cr_assert(m && sscanf(m, "seq %d %ld", &tag, &v) == 2, "bad line <%s>", l);
		cr_assert(tag >= 10 && tag < 10 + NW, "<%s>", l);
		if (exact)
			cr_assert_eq(v, last[tag - 10] + 1, "tag %d: %ld after %ld", tag, v,
				     last[tag - 10]);
		else
			cr_assert_gt(v, last[tag - 10], "tag %d: %ld after %ld", tag, v,
				     last[tag - 10]);
		last[tag - 10] = v;
	}
	free(copy);
}

Test(dynamic_debug_trace, concurrent_writers_and_a_consuming_reader)
{
	pthread_t th[NW];
	long last[NW];
	char *t;
	int reads = 0;

	for (int i = 0; i < NW; i++)
		last[i] = -1;
	cr_assert_eq(kk_dyndbg_trace_set_size(16384), 0);
	dynamic_debug_must_write("func tr_seq +T");
	pthread_barrier_init(&writers_start, NULL, NW);
	for (int i = 0; i < NW; i++)
		pthread_create(&th[i], NULL, writer, (void *)(intptr_t)(10 + i));
	/* read while they write: every line whole, each thread's numbers rising */
	while (atomic_load(&writers_done) < NW) {
		t = pipe_text();
		check_threads(t, last, false);
		free(t);
		reads++;
		atomic_store(&reads_done, reads);
	}
	t = pipe_text();
	check_threads(t, last, false);
	free(t);
	atomic_store(&writers_go, 1);
	for (int i = 0; i < NW; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NW; i++)	/* the last record of each writer is never lost */
		cr_assert_eq(last[i], PER_WRITER - 1, "writer %d ended at %ld", i, last[i]);
	/* consumed: nothing again */
	t = pipe_text();
	cr_assert_str_eq(t, "");
	free(t);
	cr_assert_gt(reads, 1);
}

/*
 * Nothing is overwritten (16 MiB rings, checked in the header), so every
 * record written must come out of trace_pipe exactly once: each thread's
 * numbers are 0, 1, 2, ... with none missing, read while they are written.
 */
Test(dynamic_debug_trace, trace_pipe_loses_nothing_that_was_not_overwritten)
{
	pthread_t th[NW];
	long last[NW];
	bool empty;
	char *t;

	for (int i = 0; i < NW; i++)
		last[i] = -1;
	cr_assert_eq(kk_dyndbg_trace_set_size(16384u << 10), 0);
	dynamic_debug_must_write("func tr_seq +T");
	pthread_barrier_init(&writers_start, NULL, NW);
	for (int i = 0; i < NW; i++)
		pthread_create(&th[i], NULL, writer, (void *)(intptr_t)(10 + i));
	while (atomic_load(&writers_done) < NW) {
		t = pipe_text();
		check_threads(t, last, true);
		free(t);
		atomic_fetch_add(&reads_done, 1);
	}
	do {	/* the rest: a read sends at most 128 KiB */
		t = pipe_text();
		check_threads(t, last, true);
		empty = !*t;
		free(t);
	} while (!empty);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "# lost: overwritten 0, nested 0, no buffer 0\n"), "%.300s", t);
	free(t);
	atomic_store(&writers_go, 1);
	for (int i = 0; i < NW; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < NW; i++)
		cr_assert_eq(last[i], PER_WRITER - 1, "writer %d ended at %ld", i, last[i]);
}

static void *seq_one(void *arg)
{
	tr_seq(20, (unsigned long)(uintptr_t)arg);
	return NULL;
}

Test(dynamic_debug_trace, merged_across_threads_by_time)
{
	pthread_t th;
	char *t;

	dynamic_debug_must_write("func tr_seq +T");
	/* 0, 2, 4 here; 1, 3 on two other threads (each joined before the next) */
	for (unsigned long i = 0; i < 5; i++) {
		if (i % 2 == 0) {
			tr_seq(20, i);
			continue;
		}
		pthread_create(&th, NULL, seq_one, (void *)(uintptr_t)i);
		pthread_join(th, NULL);
	}
	t = dynamic_debug_trace_text();
	cr_assert_eq(check_seq(t, 20, 0), 5, "%s", t);
	free(t);
}

/* ---- signals ----------------------------------------------------------------- */

static atomic_long handler_calls;

static void on_usr1(int sig)
{
	(void)sig;
	tr_seq(30, (unsigned long)atomic_fetch_add(&handler_calls, 1));
}

Test(dynamic_debug_trace, a_signal_handler_records)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	char *t;

	sigaction(SIGUSR1, &sa, NULL);
	dynamic_debug_must_write("func tr_seq +T");
	/* the handler's first event is the thread's first: it maps the ring */
	raise(SIGUSR1);
	tr_seq(31, 0);
	raise(SIGUSR1);
	t = dynamic_debug_trace_text();
	cr_assert_eq(check_seq(t, 30, 0), 2, "%s", t);
	cr_assert_eq(check_seq(t, 31, 0), 1, "%s", t);
	cr_assert(strstr(t, "seq 30 0") < strstr(t, "seq 31 0") &&
		  strstr(t, "seq 31 0") < strstr(t, "seq 30 1"), "%s", t);
	free(t);
}

static atomic_int kicking;
static pthread_t victim;

static void *kicker(void *arg)
{
	(void)arg;
	while (atomic_load(&kicking))
		pthread_kill(victim, SIGUSR1);
	return NULL;
}

Test(dynamic_debug_trace, a_handler_interrupting_the_writer_never_tears_a_record)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t k;
	char *t, *s;
	unsigned long nested = 0;
	long in_ring;

	sigaction(SIGUSR1, &sa, NULL);
	cr_assert_eq(kk_dyndbg_trace_set_size(1 << 20), 0);
	dynamic_debug_must_write("func tr_seq +T");
	/* Touch every page of the ring first: signals come back from page faults,
	 * which are all inside the writer, so a fresh ring would test only drops. */
	for (unsigned long i = 0; i < 40000; i++)
		tr_seq(33, i);
	kk_dyndbg_trace_clear();
	victim = pthread_self();
	atomic_store(&kicking, 1);
	pthread_create(&k, NULL, kicker, NULL);
	for (int i = 0; i < 1000000 && !atomic_load(&handler_calls); i++)
		sched_yield();		/* the kicker kicks before we write */
	for (unsigned long i = 0; i < 10000; i++)	/* fewer than the ring holds */
		tr_seq(32, i);
	atomic_store(&kicking, 0);
	pthread_join(k, NULL);
	t = dynamic_debug_trace_text();
	/* ours all there and in order; the handler's in order, or dropped and counted */
	cr_assert_eq(check_seq(t, 32, 0), 10000);
	/* every line whole */
	for (char *l = strtok(strdup(t), "\n"); l; l = strtok(NULL, "\n")) {
		const char *m = msg_of(l);

		if (l[0] != '#')
			cr_assert(m && (!strncmp(m, "seq 32 ", 7) || !strncmp(m, "seq 30 ", 7)),
				  "<%s>", l);
	}
	/* the handler's: rising, with gaps where one was dropped */
	in_ring = 0;
	for (const char *p = t, *prev = NULL; (p = strstr(p, "seq 30 ")); p += 7, in_ring++) {
		if (prev)
			cr_assert_gt(strtol(p + 7, NULL, 10), strtol(prev + 7, NULL, 10));
		prev = p;
	}
	s = strstr(t, "nested ");
	cr_assert(s && sscanf(s, "nested %lu", &nested) == 1, "%.300s", t);
	cr_log_info("handler calls %ld: recorded %ld, dropped nested %lu",
		    atomic_load(&handler_calls), in_ring, nested);
	cr_assert_eq((long)nested + in_ring, atomic_load(&handler_calls),
		     "nested %lu + recorded %ld != handler calls %ld", nested, in_ring,
		     atomic_load(&handler_calls));
	free(t);
}

/* ---- fork -------------------------------------------------------------------- */

static void *other_thread(void *arg)
{
	(void)arg;
	tr_seq(41, 0);
	return NULL;
}

Test(dynamic_debug_trace, a_forked_child_has_a_usable_ring)
{
	pthread_t th;
	pid_t pid;
	int st;

	dynamic_debug_must_write("func tr_seq +T");
	tr_seq(40, 0);
	pthread_create(&th, NULL, other_thread, NULL);
	pthread_join(th, NULL);
	pid = fork();
	if (pid == 0) {
		char *t = NULL;
		size_t n;

		tr_seq(40, 1);
		if (kk_control_read("dynamic_debug/trace", &t, &n))
			_exit(2);
		/* the forking thread's records stay; the other thread's are gone */
		if (!strstr(t, "seq 40 0\n") || !strstr(t, "seq 40 1\n"))
			_exit(3);
		if (strstr(t, "seq 41 0"))
			_exit(4);
		/* and a new thread of the child gets a ring */
		pthread_create(&th, NULL, other_thread, NULL);
		pthread_join(th, NULL);
		free(t);
		if (kk_control_read("dynamic_debug/trace", &t, &n) || !strstr(t, "seq 41 0"))
			_exit(5);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	tr_seq(40, 2);	/* the parent goes on */
	char *t = dynamic_debug_trace_text();

	cr_assert(strstr(t, "seq 40 2\n") && strstr(t, "seq 41 0\n"), "%s", t);
	cr_assert_null(strstr(t, "seq 40 1\n"), "the child's record in the parent: %s", t);
	free(t);
}

/* ---- the flight recorder ------------------------------------------------------ */

/*
 * Wait for @k's panic and find its trace dump, whose header says @what
 * ("last N of M records"): the dump's start, its end in *@end.
 */
static const char *panic_dump(struct kid *k, const char *what, const char **end)
{
	char head[96];
	const char *d;

	cr_assert_eq(kid_finish(k, 10000), 0, "child hung:\n%s", k->out);
	snprintf(head, sizeof(head), "kernelkit: dynamic debug trace, %s:\n", what);
	d = strstr(k->out, head);
	cr_assert(d, "%s", k->out);
	*end = strstr(d, "kernelkit: end of trace\n");
	cr_assert(*end, "%s", k->out);
	return d;
}

static void panic_child(void *arg)
{
	char buf[16];

	(void)arg;
	kk_panic_set_timeout(-1);
	if (dynamic_debug_write("func tr_seq +T; func tr_str +T", NULL))
		_exit(3);
	for (unsigned long i = 0; i < 300; i++)
		tr_seq(50, i);
	strcpy(buf, "last words");
	tr_str(buf);
	panic("with a trace");
}

Test(dynamic_debug_trace, panic_dumps_the_last_records)
{
	struct kid k;
	const char *d, *e;

	kid_start(&k, panic_child, NULL);
	d = panic_dump(&k, "last 200 of 301 records", &e);
	/* the newest 200: seq 101..299 and the string, in order */
	cr_assert_null(strstr(d, "seq 50 100\n"), "%s", d);
	cr_assert(strstr(d, "seq 50 101\n") && strstr(d, "seq 50 299\n"), "%s", d);
	cr_assert(strstr(d, "seq 50 299\n") < strstr(d, "str <last words>\n"), "%s", d);
	cr_assert(strstr(d, "str <last words>\n") < e);
	cr_assert_eq(kid_count(&k, "seq 50 "), 199);
}

/* The dump shows what dynamic_debug/trace shows: nothing from before a clear. */
static void clear_panic_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	if (dynamic_debug_write("func tr_seq +T", NULL))
		_exit(3);
	for (unsigned long i = 0; i < 5; i++)
		tr_seq(53, i);
	kk_dyndbg_trace_clear();
	for (unsigned long i = 0; i < 3; i++)
		tr_seq(54, i);
	panic("after a clear");
}

Test(dynamic_debug_trace, panic_dump_leaves_out_what_a_clear_removed)
{
	struct kid k;
	const char *d, *e;

	kid_start(&k, clear_panic_child, NULL);
	d = panic_dump(&k, "last 3 of 3 records", &e);
	cr_expect_eq(kid_count(&k, "seq 53 "), 0, "a record from before the clear: %s", d);
	cr_expect(strstr(d, "seq 54 0\n") && strstr(d, "seq 54 2\n"), "%s", d);
}

/*
 * Two threads take turns (each waits for the other's semaphore, no sleep),
 * so seq 52 0..PINGPONG-1 were written in that order, alternating between
 * the threads' rings.  The dump merges the rings by time: it lists them in
 * that order, not one ring after the other.
 */
#define PINGPONG 20
static sem_t pp_sem[2];

static void *pingpong(void *arg)
{
	int me = (int)(intptr_t)arg;

	for (unsigned long i = (unsigned long)me; i < PINGPONG; i += 2) {
		sem_wait(&pp_sem[me]);
		tr_seq(52, i);
		sem_post(&pp_sem[!me]);
	}
	return NULL;
}

static void panic_threads_child(void *arg)
{
	pthread_t th;

	(void)arg;
	kk_panic_set_timeout(-1);
	if (dynamic_debug_write("func tr_seq +T", NULL) || sem_init(&pp_sem[0], 0, 1) ||
	    sem_init(&pp_sem[1], 0, 0))
		_exit(3);
	if (pthread_create(&th, NULL, pingpong, (void *)(intptr_t)1))
		_exit(3);
	pingpong((void *)(intptr_t)0);
	pthread_join(th, NULL);
	panic("with two threads' trace");
}

Test(dynamic_debug_trace, panic_dump_merges_threads_by_time)
{
	struct kid k;
	const char *d, *e;
	char *dump;

	kid_start(&k, panic_threads_child, NULL);
	d = panic_dump(&k, "last 20 of 20 records", &e);
	dump = strndup(d, (size_t)(e - d));
	cr_assert_eq(check_seq(dump, 52, 0), PINGPONG, "%s", dump);
	free(dump);
}

static volatile int *volatile bad_ptr = (volatile int *)(uintptr_t)8;

static void fault_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_set_on_oops(1);
	if (dynamic_debug_write("func tr_seq +T", NULL))
		_exit(3);
	tr_seq(51, 7);
	*bad_ptr = 1;
}

Test(dynamic_debug_trace, a_fatal_signal_dumps_the_trace)
{
	struct kid k;

	kid_start(&k, fault_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0, "child hung:\n%s", k.out);
	cr_assert(strstr(k.out, "Oops: SIGSEGV"), "%s", k.out);
	cr_assert(strstr(k.out, "dynamic debug trace, last 1 of 1 records:\n"), "%s", k.out);
	cr_assert(strstr(k.out, "seq 51 7\n"), "%s", k.out);
}

/* ---- control files ------------------------------------------------------------ */

static char *read_file(const char *name)
{
	char *t = NULL;
	size_t n;

	cr_assert_eq(kk_control_read(name, &t, &n), 0, "%s", name);
	return t;
}

static int write_file(const char *name, const char *v)
{
	char *r = NULL;
	int ret = kk_control_write(name, v, strlen(v), &r);

	free(r);
	return ret;
}

Test(dynamic_debug_trace, buffer_size_kb_round_trips)
{
	char *t = read_file("dynamic_debug/buffer_size_kb");

	cr_assert_str_eq(t, "1024\n");
	free(t);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "8\n"), 0);
	t = read_file("dynamic_debug/buffer_size_kb");
	cr_assert_str_eq(t, "8\n");
	free(t);
	cr_assert_eq(kk_dyndbg_trace_get_size(), 8192);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "5"), 0);	/* rounded up */
	t = read_file("dynamic_debug/buffer_size_kb");
	cr_assert_str_eq(t, "8\n");
	free(t);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "3"), -EINVAL);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "99999999"), -EINVAL);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "12x"), -EINVAL);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", ""), -EINVAL);
	t = read_file("dynamic_debug/buffer_size_kb");
	cr_assert_str_eq(t, "8\n", "a refused write changed the size");
	free(t);
	/* the threads' rings follow: the total is one ring of the new size */
	dynamic_debug_must_write("func tr_seq +T");
	tr_seq(60, 0);
	t = read_file("dynamic_debug/buffer_total_size_kb");
	cr_assert_str_eq(t, "8\n");
	free(t);
	cr_assert_eq(write_file("dynamic_debug/buffer_size_kb", "16"), 0);
	tr_seq(60, 1);
	t = read_file("dynamic_debug/trace");	/* the read unmaps the old ring */
	cr_assert(strstr(t, "seq 60 1\n"), "%s", t);
	cr_assert_null(strstr(t, "seq 60 0\n"), "a resize clears: %s", t);
	free(t);
	t = read_file("dynamic_debug/buffer_total_size_kb");
	cr_assert_str_eq(t, "16\n");
	free(t);
	cr_assert_eq(write_file("dynamic_debug/buffer_total_size_kb", "1"), -EACCES);
}

Test(dynamic_debug_trace, trace_clears_by_writing_nothing_or_zero)
{
	char *t;

	dynamic_debug_must_write("func tr_seq +T");
	tr_seq(61, 0);
	t = read_file("dynamic_debug/trace");
	cr_assert(strstr(t, "seq 61 0\n") && strstr(t, "entries-in-buffer/entries-written: 1/1"),
		  "%s", t);
	free(t);
	cr_assert_eq(write_file("dynamic_debug/trace", ""), 0);
	t = read_file("dynamic_debug/trace");
	cr_assert_null(strstr(t, "seq 61"), "%s", t);
	/* as clearing ftrace's buffer: the counts start again */
	cr_assert(strstr(t, "entries-in-buffer/entries-written: 0/0"), "%s", t);
	free(t);
	tr_seq(61, 1);
	cr_assert_eq(write_file("dynamic_debug/trace", "0\n"), 0);
	t = read_file("dynamic_debug/trace");
	cr_assert_null(strstr(t, "seq 61"), "%s", t);
	free(t);
	tr_seq(61, 2);
	/* the header of an empty trace, written back, clears too */
	cr_assert_eq(write_file("dynamic_debug/trace", "# tracer: dyndbg\n#\n"), 0);
	t = read_file("dynamic_debug/trace");
	cr_assert_null(strstr(t, "seq 61"), "%s", t);
	free(t);
	tr_seq(61, 2);
	cr_assert_eq(write_file("dynamic_debug/trace", "yes"), -EINVAL);
	cr_assert_eq(write_file("dynamic_debug/trace", "# header\nseq 61 2\n"), -EINVAL);
	t = read_file("dynamic_debug/trace");
	cr_assert(strstr(t, "seq 61 2\n"), "a refused write cleared: %s", t);
	free(t);
}

Test(dynamic_debug_trace, trace_pipe_consumes_and_is_not_writable)
{
	char *t;

	dynamic_debug_must_write("func tr_seq +T");
	tr_seq(62, 0);
	tr_seq(62, 1);
	t = read_file("dynamic_debug/trace_pipe");
	cr_assert_eq(check_seq(t, 62, 0), 2, "%s", t);
	cr_assert_null(strstr(t, "# "), "no header in trace_pipe: %s", t);
	free(t);
	t = read_file("dynamic_debug/trace_pipe");
	cr_assert_str_eq(t, "");
	free(t);
	tr_seq(62, 2);
	t = read_file("dynamic_debug/trace_pipe");
	cr_assert_eq(check_seq(t, 62, 2), 1, "%s", t);
	free(t);
	/* trace is not consumed by trace_pipe's reads */
	t = read_file("dynamic_debug/trace");
	cr_assert_eq(check_seq(t, 62, 0), 3, "%s", t);
	free(t);
	cr_assert_eq(write_file("dynamic_debug/trace_pipe", ""), -EACCES);
}

/* A trace_pipe reader blocked in its wait: the record written meanwhile. */
struct pipe_reader {
	atomic_int tid;
	char *text;
};

static void *pipe_reader_fn(void *arg)
{
	struct pipe_reader *pr = arg;

	atomic_store(&pr->tid, (int)syscall(SYS_gettid));
	pr->text = pipe_text();
	return NULL;
}

/* The thread is asleep in futex(2), per /proc/self/task/TID/syscall. */
static bool in_futex(int tid)
{
	char path[64], line[64] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return atol(line) == SYS_futex;
}

Test(dynamic_debug_trace, trace_pipe_blocks_until_a_record)
{
	bool parked = false, got = false;

	dynamic_debug_must_write("func tr_seq +T");
	free(pipe_text());	/* drain */
	/*
	 * The reader parks, as there is nothing to show; then a record is
	 * written.  Not a timing assertion: the wait only decides when to
	 * write.  The old, non-blocking trace_pipe returned at once (never in
	 * futex), so the record was never in its reply.  The read's wait is
	 * bounded (250 ms): on a loaded machine it may end before the record,
	 * and the attempt is made again.
	 */
	for (int attempt = 0; attempt < 5 && !got; attempt++) {
		struct pipe_reader pr = { 0, NULL };
		pthread_t th;
		bool in = false;

		cr_assert_eq(pthread_create(&th, NULL, pipe_reader_fn, &pr), 0);
		for (int i = 0; i < 20000 && !in; i++) {
			int tid = atomic_load(&pr.tid);

			in = tid && in_futex(tid);
			if (!in)
				sched_yield();
		}
		tr_seq(63, (unsigned long)attempt);
		pthread_join(th, NULL);
		parked |= in;
		got = in && check_seq(pr.text, 63, attempt) == 1;
		free(pr.text);
		free(pipe_text());
	}
	cr_assert(parked, "a trace_pipe read with nothing to show never waited");
	cr_assert(got, "the waiting trace_pipe read did not get the record written meanwhile");
}
