// SPDX-License-Identifier: MIT
/*
 * kk-bench panic: what a panicked process costs the machine afterwards.
 *
 * A child with 4 busy worker threads panics (panic_timeout 0), once under the
 * "busy" policy (the kernel's old mdelay loop) and once under "halt".  For a
 * window after the panic (10 s; KK_BENCH_PANIC_WINDOW_S shortens it) the
 * parent reads the child's CPU time in ns from /proc/PID/task/<tid>/schedstat
 * and its context switches from /proc/PID/task/<tid>/status, summed over
 * every thread.  The time from kk_panic() to "every other thread parked" is
 * measured inside the child (kk_panic_get_stats(), read by a panic notifier)
 * over 9 panics: the median is reported.
 *
 * The "lib" runs add the library's own threads, busy (issue 9's target):
 * debug objects on with the free worker queued, a deferred decrement pending
 * and the shazptr scan busy (a reader holds a pointer, another thread waits
 * in synchronize_shazptr()).  Every thread must park in <= 10 ms and use no
 * CPU after the halt.
 *
 * JSON: busy_cpu_ms, halt_cpu_ms, halt_ctxsw, threads_parked_ms,
 * lib_threads_parked_ms, lib_threads_parked_max_ms, lib_threads_missing,
 * lib_halt_cpu_ms, lib_halt_ctxsw.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/debugobjects.h>
#include <kernelkit/jump_label_ratelimit.h>
#include <kernelkit/panic.h>
#include <kernelkit/shazptr.h>
#include "bench.h"

#define NWORKERS 4
#define NPARK_RUNS 9

static atomic_int workers_started;
static int report_fd = -1;

static void *busy_worker(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	atomic_fetch_add(&workers_started, 1);
	for (;;)
		n++;
	return NULL;
}

static int report(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	struct kk_panic_stats st;
	char line[96];
	int n;

	(void)nb;
	(void)action;
	(void)data;
	if (kk_panic_get_stats(&st) || !st.parked_ns)
		n = snprintf(line, sizeof(line), "parked -1 %d %d\n", st.threads_missing,
			     st.threads_signalled);
	else
		n = snprintf(line, sizeof(line), "parked %llu %d %d\n",
			     (unsigned long long)(st.parked_ns - st.enter_ns), st.threads_parked,
			     st.threads_signalled);
	if (write(report_fd, line, (size_t)n) < 0)
		return KK_NOTIFY_DONE;
	return KK_NOTIFY_DONE;
}

static struct kk_panic_notifier report_nb = { report, 0, NULL };

/* ---- the library's threads, busy ------------------------------------------------ */

static int shazptr_obj;
static atomic_int lib_ready;

static void *shazptr_holder(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(&shazptr_obj);

	(void)arg;
	atomic_fetch_add(&lib_ready, 1);
	for (;;)
		pause();
	shazptr_clear(g);
	return NULL;
}

static void *shazptr_waiter(void *arg)
{
	(void)arg;
	synchronize_shazptr(&shazptr_obj);		/* the holder never lets go */
	return NULL;
}

struct bench_obj {
	int v;
};

static const struct debug_obj_descr bench_descr = { .name = "kk-bench-panic" };
static struct bench_obj bench_objs[4096];

DEFINE_STATIC_KEY_DEFERRED_FALSE(bench_dk, 60000);

static void busy_library(void)
{
	struct kk_shazptr_stats st;
	pthread_t t;

	/* Debug objects on; tracker churn queues the free worker. */
	if (kk_debug_objects_enable())
		_exit(5);
	for (int r = 0; r < 4; r++) {
		for (size_t i = 0; i < sizeof(bench_objs) / sizeof(bench_objs[0]); i++)
			debug_object_init(&bench_objs[i], &bench_descr);
		for (size_t i = 0; i < sizeof(bench_objs) / sizeof(bench_objs[0]); i++)
			debug_object_free(&bench_objs[i], &bench_descr);
	}
	if (static_branch_deferred_inc(&bench_dk) || static_branch_slow_dec_deferred(&bench_dk))
		_exit(5);
	/* The scan: a reader holds the pointer, a waiter waits for it. */
	kk_shazptr_set_skip_synchronize_self_scan(true);
	if (pthread_create(&t, NULL, shazptr_holder, NULL))
		_exit(4);
	while (atomic_load(&lib_ready) < 1)
		sched_yield();
	if (pthread_create(&t, NULL, shazptr_waiter, NULL))
		_exit(4);
	do {
		kk_shazptr_get_stats(&st);
		sched_yield();
	} while (st.sync_scan_thread < 1 || st.scan_rounds < 100);
}

__attribute__((noreturn)) static void child(const char *policy, int lib, int wfd)
{
	int devnull = open("/dev/null", O_WRONLY);
	pthread_t t;

	if (devnull >= 0)
		dup2(devnull, 2);
	report_fd = wfd;
	kk_panic_set_timeout(0);
	if (kk_panic_set_policy(policy) || kk_panic_notifier_register(&report_nb))
		_exit(3);
	for (int i = 0; i < NWORKERS; i++)
		if (pthread_create(&t, NULL, busy_worker, NULL))
			_exit(4);
	while (atomic_load(&workers_started) < NWORKERS)
		sched_yield();
	if (lib)
		busy_library();
	usleep(20000);		/* let them spin */
	kk_panic("kk-bench panic (%s%s)", policy, lib ? ", library threads busy" : "");
}

/* CPU ns and context switches of every thread of pid. */
static int sample(pid_t pid, unsigned long long *cpu_ns, unsigned long long *ctxsw)
{
	char path[320], line[256];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -1;
	*cpu_ns = *ctxsw = 0;
	while ((de = readdir(d))) {
		unsigned long long run = 0, v;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%llu", &run) == 1)
				*cpu_ns += run;
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				*ctxsw += v;
		if (f)
			fclose(f);
	}
	closedir(d);
	return 0;
}

static void sleep_ns(unsigned long long ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

struct run {
	double cpu_ms;
	unsigned long long ctxsw;
	double parked_ms;		/* < 0: not every thread parked */
	int parked_threads;
	int signalled_threads;
	int exit_status;
};

/* One child: panic, measure over window_ns (0: none), SIGTERM it. */
static int run_child(const char *policy, int lib, unsigned long long window_ns, struct run *r)
{
	int p[2], st = 0;
	char buf[128];
	ssize_t n = 0;
	pid_t pid;
	struct pollfd pfd;
	unsigned long long c0, x0, c1, x1, ns;
	int threads;

	memset(r, 0, sizeof(*r));
	r->exit_status = -1;
	if (pipe(p))
		return -1;
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[0]);
		child(policy, lib, p[1]);
	}
	close(p[1]);
	pfd.fd = p[0];
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 10000) == 1)
		n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	if (n > 0 && (buf[n] = '\0', sscanf(buf, "parked -1 %d %d", &threads, &r->signalled_threads) == 2)) {
		r->parked_ms = -1;	/* some thread did not park: measure the rest anyway */
		r->parked_threads = r->signalled_threads - threads;
	} else if (n <= 0 || sscanf(buf, "parked %llu %d %d", &ns, &threads, &r->signalled_threads) != 3) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		return -1;
	} else {
		r->parked_ms = ns / 1e6;
		r->parked_threads = threads;
	}
	if (window_ns) {
		sleep_ns(200000000ull);	/* the owner reaches its wait */
		if (sample(pid, &c0, &x0))
			return -1;
		sleep_ns(window_ns);
		if (sample(pid, &c1, &x1))
			return -1;
		r->cpu_ms = (double)(c1 - c0) / 1e6;
		r->ctxsw = x1 - x0;
	}
	kill(pid, SIGTERM);
	for (int i = 0; i < 500; i++) {
		if (waitpid(pid, &st, WNOHANG) == pid) {
			r->exit_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
			return 0;
		}
		sleep_ns(10000000ull);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	return -1;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int bench_panic(struct kkb_ctx *ctx)
{
	const char *w = getenv("KK_BENCH_PANIC_WINDOW_S");
	double window_s = w && atof(w) > 0 ? atof(w) : 10.0;
	unsigned long long window_ns = (unsigned long long)(window_s * 1e9);
	struct run busy, halt, extra, lib;
	double parked[NPARK_RUNS], maxp, lparked[NPARK_RUNS], lmaxp;
	int np = 0, nl = 0, lmissing = 0;

	if (run_child("busy", 0, window_ns, &busy) || run_child("halt", 0, window_ns, &halt)) {
		kkb_note(ctx, "a child did not panic as expected");
		return -1;
	}
	parked[np++] = busy.parked_ms;
	parked[np++] = halt.parked_ms;
	while (np < NPARK_RUNS && !run_child("halt", 0, 0, &extra))
		parked[np++] = extra.parked_ms;
	qsort(parked, (size_t)np, sizeof(parked[0]), cmp_double);
	maxp = parked[np - 1];

	/* The library's threads busy: parking time over 9 panics, CPU after one. */
	if (run_child("halt", 1, window_ns, &lib)) {
		kkb_note(ctx, "the library-threads child did not panic as expected");
		return -1;
	}
	lparked[nl++] = lib.parked_ms;
	while (nl < NPARK_RUNS && !run_child("halt", 1, 0, &extra))
		lparked[nl++] = extra.parked_ms;
	for (int i = 0; i < nl; i++)
		if (lparked[i] < 0) {
			lmissing++;
			lparked[i] = 1e9;	/* sorts last */
		}
	qsort(lparked, (size_t)nl, sizeof(lparked[0]), cmp_double);
	lmaxp = lparked[nl - 1];

	kkb_json_num(ctx, "busy_cpu_ms", busy.cpu_ms);
	kkb_json_num(ctx, "halt_cpu_ms", halt.cpu_ms);
	kkb_json_num(ctx, "halt_ctxsw", (double)halt.ctxsw);
	kkb_json_num(ctx, "threads_parked_ms", parked[np / 2]);
	if (lmissing)
		kkb_json_null(ctx, "lib_threads_parked_ms");
	else
		kkb_json_num(ctx, "lib_threads_parked_ms", lparked[nl / 2]);
	if (lmissing)
		kkb_json_null(ctx, "lib_threads_parked_max_ms");
	else
		kkb_json_num(ctx, "lib_threads_parked_max_ms", lmaxp);
	kkb_json_num(ctx, "lib_threads_missing", lmissing);
	kkb_json_num(ctx, "lib_halt_cpu_ms", lib.cpu_ms);
	kkb_json_num(ctx, "lib_halt_ctxsw", (double)lib.ctxsw);
	kkb_note(ctx, "window %.1f s after the panic; child: %d busy workers (+ the control thread)",
		 window_s, NWORKERS);
	kkb_note(ctx, "busy: %.1f ms CPU, %llu context switches; halt: %.4f ms CPU, %llu context switches",
		 busy.cpu_ms, busy.ctxsw, halt.cpu_ms, halt.ctxsw);
	if (halt.cpu_ms > 0)
		kkb_note(ctx, "halt/busy CPU = 1/%.0f (target: 1/10000 or less)", busy.cpu_ms / halt.cpu_ms);
	else
		kkb_note(ctx, "halt/busy CPU = 0 (no CPU at all while halted)");
	kkb_note(ctx, "threads parked: median %.3f ms, max %.3f ms over %d panics (%d threads each)",
		 parked[np / 2], maxp, np, halt.parked_threads);
	kkb_note(ctx, "library threads busy (debug objects + free worker, deferred key, shazptr "
		 "reader + waiter): %d threads signalled", lib.signalled_threads);
	if (lmissing)
		kkb_note(ctx, "  in %d of %d panics some thread did not park (the library's?)",
			 lmissing, nl);
	else
		kkb_note(ctx, "  parked: median %.3f ms, max %.3f ms over %d panics (target <= 10 ms)",
			 lparked[nl / 2], lmaxp, nl);
	kkb_note(ctx, "  after the halt: %.4f ms CPU, %llu context switches in %.1f s (target 0)",
		 lib.cpu_ms, lib.ctxsw, window_s);
	kkb_note(ctx, "exit status after SIGTERM: busy %d, halt %d, lib %d (panic status %d)",
		 busy.exit_status, halt.exit_status, lib.exit_status, KK_PANIC_EXIT_STATUS_DEFAULT);
	if (busy.exit_status != KK_PANIC_EXIT_STATUS_DEFAULT || halt.exit_status != KK_PANIC_EXIT_STATUS_DEFAULT ||
	    lib.exit_status != KK_PANIC_EXIT_STATUS_DEFAULT)
		return -1;
	return 0;
}

KKB_REGISTER("panic", "CPU burned after a panic: busy loop vs halt; time to park threads", bench_panic);
