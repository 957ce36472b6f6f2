// SPDX-License-Identifier: MIT
/*
 * Library threads, the park signal, the services that own threads, fork
 * dispatch and futex waits.
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/kernelkit.h>
#include "common/internal.h"

/* ---- futex ------------------------------------------------------------------------- */

int kk_futex_wait(int *addr, int val, uint64_t deadline_ns)
{
	struct timespec ts = kk_ns_to_ts(deadline_ns);
	long r;

	/* WAIT_BITSET takes an absolute CLOCK_MONOTONIC deadline. */
	r = syscall(SYS_futex, addr, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, val,
		    deadline_ns ? &ts : NULL, NULL, FUTEX_BITSET_MATCH_ANY);
	if (r == 0 || errno == EAGAIN)
		return 0;
	return -errno;
}

void kk_futex_wake(int *addr, int n)
{
	syscall(SYS_futex, addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, n, NULL, NULL, 0);
}

/* ---- the park signal ----------------------------------------------------------------- */

static pthread_once_t park_once = PTHREAD_ONCE_INIT;
static int park_sig;

static void park_choose(void)
{
	const char *e = kk_getenv("KK_PANIC_SIGNAL");
	struct sigaction old;

	if (e && *e) {
		char *end;
		long v = strtol(e, &end, 10);

		if (!*end && v >= SIGRTMIN && v <= SIGRTMAX) {
			park_sig = (int)v;
			return;
		}
		kk_warn("ignoring KK_PANIC_SIGNAL=%.32s: not in %d..%d", e, SIGRTMIN, SIGRTMAX);
	}
	/* A real-time signal nobody has a handler for, from the top down. */
	for (int s = SIGRTMAX - 4; s >= SIGRTMIN + 4; s--) {
		if (sigaction(s, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL) {
			park_sig = s;
			return;
		}
	}
	park_sig = SIGRTMAX - 4;
}

int kk_park_signal(void)
{
	pthread_once(&park_once, park_choose);
	return park_sig;
}

/* ---- threads --------------------------------------------------------------------------- */

struct start {
	void *(*fn)(void *);
	void *arg;
	pid_t *tidp;		/* the creator's struct kk_thread, written first */
	char name[16];
	int started;		/* futex: the thread is named and recorded */
	int pooled;		/* in start_pool: the thread releases it */
};

/*
 * In a fork child's handlers the creator waits for the new thread's start
 * too, as at load: a child that installs a seccomp filter for all its
 * threads (SECCOMP_FILTER_FLAG_TSYNC) right after fork() killed a thread
 * still in glibc's start (rseq), 168 children of 200.  But boundedly: only
 * the forking thread came along, and a lock another parent thread held at
 * the fork (a sanitizer's allocator, say) can keep the new thread from
 * starting.  So such creations take their start record from here, not the
 * stack (the thread may outlive a wait that gave up), and a library built
 * with a sanitizer does not wait there at all.
 */
#define FORK_START_WAIT_NS	1000000000ull
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define KK_FORK_NO_WAIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define KK_FORK_NO_WAIT 1
#endif
#endif
static int in_fork_child;
static struct start start_pool[4];
static int start_busy[4];

/*
 * The tids of the running library threads, so that a panic can tell a library
 * thread that failed to park (a library bug) from a program thread that
 * blocks the park signal.  Lock-free: read from a panic.
 */
#define KK_MAX_LIB_THREADS	8
static pid_t lib_tids[KK_MAX_LIB_THREADS];

static int lib_tid_add(pid_t tid)
{
	for (int i = 0; i < KK_MAX_LIB_THREADS; i++) {
		pid_t zero = 0;

		if (__atomic_compare_exchange_n(&lib_tids[i], &zero, tid, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return i;
	}
	return -1;
}

bool kk_is_library_thread(pid_t tid)
{
	for (int i = 0; i < KK_MAX_LIB_THREADS; i++)
		if (tid && __atomic_load_n(&lib_tids[i], __ATOMIC_ACQUIRE) == tid)
			return true;
	return false;
}

static void *thread_main(void *p)
{
	struct start *st = p;
	void *(*fn)(void *) = st->fn;
	void *arg = st->arg;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	int slot;
	void *ret;

	/* First: a creator that stops us before fn runs joins by this id. */
	__atomic_store_n(st->tidp, tid, __ATOMIC_RELEASE);
	pthread_setname_np(pthread_self(), st->name);
	slot = lib_tid_add(tid);
	if (st->pooled) {	/* a bounded wait: wake it, give the record back */
		__atomic_store_n(&st->started, 1, __ATOMIC_RELEASE);
		kk_futex_wake(&st->started, 1);
		__atomic_store_n(&start_busy[st - start_pool], 0, __ATOMIC_RELEASE);
	} else {
		/* Last touch of *st (it is on the creator's stack); the wake
		 * uses only its address, and our waits recheck their condition. */
		__atomic_store_n(&st->started, 1, __ATOMIC_RELEASE);
		kk_futex_wake(&st->started, 1);
	}
	ret = fn(arg);
	if (slot >= 0)
		__atomic_store_n(&lib_tids[slot], 0, __ATOMIC_RELEASE);
	return ret;
}

void kk_thread_join(struct kk_thread *t)
{
	uint64_t deadline;
	pid_t tid;

	pthread_join(t->pt, NULL);
	tid = __atomic_load_n(&t->tid, __ATOMIC_ACQUIRE);
	deadline = kk_now_ns() + 1000000000ull;
	while (tid > 0 && syscall(SYS_tgkill, getpid(), tid, 0) == 0 && kk_now_ns() < deadline)
		sched_yield();
}

/*
 * The mask every library thread starts with: all blocked but the faults and
 * the park signal.  Where glibc takes it in the attributes (2.32), the thread
 * starts with it and the creator's own mask is never touched; elsewhere the
 * creator sets its mask for the call and the thread inherits it (two
 * rt_sigprocmask() calls more in every start).
 */
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 32))
#define KK_ATTR_SIGMASK 1
#endif

#ifdef KK_ATTR_SIGMASK
static int create_attr(pthread_t *pt, const sigset_t *mask, struct start *s)
{
	pthread_attr_t a;
	int ret = pthread_attr_init(&a);

	if (ret)
		return ret;
	ret = pthread_attr_setsigmask_np(&a, mask);
	if (!ret)
		ret = pthread_create(pt, &a, thread_main, s);
	pthread_attr_destroy(&a);
	return ret;
}
#endif

static int create_masked(pthread_t *pt, struct start *s)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
	sigset_t all, old;
	int ret;

	sigfillset(&all);
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		sigdelset(&all, faults[i]);
	sigdelset(&all, kk_park_signal());
#ifdef KK_ATTR_SIGMASK
	ret = create_attr(pt, &all, s);
	if (ret != ENOMEM)	/* the attribute's own allocation: try without it */
		return ret;
#endif
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(pt, NULL, thread_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* In a fork child (see start_pool): until the thread started, or the deadline. */
static void fork_start_wait(int *started)
{
#ifndef KK_FORK_NO_WAIT
	uint64_t deadline = kk_now_ns() + FORK_START_WAIT_NS;

	while (!__atomic_load_n(started, __ATOMIC_ACQUIRE) && kk_now_ns() < deadline)
		kk_futex_wait(started, 0, deadline);
#else
	(void)started;
#endif
}

/*
 * Returns once the thread runs, named and recorded as a library thread (so
 * that /proc and a panic see it as ours from the start); from a fork child's
 * handlers, once it runs or after a deadline (see start_pool).
 */
int kk_thread_create(struct kk_thread *t, const char *name, void *(*fn)(void *), void *arg)
{
	struct start st = { fn, arg, &t->tid, "", 0, 0 };
	struct start *s = &st;
	int ret;

	if (__atomic_load_n(&in_fork_child, __ATOMIC_RELAXED)) {
		s = NULL;
		for (size_t i = 0; !s && i < sizeof(start_pool) / sizeof(start_pool[0]); i++)
			if (!__atomic_exchange_n(&start_busy[i], 1, __ATOMIC_ACQUIRE))
				s = &start_pool[i];
		if (!s)
			return -EAGAIN;
		*s = st;
		s->pooled = 1;
	}
	strncpy(s->name, name, sizeof(s->name) - 1);
	__atomic_store_n(&t->tid, 0, __ATOMIC_RELAXED);
	ret = create_masked(&t->pt, s);
	if (ret) {
		if (s->pooled)
			__atomic_store_n(&start_busy[s - start_pool], 0, __ATOMIC_RELEASE);
		return -ret;
	}
	if (s->pooled) {
		fork_start_wait(&s->started);
		return 0;
	}
	while (!__atomic_load_n(&st.started, __ATOMIC_ACQUIRE))
		kk_futex_wait(&st.started, 0, 0);
	return 0;
}

/* ---- services ----------------------------------------------------------------------------- */

static pthread_mutex_t svc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kk_service *services KK_LOAD_DATA;
static int threads_stopped;

/* A lock-free push (no libc call at load): the walks under svc_lock see the
 * list before or after it, and services are never removed. */
KK_LOAD_TEXT void kk_service_register(struct kk_service *s)
{
	struct kk_service *head = __atomic_load_n(&services, __ATOMIC_RELAXED);

	do
		s->next = head;
	while (!__atomic_compare_exchange_n(&services, &head, s, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

bool kk_threads_stopped(void)
{
	return __atomic_load_n(&threads_stopped, __ATOMIC_ACQUIRE);
}

KK_EXPORT int kk_threads_stop(void)
{
	pthread_mutex_lock(&svc_lock);
	__atomic_store_n(&threads_stopped, 1, __ATOMIC_RELEASE);
	for (struct kk_service *s = __atomic_load_n(&services, __ATOMIC_ACQUIRE); s; s = s->next)
		if (s->stop)
			s->stop();
	pthread_mutex_unlock(&svc_lock);
	return 0;
}

KK_EXPORT int kk_threads_start(void)
{
	pthread_mutex_lock(&svc_lock);
	__atomic_store_n(&threads_stopped, 0, __ATOMIC_RELEASE);
	for (struct kk_service *s = __atomic_load_n(&services, __ATOMIC_ACQUIRE); s; s = s->next)
		if (s->start)
			s->start();
	pthread_mutex_unlock(&svc_lock);
	return 0;
}

/* ---- fork dispatch --------------------------------------------------------------------------- */

#define KK_FORK_MAX 16
static const struct kk_fork_ops *fork_ops[KK_FORK_MAX] KK_LOAD_DATA;
static int nfork_ops KK_LOAD_DATA;

/* Called from constructors, one thread: keep the table sorted by level. */
KK_LOAD_TEXT void kk_fork_register(const struct kk_fork_ops *ops)
{
	int i;

	if (nfork_ops == KK_FORK_MAX)
		abort();	/* a build error, not a run-time condition */
	for (i = nfork_ops; i > 0 && fork_ops[i - 1]->level > ops->level; i--)
		fork_ops[i] = fork_ops[i - 1];
	fork_ops[i] = ops;
	nfork_ops++;
}

static void fork_prepare(void)
{
	for (int i = nfork_ops - 1; i >= 0; i--)
		if (fork_ops[i]->prepare)
			fork_ops[i]->prepare();
}

static void fork_parent(void)
{
	for (int i = 0; i < nfork_ops; i++)
		if (fork_ops[i]->parent)
			fork_ops[i]->parent();
}

static void fork_child(void)
{
	/* Only the forking thread came along, and it is the program's. */
	for (int i = 0; i < KK_MAX_LIB_THREADS; i++)
		__atomic_store_n(&lib_tids[i], 0, __ATOMIC_RELAXED);
	for (size_t i = 0; i < sizeof(start_busy) / sizeof(start_busy[0]); i++)
		__atomic_store_n(&start_busy[i], 0, __ATOMIC_RELAXED);
	__atomic_store_n(&in_fork_child, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nfork_ops; i++)
		if (fork_ops[i]->child)
			fork_ops[i]->child();
	__atomic_store_n(&in_fork_child, 0, __ATOMIC_RELAXED);
}

KK_INIT(110) static void common_init(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
}
