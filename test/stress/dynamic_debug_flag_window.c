// SPDX-License-Identifier: MIT
/*
 * Issue 37, finding 11: a site switched with -T alone printed to stderr.
 * Threads run sites in a hot loop (64 trace-header-style pr_debug sites, a
 * hex dump, a rate-limited site) while this thread changes their flags
 * through the query API, again and again.  The rule: at every instant of a
 * flag change, a site prints only if p is set and records only if T is set.
 *
 *   A. p never set (T on and off, alone, with decorations, with d, =_; the
 *      ring resized and cleared; the sink switched between stderr, journal
 *      and a callback): nothing printed, on stderr or any sink.
 *   B. T never set (p on and off): nothing recorded.
 *   C. T set all along, p on and off: every call recorded.
 *   D. p set all along, T on and off: every call printed.
 *   E. the site always on, flipping between =pmf and =T: every printed line
 *      carries the decoration of m and f (the flags are read once per call).
 *   F. p and T on and off together (=pT, -pT, =_): each call prints and
 *      records, or does neither: as many lines printed as records written.
 *
 * The passing direction is "zero lines" (A), "zero records" (B) and exact
 * counts (C, D, F, after the workers have stopped), which hold at any speed.
 * Before the fix, A printed hundreds of lines.  Exit 0 = pass.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

#define WORKERS		2
#define ROUNDS		10	/* each list of queries, this many times (under TCG too) */

/* 64 sites, as a tracing header adopting kernelkit has them: one per tracepoint. */
#define TP(v)	pr_debug("valkey_server:module_acquire_gil: { duration = %d }\n", (v))
#define TP4(v)	TP(v); TP(v); TP(v); TP(v)
#define TP16(v)	TP4(v); TP4(v); TP4(v); TP4(v)
#define TP_SITES 64

__attribute__((noinline)) static void tracepoints(int v)
{
	TP16(v); TP16(v); TP16(v); TP16(v);
}

static const unsigned char hexbuf[20] = "hot loop hex payload";

__attribute__((noinline)) static void hexsite(void)
{
	print_hex_dump_debug("hotloop: ", DUMP_PREFIX_OFFSET, 16, 1, hexbuf, sizeof(hexbuf), true);
}

__attribute__((noinline)) static void rlsite(int v)
{
	pr_debug_ratelimited("hot rl %d\n", v);
}

static int err_fd = -1;		/* the real stderr, for our own messages */

#define say(...) dprintf(err_fd, "dynamic_debug_flag_window: " __VA_ARGS__)

/* ---- the workers -------------------------------------------------------------- */

enum { RUN_ALL, RUN_TP };
static atomic_int mode = RUN_ALL;
static atomic_int stop, paused;
static atomic_ulong calls[WORKERS];	/* tracepoints() calls, for the counts of C and D */
static atomic_int parked;

static void *worker(void *arg)
{
	long id = (long)arg;

	for (int i = 0; !atomic_load(&stop); i++) {
		if (atomic_load(&paused)) {
			atomic_fetch_add(&parked, 1);
			while (atomic_load(&paused) && !atomic_load(&stop))
				sched_yield();
			atomic_fetch_sub(&parked, 1);
			continue;
		}
		tracepoints(i);
		atomic_fetch_add(&calls[id], 1);
		if (atomic_load(&mode) == RUN_ALL) {
			hexsite();
			rlsite(i);
		}
	}
	return NULL;
}

/* Let every worker run at least once more: each change meets running callers. */
static void wait_progress(void)
{
	unsigned long seen[WORKERS];

	for (int w = 0; w < WORKERS; w++)
		seen[w] = atomic_load(&calls[w]);
	for (int w = 0; w < WORKERS; w++)
		while (atomic_load(&calls[w]) == seen[w])
			sched_yield();
}

static void pause_workers(void)
{
	atomic_store(&paused, 1);
	while (atomic_load(&parked) != WORKERS)
		sched_yield();
}

static void resume_workers(void)
{
	atomic_store(&paused, 0);
	while (atomic_load(&parked))
		sched_yield();
}

static unsigned long total_calls(void)
{
	unsigned long n = 0;

	for (int w = 0; w < WORKERS; w++)
		n += atomic_load(&calls[w]);
	return n;
}

/* ---- what came out ------------------------------------------------------------ */

static atomic_ulong sunk;

static void count_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)msg;
	(void)len;
	(void)arg;
	atomic_fetch_add(&sunk, 1);
}

static int query(const char *q)
{
	int r = dynamic_debug_exec_queries(q, NULL);

	if (r < 0)
		say("query '%s' failed: %s\n", q, strerror(-r));
	return r < 0;
}

/* entries-written of the ring so far (cumulative), and the records shown. */
static int ring_counts(unsigned long *shown, unsigned long *written)
{
	char *t = NULL;
	size_t n;
	const char *p;

	if (kk_control_read("dynamic_debug/trace", &t, &n) || !t ||
	    !(p = strstr(t, "entries-written: ")) ||
	    sscanf(p, "entries-written: %lu/%lu", shown, written) != 2) {
		say("cannot read the trace header\n");
		free(t);
		return 1;
	}
	free(t);
	return 0;
}

/* Apply the pairs of @q in turn, ROUNDS times, each change met by running workers. */
static int toggle(const char *const *q, size_t nq, void (*between)(int))
{
	for (int r = 0; r < ROUNDS; r++)
		for (size_t i = 0; i < nq; i++) {
			if (query(q[i]))
				return 1;
			if (between)
				between(r * (int)nq + (int)i);
			wait_progress();
		}
	return 0;
}

/* ---- A: p never set: nothing printed ------------------------------------------- */

static const char *const t_only[] = {
	"+T", "-T",
	"=T", "=_",
	"+Tmflt", "-Tmflt",
	"=Td", "=mflt",		/* T off, decorations left: the site turns off */
	"=T", "-T",
	"=_",
};

/* The ring on and off under the writers: resized (a new ring at each thread's next event), cleared. */
static void ring_churn(int i)
{
	if (i % 7 == 3)
		kk_dyndbg_trace_set_size(i % 2 ? 4096 : 65536);
	else if (i % 5 == 1)
		kk_dyndbg_trace_clear();
}

static const char *const sinks[] = { "journal", "stderr" };

static void sink_churn(int i)
{
	ring_churn(i);
	/* a failed switch would show as lines on stderr: not checked here */
	if (i % 3 == 2) {
		const char *v = sinks[(i / 3) % 2];
		char *rep = NULL;

		kk_control_write("dynamic_debug/sink", v, strlen(v), &rep);
		free(rep);
	}
}

static long file_size(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	return (long)end;
}

static int phase_a(int out_fd)
{
	int bad = 0;
	long n;

	atomic_store(&mode, RUN_ALL);
	/* the default sink: stderr */
	kk_dyndbg_set_sink(NULL, NULL);
	bad |= toggle(t_only, sizeof(t_only) / sizeof(t_only[0]), ring_churn);
	/* stderr and the journal, switched live (no journal: it would print on stderr) */
	bad |= toggle(t_only, sizeof(t_only) / sizeof(t_only[0]), sink_churn);
	kk_dyndbg_set_sink(NULL, NULL);
	fflush(stderr);
	n = file_size(out_fd);
	if (n) {
		char buf[512];
		ssize_t k = pread(out_fd, buf, sizeof(buf) - 1, 0);

		buf[k > 0 ? k : 0] = '\0';
		say("A: p was never set, yet %ld bytes were printed on stderr, starting:\n%s\n", n,
		    buf);
		bad = 1;
	}
	/* a callback sink */
	kk_dyndbg_set_sink(count_sink, NULL);
	bad |= toggle(t_only, sizeof(t_only) / sizeof(t_only[0]), ring_churn);
	kk_dyndbg_set_sink(NULL, NULL);
	if (atomic_load(&sunk)) {
		say("A: p was never set, yet the sink got %lu messages\n", atomic_load(&sunk));
		bad = 1;
	}
	return bad;
}

/* ---- B: T never set: nothing recorded ------------------------------------------- */

static const char *const p_only[] = {
	"+p", "-p",
	"=p", "=_",
	"+pmflt", "-pmflt",
	"=pf", "=mf",
	"=_",
};

static int phase_b(void)
{
	unsigned long shown0, w0, shown1, w1;
	int bad = 0;

	kk_dyndbg_set_sink(count_sink, NULL);
	pause_workers();
	kk_dyndbg_trace_clear();
	bad |= ring_counts(&shown0, &w0);
	resume_workers();
	bad |= toggle(p_only, sizeof(p_only) / sizeof(p_only[0]), NULL);
	pause_workers();
	bad |= ring_counts(&shown1, &w1);
	resume_workers();
	kk_dyndbg_set_sink(NULL, NULL);
	if (!bad && (shown1 || w1 != w0)) {
		say("B: T was never set, yet %lu records were written (%lu shown)\n", w1 - w0,
		    shown1);
		bad = 1;
	}
	return bad;
}

/* ---- C, D, F: counts ------------------------------------------------------------ */

struct counts {
	unsigned long calls, printed, recorded;
};

/* Apply @base, then toggle @q under the workers running @m; what came out. */
static int measure(const char *base, const char *const *q, size_t nq, int m, struct counts *c)
{
	unsigned long c0, s0, w0, w1, shown;
	int bad = 0;

	atomic_store(&mode, m);
	/*
	 * Each worker records once first, so that it has a ring of the size
	 * phase A left: taking one during the count could give a thread a
	 * ring whose buffer was swept, whose entries-written (cumulative,
	 * per ring) would count again.
	 */
	bad |= query("=T");
	wait_progress();
	kk_dyndbg_set_sink(count_sink, NULL);
	pause_workers();
	bad |= query(base);
	bad |= ring_counts(&shown, &w0);
	c0 = total_calls();
	s0 = atomic_load(&sunk);
	resume_workers();
	bad |= toggle(q, nq, NULL);
	pause_workers();
	c->calls = total_calls() - c0;
	c->printed = atomic_load(&sunk) - s0;
	bad |= ring_counts(&shown, &w1);
	c->recorded = w1 - w0;
	bad |= query("=_");
	kk_dyndbg_set_sink(NULL, NULL);
	atomic_store(&mode, RUN_ALL);
	resume_workers();
	return bad;
}

/* C: T set all along, p on and off: every call recorded. */
static const char *const p_under_t[] = { "+p", "-p", "+pmf", "-pmf", "=Tp", "=T" };

static int phase_c(void)
{
	struct counts c;

	if (measure("=T", p_under_t, sizeof(p_under_t) / sizeof(p_under_t[0]), RUN_TP, &c))
		return 1;
	if (c.recorded == c.calls * TP_SITES)
		return 0;
	say("C: T set all along: %lu calls of %d sites, %lu records\n", c.calls, TP_SITES,
	    c.recorded);
	return 1;
}

/* D: p set all along, T on and off: every call printed. */
static const char *const t_under_p[] = { "+T", "-T", "+Tmf", "-Tmf", "=pT", "=p" };

static int phase_d(void)
{
	struct counts c;

	if (measure("=p", t_under_p, sizeof(t_under_p) / sizeof(t_under_p[0]), RUN_TP, &c))
		return 1;
	if (c.printed == c.calls * TP_SITES)
		return 0;
	say("D: p set all along: %lu calls of %d sites, %lu printed\n", c.calls, TP_SITES,
	    c.printed);
	return 1;
}

/* F: p and T on and off together: each call does both or neither. */
static const char *const p_and_t[] = { "=pT", "=_", "+pT", "-pT", "=pTmf", "=mf", "+pT", "=_" };

static int phase_f(void)
{
	struct counts c;

	if (measure("=_", p_and_t, sizeof(p_and_t) / sizeof(p_and_t[0]), RUN_ALL, &c))
		return 1;
	if (c.printed == c.recorded && c.printed)
		return 0;
	say("F: p and T switched together: %lu printed, %lu recorded\n", c.printed, c.recorded);
	return 1;
}

/* ---- E: one load per call ------------------------------------------------------- */

static const char *const pmf_or_t[] = { "func tracepoints =pmf", "func tracepoints =T" };

static int phase_e(int out_fd)
{
	char line[512], want[256];
	FILE *f;
	long lines = 0, bare = 0;
	int bad;

	atomic_store(&mode, RUN_TP);
	kk_dyndbg_set_sink(NULL, NULL);
	if (ftruncate(out_fd, 0) || lseek(out_fd, 0, SEEK_SET)) {
		say("cannot truncate the output file: %s\n", strerror(errno));
		return 1;
	}
	bad = toggle(pmf_or_t, 2, NULL);
	pause_workers();
	bad |= query("=_");
	fflush(stderr);
	f = fdopen(dup(out_fd), "r");
	if (!f)
		return 1;
	rewind(f);
	/* m and f: "module:func: ", the module being this program's file name */
	snprintf(want, sizeof(want), "%s:tracepoints: ", program_invocation_short_name);
	while (fgets(line, sizeof(line), f)) {
		lines++;
		if (strncmp(line, want, strlen(want))) {
			if (!bare++)
				say("E: a line without the decoration of its flags: %s", line);
		}
	}
	fclose(f);
	if (bare) {
		say("E: %ld of %ld lines were printed on flags read twice\n", bare, lines);
		bad = 1;
	}
	atomic_store(&mode, RUN_ALL);
	resume_workers();
	return bad;
}

int main(void)
{
	char path[] = "/tmp/kk-dd-flag-window.XXXXXX";
	pthread_t th[WORKERS];
	int out_fd = mkstemp(path), bad = 0;

	err_fd = dup(2);
	if (out_fd < 0 || err_fd < 0) {
		perror("dynamic_debug_flag_window: setup");
		return 1;
	}
	unlink(path);
	/* stderr (the default sink, and the journal's fallback) goes to the file we read */
	fflush(stderr);
	dup2(out_fd, 2);
	for (long w = 0; w < WORKERS; w++)
		pthread_create(&th[w], NULL, worker, (void *)w);
	wait_progress();

	bad |= phase_a(out_fd) << 0;
	bad |= phase_b() << 1;
	bad |= phase_c() << 2;
	bad |= phase_d() << 3;
	bad |= phase_e(out_fd) << 4;
	bad |= phase_f() << 5;

	atomic_store(&stop, 1);
	for (int w = 0; w < WORKERS; w++)
		pthread_join(th[w], NULL);
	dup2(err_fd, 2);
	if (bad) {
		say("FAIL (phases: %s%s%s%s%s%s)\n", bad & 1 ? "A " : "", bad & 2 ? "B " : "",
		    bad & 4 ? "C " : "", bad & 8 ? "D " : "", bad & 16 ? "E " : "",
		    bad & 32 ? "F" : "");
		return 1;
	}
	say("ok: %lu calls; nothing printed without p, nothing recorded without T\n",
	    total_calls());
	return 0;
}
