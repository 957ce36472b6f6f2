// SPDX-License-Identifier: MIT
/*
 * The library's threads seen from a whole process (test/unit/threads_stop.c
 * runs this with KK_CONTROL=0, so that the only library thread is the worker;
 * the control endpoint's thread is another facility's).
 *
 *   threads_prog lazy      no library thread before one is needed
 *   threads_prog stop      kk_threads_stop() with the worker busy: one thread
 *                          left, nothing runs, the facilities still work in
 *                          the caller; kk_threads_start() resumes the pending
 *                          deferred decrement
 *   threads_prog seccomp   a per-thread seccomp filter applied while stopped
 *                          is inherited by the threads kk_threads_start() makes
 *
 * Exit 0 when every check passes; otherwise a message on stderr and exit 1.
 */
#include <dirent.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/debugobjects.h>
#include <kernelkit/jump_label_ratelimit.h>
#include <kernelkit/kernelkit.h>
#include <kernelkit/shazptr.h>

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);	\
		fprintf(stderr, __VA_ARGS__);					\
		fprintf(stderr, "\n");						\
		dump_tasks();							\
		exit(1);							\
	}									\
} while (0)

#define DEADLINE_MS	10000		/* bound of every wait */
#define SHORT_MS	20		/* the deferred decrement's timeout */

DEFINE_STATIC_KEY_DEFERRED_FALSE(dk, SHORT_MS);
DEFINE_STATIC_KEY_DEFERRED_FALSE(dk_long, 60000);

/* ---- threads of this process ------------------------------------------------------ */

static void dump_tasks(void)
{
	char path[300], line[64];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");

	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (f && fgets(line, sizeof(line), f))
			fprintf(stderr, "  task %s: %s", de->d_name, line);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
}

/* Number of threads; *named: how many are called @name. */
static int count_tasks(const char *name, int *named)
{
	char path[300], line[64];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int n = 0;

	*named = 0;
	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "r");
		if (f && fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = '\0';
			*named += !strcmp(line, name);
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return n;
}

/* Every thread's Seccomp field is @mode. */
static int all_seccomp(int mode, int *threads)
{
	char path[300], line[128];
	struct dirent *de;
	DIR *d = opendir("/proc/self/task");
	int ok = 1;

	*threads = 0;
	while (d && (de = readdir(d))) {
		FILE *f;
		int m = -1;

		if (de->d_name[0] == '.')
			continue;
		++*threads;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		f = fopen(path, "r");
		while (f && fgets(line, sizeof(line), f))
			sscanf(line, "Seccomp: %d", &m);
		if (f)
			fclose(f);
		if (m != mode) {
			fprintf(stderr, "  task %s: Seccomp %d\n", de->d_name, m);
			ok = 0;
		}
	}
	if (d)
		closedir(d);
	return ok;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

static int wait_count(struct static_key *k, int want)
{
	uint64_t end = now_ms() + DEADLINE_MS;

	while (static_key_count(k) != want && now_ms() < end)
		sleep_ms(1);
	return static_key_count(k) == want;
}

/* ---- the facilities' work ---------------------------------------------------------- */

static int obj_a;

/*
 * pthread_join() returns when the kernel clears the thread's tid, a little
 * before the thread leaves /proc/self/task: the counts below need it gone.
 * @tid is the thread's own gettid(), which it stored before it could exit.
 */
static void join_gone(pthread_t t, const pid_t *tid)
{
	uint64_t end = now_ms() + DEADLINE_MS;

	pthread_join(t, NULL);
	while (syscall(SYS_tgkill, getpid(), *tid, 0) == 0 && now_ms() < end)
		sched_yield();
}

struct holder {
	int held, release;
	pid_t tid;
};

static void *holder_fn(void *arg)
{
	struct holder *h = arg;
	struct shazptr_guard g = shazptr_acquire(&obj_a);

	h->tid = (pid_t)syscall(SYS_gettid);

	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&h->release, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	shazptr_clear(g);
	return NULL;
}

struct syncer {
	int done;
	pid_t tid;
};

static void *syncer_fn(void *arg)
{
	struct syncer *s = arg;

	s->tid = (pid_t)syscall(SYS_gettid);
	synchronize_shazptr(&obj_a);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* A reader holds &obj_a; a synchronize_shazptr(&obj_a) waits until it lets go. */
static void shazptr_wait_once(void)
{
	struct holder h = { 0, 0, 0 };
	struct syncer s = { 0 };
	pthread_t th, ts;
	uint64_t end = now_ms() + DEADLINE_MS;

	CHECK(pthread_create(&th, NULL, holder_fn, &h) == 0, "holder");
	while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE) && now_ms() < end)
		sleep_ms(1);
	CHECK(h.held, "the holder did not take its guard");
	CHECK(pthread_create(&ts, NULL, syncer_fn, &s) == 0, "syncer");
	CHECK(kk_shazptr_scan(&obj_a) == -EBUSY, "the holder is seen");
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	join_gone(ts, &s.tid);
	join_gone(th, &h.tid);
	CHECK(s.done, "synchronize_shazptr returned");
}

struct tracked {
	int v;
};

static const struct debug_obj_descr tracked_descr = { .name = "threads_prog" };

/* Debug objects on, with trackers freed so that the free worker is queued. */
static void debug_objects_churn(void)
{
	enum { N = 4096 };
	static struct tracked objs[N];

	CHECK(kk_debug_objects_enable() == 0, "kk_debug_objects_enable");
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < N; i++)
			debug_object_init(&objs[i], &tracked_descr);
		for (int i = 0; i < N; i++)
			debug_object_free(&objs[i], &tracked_descr);
	}
}

/* ---- modes --------------------------------------------------------------------------- */

static int mode_lazy(void)
{
	int workers, n = count_tasks("kk-worker", &workers);

	CHECK(n == 1, "%d threads at start, before anything was needed", n);
	/* A deferred decrement needs the worker: now it starts. */
	CHECK(static_branch_deferred_inc(&dk_long) == 0, "inc");
	CHECK(static_branch_slow_dec_deferred(&dk_long) == 0, "dec");
	n = count_tasks("kk-worker", &workers);
	CHECK(n == 2 && workers == 1, "%d threads, %d workers, after the first deferred work", n,
	      workers);
	static_key_deferred_flush(&dk_long);
	CHECK(static_key_count(&dk_long.key.key) == 0, "flushed");
	/* The facilities share it: still one library thread. */
	debug_objects_churn();
	shazptr_wait_once();
	n = count_tasks("kk-worker", &workers);
	CHECK(n == 2 && workers == 1, "%d threads, %d workers", n, workers);
	return 0;
}

static int mode_stop(void)
{
	int workers, n;
	uint64_t deadline;

	/* Busy: shazptr waited on the worker, debug objects queued their free
	 * worker, a deferred decrement is pending. */
	kk_shazptr_set_skip_synchronize_self_scan(true);
	shazptr_wait_once();
	debug_objects_churn();
	/* The decrement must still be pending when the worker stops.  On a busy
	 * machine its timeout may pass before kk_threads_stop() does, and then
	 * the worker rightly ran it: try again with a longer timeout. */
	for (unsigned long t = SHORT_MS;; t *= 4) {
		dk.timeout = t;	/* jump_label_rate_limit() takes a static_key_deferred only */
		CHECK(static_branch_deferred_inc(&dk) == 0, "inc");
		CHECK(static_branch_slow_dec_deferred(&dk) == 0, "dec");
		n = count_tasks("kk-worker", &workers);
		CHECK(workers == 1, "%d threads, %d workers", n, workers);

		deadline = now_ms() + t;
		CHECK(kk_threads_stop() == 0, "kk_threads_stop");
		n = count_tasks("kk-worker", &workers);
		CHECK(n == 1, "%d threads after kk_threads_stop()", n);
		if (static_key_count(&dk.key.key) == 1)
			break;
		CHECK(t < DEADLINE_MS, "the deferred decrement always ran before kk_threads_stop()");
		CHECK(kk_threads_start() == 0, "kk_threads_start");
	}

	/* Nothing runs while stopped: the decrement's time comes and goes. */
	while (now_ms() < deadline + 5 * SHORT_MS)
		sleep_ms(SHORT_MS);
	CHECK(static_key_count(&dk.key.key) == 1, "the deferred decrement ran while stopped");

	/* The facilities work without the worker, in the caller. */
	shazptr_wait_once();
	debug_objects_churn();
	CHECK(static_branch_deferred_inc(&dk_long) == 0, "inc");
	CHECK(static_branch_slow_dec_deferred(&dk_long) == 0, "dec");
	static_key_deferred_flush(&dk_long);
	CHECK(static_key_count(&dk_long.key.key) == 0, "the flush ran in the caller");
	n = count_tasks("kk-worker", &workers);
	CHECK(n == 1, "%d threads while stopped", n);
	CHECK(kk_threads_stop() == 0, "stopping twice is harmless");

	CHECK(kk_threads_start() == 0, "kk_threads_start");
	CHECK(wait_count(&dk.key.key, 0), "the pending deferred decrement did not resume");
	n = count_tasks("kk-worker", &workers);
	CHECK(n == 2 && workers == 1, "%d threads, %d workers after kk_threads_start()", n,
	      workers);
	shazptr_wait_once();
	return 0;
}

static int apply_seccomp(void)
{
	struct sock_filter allow[] = { BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW) };
	struct sock_fprog prog = { 1, allow };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	/* No SECCOMP_FILTER_FLAG_TSYNC: this thread only, as OpenSSH does. */
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog))
		return -errno;
	return 0;
}

static int mode_seccomp(void)
{
	int workers, n, threads;

	CHECK(static_branch_deferred_inc(&dk_long) == 0, "inc");
	CHECK(static_branch_slow_dec_deferred(&dk_long) == 0, "dec");
	n = count_tasks("kk-worker", &workers);
	CHECK(workers == 1, "%d threads, %d workers", n, workers);
	CHECK(kk_threads_stop() == 0, "kk_threads_stop");
	n = count_tasks("kk-worker", &workers);
	CHECK(n == 1, "%d threads after kk_threads_stop()", n);
	n = apply_seccomp();
	if (n) {
		printf("seccomp unavailable (%s): skipped\n", strerror(-n));
		return 77;
	}
	CHECK(kk_threads_start() == 0, "kk_threads_start");
	n = count_tasks("kk-worker", &workers);
	CHECK(workers == 1, "%d threads, %d workers after kk_threads_start()", n, workers);
	CHECK(all_seccomp(2, &threads), "a thread is outside the sandbox");
	CHECK(threads == 2, "%d threads", threads);
	static_key_deferred_flush(&dk_long);
	CHECK(static_key_count(&dk_long.key.key) == 0, "the worker ran the flushed decrement");
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int ret;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(mode, "lazy"))
		ret = mode_lazy();
	else if (!strcmp(mode, "stop"))
		ret = mode_stop();
	else if (!strcmp(mode, "seccomp"))
		ret = mode_seccomp();
	else {
		fprintf(stderr, "usage: threads_prog lazy|stop|seccomp\n");
		return 2;
	}
	if (!ret)
		printf("threads_prog %s: ok\n", mode);
	return ret;
}
