// SPDX-License-Identifier: MIT
/*
 * The trap window: no thread starts blocking SIGTRAP while a batch of the
 * int3 protocol may put a trap in its way (text_sync.h).
 *
 * The plan reads every thread's signal mask and uses the int3 protocol only
 * where no thread blocks SIGTRAP: a trap taken with SIGTRAP blocked kills
 * the process.  A mask read is a snapshot.  A worker that blocks every
 * signal as it starts (a pool growing under load, a storm of short workers)
 * used to do it after the plan had looked, and die of the next int3
 * (issue 22 audit: within 26 kkctl writes).
 *
 * So pthread_sigmask() and sigprocmask() are interposed, and a call that
 * would block SIGTRAP waits while a window is open, from just before the
 * plan reads the masks until the batch's last trap byte is gone.  The plan
 * and the call meet as in Dekker's algorithm: the call counts itself in,
 * then looks at the window; the plan opens the window, then waits for the
 * count to drain, so a mask is either changed before the plan reads it, or
 * after the batch.  Every other call (SIGTRAP not blocked by it, or no
 * window open) costs one load and a branch.  Masks set any other way (a raw
 * rt_sigprocmask system call, sigsetmask(), sigblock(), siglongjmp() to a
 * saved mask, pthread_attr_setsigmask_np(), a handler's sa_mask) do not
 * wait: docs/text_patching.md lists them.
 *
 * The functions do what glibc's do: the two signals glibc keeps for itself
 * (32, 33: thread cancellation and setxid) are never blocked, and
 * pthread_sigmask() returns the error without touching errno.  The system
 * call is made directly, so a static program gets the same (libc.a's are
 * weak aliases of its internal __sigprocmask and __pthread_sigmask, which
 * libc's own callers use).  Async-signal-safe, as POSIX requires: atomics
 * and futexes only.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/internal.h"
#include "text_sync.h"

/* window: 0 closed, 1 open, 2 open with a caller asleep on it (futex). */
enum { W_CLOSED, W_OPEN, W_WAITED };
static int window;
static pid_t window_owner;	/* the planning thread: never waits for itself */
static int changing;		/* futex: calls between counting in and their mask set */
static int waiting;		/* futex: calls that waited for a window, not yet counted in */

/* glibc's SIGCANCEL and SIGSETXID: bits 31 and 32 of the first word. */
#define GLIBC_PRIVATE_SIGS	(3ull << 31)

static int set_mask(int how, const sigset_t *set, sigset_t *old)
{
	sigset_t own;
	uint64_t w;
	int e, ret;

	if (set) {
		memcpy(&w, set, sizeof(w));
		if (w & GLIBC_PRIVATE_SIGS) {
			own = *set;
			w &= ~GLIBC_PRIVATE_SIGS;
			memcpy(&own, &w, sizeof(w));
			set = &own;
		}
	}
	/* errno stays the caller's (kk_raw_syscall4() is libc's syscall()
	 * off x86_64) */
	e = errno;
	ret = (int)-kk_raw_syscall4(SYS_rt_sigprocmask, how, (long)set, (long)old, _NSIG / 8);
	errno = e;
	return ret;
}

static bool blocks_trap(int how, const sigset_t *set)
{
	uint64_t w;

	if (!set || (how != SIG_BLOCK && how != SIG_SETMASK))
		return false;
	memcpy(&w, set, sizeof(w));
	return w >> (SIGTRAP - 1) & 1;
}

static void count_out(void)
{
	if (!__atomic_sub_fetch(&changing, 1, __ATOMIC_SEQ_CST) &&
	    __atomic_load_n(&window, __ATOMIC_SEQ_CST))
		kk_futex_wake(&changing, INT_MAX);
}

/*
 * Returns counted in, with no window open (or in the planner itself).  A
 * caller that had to wait stays counted in @waiting until it has seen the
 * window closed while counted in: the next window does not open before, so
 * a program that flips keys back to back cannot starve it (the plan that
 * opens it then waits for it to set its mask).
 */
static void count_in(void)
{
	bool waited = false;

	for (;;) {
		int w;

		__atomic_add_fetch(&changing, 1, __ATOMIC_SEQ_CST);
		w = __atomic_load_n(&window, __ATOMIC_SEQ_CST);
		/* The planner itself (a handler that interrupted it) cannot
		 * wait for its own batch: it blocks as it always could. */
		if (w == W_CLOSED ||
		    __atomic_load_n(&window_owner, __ATOMIC_RELAXED) == (pid_t)syscall(SYS_gettid)) {
			if (waited && !__atomic_sub_fetch(&waiting, 1, __ATOMIC_SEQ_CST))
				kk_futex_wake(&waiting, INT_MAX);
			return;
		}
		if (!waited)
			__atomic_add_fetch(&waiting, 1, __ATOMIC_SEQ_CST);
		waited = true;
		count_out();
		while (w != W_CLOSED) {
			if (w == W_WAITED ||
			    __atomic_compare_exchange_n(&window, &w, W_WAITED, false,
							__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
				kk_futex_wait(&window, W_WAITED, 0);
			w = __atomic_load_n(&window, __ATOMIC_SEQ_CST);
		}
	}
}

static int change_mask(int how, const sigset_t *set, sigset_t *old)
{
	int e, ret;

	if (!blocks_trap(how, set))
		return set_mask(how, set, old);
	e = errno;
	count_in();
	ret = set_mask(how, set, old);
	count_out();
	errno = e;
	return ret;
}

KK_INTERPOSE(pthread_sigmask)
int kk_interpose_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return change_mask(how, set, old);
}

KK_INTERPOSE(sigprocmask)
int kk_interpose_sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	int e = change_mask(how, set, old);

	if (!e)
		return 0;
	errno = e;
	return -1;
}

/* ---- the plan's side ---------------------------------------------------------------------- */

bool kk_sync_window_open(uint64_t deadline_ns)
{
	int c;

	/* Those that waited for the last window go first (bounded too: one
	 * may be stopped by a debugger). */
	while ((c = __atomic_load_n(&waiting, __ATOMIC_SEQ_CST)) && kk_now_ns() < deadline_ns)
		kk_futex_wait(&waiting, c, deadline_ns);
	__atomic_store_n(&window_owner, (pid_t)syscall(SYS_gettid), __ATOMIC_RELAXED);
	__atomic_store_n(&window, W_OPEN, __ATOMIC_SEQ_CST);
	while ((c = __atomic_load_n(&changing, __ATOMIC_SEQ_CST))) {
		if (kk_now_ns() >= deadline_ns)
			return false;
		kk_futex_wait(&changing, c, deadline_ns);
	}
	return true;
}

void kk_sync_done(void)
{
	if (__atomic_exchange_n(&window, W_CLOSED, __ATOMIC_SEQ_CST) == W_WAITED)
		kk_futex_wake(&window, INT_MAX);
	__atomic_store_n(&window_owner, 0, __ATOMIC_RELAXED);
}

void kk_sync_window_atfork_child(void)
{
	/* One thread: no call is changing a mask, and no batch is open. */
	__atomic_store_n(&window, W_CLOSED, __ATOMIC_RELAXED);
	__atomic_store_n(&window_owner, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&changing, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&waiting, 0, __ATOMIC_RELAXED);
}
