// SPDX-License-Identifier: MIT
/*
 * Stopping the other threads of a panicking process.
 *
 * The owner lists /proc/self/task (kk_list_tasks(): open(2)+getdents64(2),
 * no malloc, no opendir) and sends each thread the library's park signal
 * (kk_park_signal(), the one signal library threads leave unblocked) with
 * tgkill(2).  The
 * handler is installed then, not at load: the signal's disposition is the
 * program's until it panics.  The handler blocks every signal, records its tid, wakes the
 * owner with a futex and parks in rt_sigtimedwait() on an empty set: a sleep
 * that no signal ends (the mask blocks them all) and that costs no CPU.  It
 * returns only with EINTR when the thread is stopped and continued (SIGSTOP,
 * a ptrace attach): the parked thread then checks whether a tracer is
 * attached and tells the owner, which is how "wait for debugger" wakes up.
 *
 * The owner waits on the futex against an absolute CLOCK_MONOTONIC deadline,
 * then lists /proc/self/task again for threads created meanwhile, until a
 * listing finds no new thread.  Threads that did not park in time (they block
 * the signal, or sit in an uninterruptible sleep) are reported by tid, name
 * and state: a program thread that blocks the signal is named as such, a
 * library thread that did not park is reported as a library bug.
 * No descriptor is kept open from load to panic (out of descriptors, the
 * lister uses a helper process: see src/common/tasks.c).
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "panic/internal.h"

static int panic_stop_sig;		/* the park signal, once its handler is in */
int panic_debug_evfd = -1;
int panic_debug_wanted;

#define KKP_MAX_THREADS	4096

static int parked_count;		/* futex word: number of parked threads */
static int parked_slots;
static pid_t parked_tids[KKP_MAX_THREADS];
static pid_t signalled[KKP_MAX_THREADS];
static int nsignalled;
static int overflow;			/* threads beyond KKP_MAX_THREADS */

/* ---- listing the threads (src/common/tasks.c) ------------------------------------------- */

static pid_t listed[KKP_MAX_THREADS];

int panic_for_each_task(int (*fn)(pid_t tid, void *arg), void *arg)
{
	int n = kk_list_tasks(listed, KKP_MAX_THREADS);

	if (n < 0)
		return n;
	if (n > KKP_MAX_THREADS)
		n = KKP_MAX_THREADS;
	for (int i = 0; i < n; i++)
		if (fn(listed[i], arg))
			return 1;
	return 0;
}

static void futex_wake_all(int *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE | FUTEX_PRIVATE_FLAG, INT_MAX, NULL, NULL, 0);
}

void panic_park_self(void)
{
	uint64_t all = ~0ull, none = 0;
	pid_t me;
	int slot;

	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, (size_t)(_NSIG / 8));
	me = panic_gettid();
	slot = __atomic_fetch_add(&parked_slots, 1, __ATOMIC_RELAXED);
	if (slot < KKP_MAX_THREADS)
		__atomic_store_n(&parked_tids[slot], me, __ATOMIC_RELEASE);
	__atomic_fetch_add(&parked_count, 1, __ATOMIC_RELEASE);
	futex_wake_all(&parked_count);
	for (;;) {
		long r = syscall(SYS_rt_sigtimedwait, &none, NULL, NULL, (size_t)(_NSIG / 8));

		if (r < 0 && errno == EINTR && KKP_LOAD(panic_debug_wanted) && panic_tracer_pid(0) > 0) {
			int fd = KKP_LOAD(panic_debug_evfd);
			uint64_t one = 1;

			if (fd >= 0 && write(fd, &one, sizeof(one)) < 0)
				continue;
		}
	}
}

static void stop_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	/* Only our own panic stops us; a stray signal from outside is ignored. */
	if (!KKP_LOAD(panic_owner) || !si || si->si_pid != panic_getpid())
		return;
	panic_park_self();
}

/* Install the park handler (at the panic: the signal is the program's until then). */
static int stop_install(void)
{
	struct sigaction sa;
	int sig = kk_park_signal();

	memset(&sa, 0, sizeof(sa));
	kk_handler_note(stop_handler);
	sa.sa_sigaction = stop_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL))
		return 0;
	return sig;
}

static int is_signalled(pid_t tid)
{
	for (int i = 0; i < nsignalled; i++)
		if (signalled[i] == tid)
			return 1;
	return 0;
}

static int is_parked(pid_t tid)
{
	int n = __atomic_load_n(&parked_slots, __ATOMIC_ACQUIRE);

	if (n > KKP_MAX_THREADS)
		n = KKP_MAX_THREADS;
	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&parked_tids[i], __ATOMIC_ACQUIRE) == tid)
			return 1;
	return 0;
}

struct scan {
	pid_t me, pid;
	int found;
};

static int signal_one(pid_t tid, void *arg)
{
	struct scan *sc = arg;

	if (tid == sc->me || is_signalled(tid))
		return 0;
	if (syscall(SYS_tgkill, sc->pid, tid, panic_stop_sig) != 0)
		return 0;	/* ESRCH: it exited */
	if (nsignalled < KKP_MAX_THREADS)
		signalled[nsignalled++] = tid;
	else
		overflow++;
	sc->found++;
	return 0;
}

static int count_parked(void)
{
	int n = 0;

	for (int i = 0; i < nsignalled; i++)
		n += is_parked(signalled[i]);
	return n;
}

/* Wait until every signalled thread parked or the deadline passed: 1 if all did. */
static int wait_parked(uint64_t deadline)
{
	for (;;) {
		int seen = __atomic_load_n(&parked_count, __ATOMIC_ACQUIRE);
		uint64_t now;
		struct timespec ts;

		if (count_parked() == nsignalled)
			return 1;
		now = kk_now_ns();
		if (now >= deadline)
			return 0;
		ts.tv_sec = (time_t)(deadline / 1000000000ull);
		ts.tv_nsec = (long)(deadline % 1000000000ull);
		syscall(SYS_futex, &parked_count, FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG, seen, &ts,
			NULL, FUTEX_BITSET_MATCH_ANY);
	}
}

static int task_exists(pid_t tid)
{
	char buf[8];

	return !kk_task_comm(tid, buf, sizeof(buf));
}

/* Does @tid block @sig?  1, 0, or -1 when unknown (from SigBlk in its status). */
static int blocks_signal(pid_t tid, int sig)
{
	uint64_t m;

	if (kk_task_sigblk(tid, &m))
		return -1;
	return !!(m & (1ull << (sig - 1)));
}

static void report_missing(pid_t tid)
{
	char comm[32], state[2] = "?";

	if (kk_task_comm(tid, comm, sizeof(comm))) {
		panic_dprintf(KKP_FD, "kernelkit:   thread %d exited before it could be stopped\n", (int)tid);
		return;
	}
	if ((state[0] = kk_task_state(tid)) == '\0')
		state[0] = '?';
	if (kk_is_library_thread(tid))
		panic_dprintf(KKP_FD, "kernelkit:   BUG: library thread %d (%s) did not park (state %s); "
			    "please report this kernelkit bug\n", (int)tid, comm, state);
	else if (blocks_signal(tid, panic_stop_sig) == 1)
		panic_dprintf(KKP_FD, "kernelkit:   thread %d (%s) did not stop (state %s; it blocks "
			    "signal %d, the park signal)\n", (int)tid, comm, state, panic_stop_sig);
	else
		panic_dprintf(KKP_FD, "kernelkit:   thread %d (%s) did not stop (state %s)\n",
			    (int)tid, comm, state);
}

void panic_stop_others(struct kk_panic_stats *st)
{
	struct scan sc = { panic_gettid(), panic_getpid(), 0 };
	uint64_t deadline = kk_now_ns() + (uint64_t)KKP_LOAD(panic_set.stop_timeout_ms) * 1000000ull;
	int all = 1, missing = 0, rounds = 0;
	uint64_t el;

	if (!panic_stop_sig)
		panic_stop_sig = stop_install();
	if (!panic_stop_sig) {
		panic_dprintf(KKP_FD, "kernelkit: cannot install the park signal's handler: "
			    "other threads keep running\n");
		return;
	}
	do {
		sc.found = 0;
		if (panic_for_each_task(signal_one, &sc) < 0) {
			panic_dprintf(KKP_FD, "kernelkit: cannot list /proc/self/task: other threads keep running\n");
			return;
		}
		all = wait_parked(deadline);
	} while (sc.found && ++rounds < 64);

	st->threads_signalled = nsignalled + overflow;
	st->threads_parked = count_parked();
	if (!all) {
		/* Threads that exited after the signal never park: they are not missing. */
		for (int i = 0; i < nsignalled; i++)
			if (!is_parked(signalled[i]) && task_exists(signalled[i]))
				missing++;
		all = !missing;
	}
	if (all && !overflow) {
		st->parked_ns = kk_now_ns();
		el = st->parked_ns - st->enter_ns;
		panic_dprintf(KKP_FD, "kernelkit: stopped %d other thread%s in %lu.%03lu ms\n",
			    st->threads_parked, st->threads_parked == 1 ? "" : "s",
			    (unsigned long)(el / 1000000), (unsigned long)(el / 1000 % 1000));
		return;
	}
	st->threads_missing = missing + overflow;
	panic_dprintf(KKP_FD, "kernelkit: stopped %d of %d other threads; %d did not stop within %d ms:\n",
		    st->threads_parked, st->threads_signalled, st->threads_missing,
		    KKP_LOAD(panic_set.stop_timeout_ms));
	for (int i = 0; i < nsignalled; i++)
		if (!is_parked(signalled[i]))
			report_missing(signalled[i]);
	if (overflow)
		panic_dprintf(KKP_FD, "kernelkit:   %d more threads were signalled but not tracked\n", overflow);
}
