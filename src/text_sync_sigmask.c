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
 * So pthread_sigmask() and sigprocmask() are interposed.  A call that would
 * block SIGTRAP while a window is open (from just before the plan reads the
 * masks until the batch's last trap byte is gone) never waits: it sets the
 * mask asked for less SIGTRAP, and notes a deferral.  When the window
 * closes, the block is handed back to the thread: a SIGTRAP queued to it,
 * marked as ours, whose handler adds SIGTRAP to the mask its sigreturn
 * restores.  Until then pthread_sigmask() reports SIGTRAP blocked, as asked.
 *
 * Why never wait (issue 37): a mask call may come from a signal handler
 * that interrupted any code, holding any lock (malloc's arena lock, in the
 * report), and the patcher may need that lock before it can close the
 * window; a child made by _Fork() or clone() inherits an open window and
 * no thread to close it; a handler may siglongjmp() out of the wait.  Each
 * hung or leaked.  The rule: no wait in these functions depends on anything
 * the interrupted code may hold, and every child, however it was made,
 * starts with no window (a window belongs to the process that opened it).
 *
 * How a call and a plan meet, without a count that a siglongjmp() could
 * leak: a call that would block SIGTRAP first blocks every signal (one
 * system call; when every signal was asked for, that is the whole change),
 * then looks at the window.  Had the window been closed, the plan opens it
 * after the look and reads the mask after that: it finds SIGTRAP blocked,
 * and does not use traps.  Had it been open, the call leaves SIGTRAP out.
 * While everything is blocked no handler runs, so nothing is left half done
 * if one jumps away.  The handed-back block is re-checked the same way: it
 * is applied in our SIGTRAP handler, which runs with every signal blocked,
 * only if no window is open then and the thread's mask is still the one the
 * deferring call left (a sigreturn or siglongjmp() since means the context
 * that asked is gone).
 *
 * Every other call (SIGTRAP not blocked by it, and no deferral outstanding
 * in the process) costs one load and a branch more than the system call.
 * Masks set any other way (a raw rt_sigprocmask system call, sigsetmask(),
 * sigblock(), siglongjmp() to a saved mask, pthread_attr_setsigmask_np(), a
 * handler's sa_mask) are not seen: docs/text_patching.md lists them.
 *
 * The functions do what glibc's do: the two signals glibc keeps for itself
 * (32, 33: thread cancellation and setxid) are never blocked, and
 * pthread_sigmask() returns the error without touching errno.  The system
 * call is made directly, so a static program gets the same (libc.a's are
 * weak aliases of its internal __sigprocmask and __pthread_sigmask, which
 * libc's own callers use).  Async-signal-safe, as POSIX requires: atomics
 * and system calls only.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/internal.h"
#include "text_poke.h"
#include "text_sync.h"

/* A deferred block of SIGTRAP: whose, and the mask the deferring call left. */
struct deferral {
	uint64_t who;		/* pid << 32 | tid; 0: free */
	uint64_t live;
};

/*
 * Threads that block SIGTRAP during one window at once.  Past that, a call
 * leaves SIGTRAP unblocked until the thread's next mask call
 * (docs/text_patching.md).  A table, not a list: a deferral is made and
 * ended in signal handlers.
 */
#define KK_DEFERRALS	256

static int window;		/* 1 while a window is open */
static pid_t window_pid;	/* the process that opened it */
static struct deferral deferred[KK_DEFERRALS];
static int n_deferred;		/* slots in use: every call looks first */
static unsigned long long n_made;	/* deferrals ever made (statistics) */

/* Our SIGTRAP, as queued by kk_sync_done(): si_code SI_QUEUE and this value. */
#define KK_DEFER_MAGIC		KK_SYNC_DEFER_MAGIC

#define SIGBIT(sig)		(1ull << ((sig) - 1))
#define TRAP			SIGBIT(SIGTRAP)
/* glibc's SIGCANCEL and SIGSETXID, and what the kernel never blocks. */
#define GLIBC_PRIVATE_SIGS	(SIGBIT(32) | SIGBIT(33))
#define UNBLOCKABLE		(SIGBIT(SIGKILL) | SIGBIT(SIGSTOP))
#define EVERY_SIGNAL		(~(GLIBC_PRIVATE_SIGS | UNBLOCKABLE))

/* ---- the mask, as one word -------------------------------------------------------------- */

/* errno stays the caller's (kk_raw_syscall4() is libc's syscall() off x86_64). */
static int raw_mask(int how, const uint64_t *set, uint64_t *old)
{
	int e = errno, ret;

	ret = (int)-kk_raw_syscall4(SYS_rt_sigprocmask, how, (long)set, (long)old, sizeof(*set));
	errno = e;
	return ret;
}

static uint64_t word_of(const sigset_t *set)
{
	uint64_t w;

	memcpy(&w, set, sizeof(w));
	return w;
}

static uint64_t apply(int how, uint64_t set, uint64_t cur)
{
	switch (how) {
	case SIG_BLOCK:
		return cur | set;
	case SIG_UNBLOCK:
		return cur & ~set;
	default:
		return set;
	}
}

static pid_t my_pid(void)
{
	return (pid_t)kk_raw_syscall4(SYS_getpid, 0, 0, 0, 0);
}

static uint64_t me(void)
{
	return (uint64_t)my_pid() << 32 | (uint32_t)kk_raw_syscall4(SYS_gettid, 0, 0, 0, 0);
}

/* The window is open, and it is this process's. */
static bool window_open_here(uint64_t who)
{
	return __atomic_load_n(&window, __ATOMIC_SEQ_CST) &&
	       __atomic_load_n(&window_pid, __ATOMIC_RELAXED) == (pid_t)(who >> 32);
}

/* ---- deferrals --------------------------------------------------------------------------- */

static void drop(struct deferral *d)
{
	uint64_t who;

	if (!d)
		return;
	who = __atomic_load_n(&d->who, __ATOMIC_RELAXED);
	if (who && __atomic_compare_exchange_n(&d->who, &who, 0, false, __ATOMIC_SEQ_CST,
					       __ATOMIC_RELAXED))
		__atomic_sub_fetch(&n_deferred, 1, __ATOMIC_SEQ_CST);
}

static struct deferral *find(uint64_t who)
{
	for (int i = 0; i < KK_DEFERRALS; i++)
		if (__atomic_load_n(&deferred[i].who, __ATOMIC_SEQ_CST) == who)
			return &deferred[i];
	return NULL;
}

/* The thread's deferral, if it still stands: its mask is the one it left. */
static struct deferral *standing(uint64_t who, uint64_t live)
{
	struct deferral *d = find(who);

	if (d && __atomic_load_n(&d->live, __ATOMIC_RELAXED) != live) {
		drop(d);
		d = NULL;
	}
	return d;
}

static struct deferral *claim(uint64_t who)
{
	__atomic_add_fetch(&n_deferred, 1, __ATOMIC_SEQ_CST);
	for (int i = 0; i < KK_DEFERRALS; i++) {
		uint64_t none = 0;

		if (__atomic_compare_exchange_n(&deferred[i].who, &none, who, false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			__atomic_add_fetch(&n_made, 1, __ATOMIC_RELAXED);
			return &deferred[i];
		}
	}
	__atomic_sub_fetch(&n_deferred, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/*
 * The mask to set for @want, every signal blocked meanwhile: @want, or
 * @want less SIGTRAP with a deferral noted.  The deferral is noted before
 * the window is looked at, and kk_sync_done() closes before it looks at
 * the deferrals: one of the two sees the other.
 */
static uint64_t settle(uint64_t want, uint64_t who, struct deferral *d)
{
	if (!(want & TRAP) || !window_open_here(who)) {
		drop(d);
		return want;
	}
	if (!d && !(d = claim(who)))
		return want & ~TRAP;	/* the table is full: see KK_DEFERRALS */
	__atomic_store_n(&d->live, want & ~TRAP, __ATOMIC_RELAXED);
	if (!window_open_here(who)) {
		drop(d);
		return want;
	}
	return want & ~TRAP;
}

void kk_sync_deferral_stats(unsigned long long *made, unsigned long long *standing)
{
	*made = __atomic_load_n(&n_made, __ATOMIC_RELAXED);
	*standing = (unsigned long long)__atomic_load_n(&n_deferred, __ATOMIC_SEQ_CST);
}

/* ---- the interposed functions ------------------------------------------------------------- */

/*
 * Block everything, look, set what was asked (less SIGTRAP while a window is
 * open).  @old gets the mask the program believes it had: with SIGTRAP
 * where a deferral stands.
 */
static int change_mask_looking(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t every = EVERY_SIGNAL, live, believed, want, final, who = 0;
	struct deferral *d = NULL;
	int ret;

	if (set && how != SIG_BLOCK && how != SIG_UNBLOCK && how != SIG_SETMASK)
		return EINVAL;
	want = set ? word_of(set) : 0;
	if ((ret = raw_mask(SIG_BLOCK, &every, &live)))
		return ret;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&n_deferred, __ATOMIC_SEQ_CST) || __atomic_load_n(&window, __ATOMIC_SEQ_CST))
		who = me();
	if (__atomic_load_n(&n_deferred, __ATOMIC_SEQ_CST))
		d = standing(who, live);
	believed = live | (d ? TRAP : 0);
	want = set ? apply(how, want, believed) : believed;
	want &= ~(GLIBC_PRIVATE_SIGS | UNBLOCKABLE);
	final = who ? settle(want, who, d) : want;
	if (final != (live | EVERY_SIGNAL))
		raw_mask(SIG_SETMASK, &final, NULL);
	if (old)
		memcpy(old, &believed, sizeof(believed));
	return 0;
}

static bool blocks_trap(int how, const sigset_t *set)
{
	return set && (how == SIG_BLOCK || how == SIG_SETMASK) && (word_of(set) & TRAP);
}

static int change_mask(int how, const sigset_t *set, sigset_t *old)
{
	uint64_t w, own;

	if (blocks_trap(how, set) || __atomic_load_n(&n_deferred, __ATOMIC_RELAXED))
		return change_mask_looking(how, set, old);
	if (!set || !((w = word_of(set)) & GLIBC_PRIVATE_SIGS))
		return raw_mask(how, (const uint64_t *)set, (uint64_t *)old);
	own = w & ~GLIBC_PRIVATE_SIGS;
	return raw_mask(how, &own, (uint64_t *)old);
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

/* ---- calls that wait with a mask (text_sync_waits.c) ------------------------------------- */

/*
 * sigsuspend(), ppoll(), pselect() and epoll_pwait() set a mask for as long
 * as they wait, and a handler they run runs with it: a plan that read the
 * thread's mask before the call took it for one that runs no site with
 * SIGTRAP blocked.  The same meeting as a mask call: every signal blocked
 * first, then the look.  Window closed: the plan opens it after the look
 * and reads SIGTRAP blocked (everything, then the wait's mask), and uses no
 * trap.  Window open: the wait's mask is passed less SIGTRAP, for the whole
 * wait (a handler it runs may then meet a trap, and survive it).  Nothing
 * is handed back: the mask ends with the call.
 */
const sigset_t *kk_sync_wait_begin(const sigset_t *set, struct kk_sync_wait *w)
{
	uint64_t every = EVERY_SIGNAL, want;

	w->restore = false;
	if (!set || !((want = word_of(set)) & TRAP))
		return set;
	if (raw_mask(SIG_BLOCK, &every, &w->live))
		return set;
	w->restore = true;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&window, __ATOMIC_SEQ_CST) || !window_open_here(me()))
		return set;
	want &= ~TRAP;
	w->use = *set;
	memcpy(&w->use, &want, sizeof(want));
	return &w->use;
}

/* The mask the thread had before the wait; errno stays the call's. */
void kk_sync_wait_end(const struct kk_sync_wait *w)
{
	if (w->restore)
		raw_mask(SIG_SETMASK, &w->live, NULL);
}

/* ---- the block handed back ---------------------------------------------------------------- */

/*
 * In our SIGTRAP handler (every signal blocked: a plan that reads this
 * thread's mask now sees SIGTRAP blocked).  True if @si was our hand-back,
 * used or spent.
 */
bool kk_sync_deferred_trap(const siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct deferral *d;
	uint64_t who, live;

	if (si->si_code != SI_QUEUE || si->si_value.sival_int != KK_DEFER_MAGIC ||
	    si->si_pid != my_pid())
		return false;
	who = me();
	live = word_of(&uc->uc_sigmask);
	if (!(d = standing(who, live)) || window_open_here(who))
		return true;	/* spent, or still deferred: the next close sends again */
	live |= TRAP;
	memcpy(&uc->uc_sigmask, &live, sizeof(live));
	drop(d);
	return true;
}

/*
 * @si was taken by sigwait(), sigwaitinfo() or sigtimedwait() of this
 * thread (text_sync_waits.c): true if it was our hand-back, which is then
 * applied here as our handler would (every signal blocked meanwhile), and
 * not the program's to see.
 */
bool kk_sync_waited_trap(const siginfo_t *si)
{
	uint64_t every = EVERY_SIGNAL, live, final, who;
	struct deferral *d;

	if (si->si_signo != SIGTRAP || si->si_code != SI_QUEUE ||
	    si->si_value.sival_int != KK_DEFER_MAGIC || si->si_pid != my_pid())
		return false;
	if (raw_mask(SIG_BLOCK, &every, &live))
		return true;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	who = me();
	final = live;
	if ((d = standing(who, live)) && !window_open_here(who)) {
		final |= TRAP;
		drop(d);
	}
	raw_mask(SIG_SETMASK, &final, NULL);
	return true;
}

/* Queue the hand-backs of this process's deferrals; a thread gone frees its slot. */
static void hand_back(void)
{
	pid_t pid = my_pid();
	siginfo_t si;

	if (kk_arch_trap_handler_ready())
		return;		/* kept: each thread applies its own at its next call */
	memset(&si, 0, sizeof(si));
	si.si_signo = SIGTRAP;
	si.si_code = SI_QUEUE;
	si.si_pid = pid;
	si.si_uid = getuid();
	si.si_value.sival_int = KK_DEFER_MAGIC;
	for (int i = 0; i < KK_DEFERRALS; i++) {
		uint64_t who = __atomic_load_n(&deferred[i].who, __ATOMIC_SEQ_CST);

		if (!who || (pid_t)(who >> 32) != pid)
			continue;
		if (kk_raw_syscall4(SYS_rt_tgsigqueueinfo, pid, (pid_t)(uint32_t)who, SIGTRAP,
				    (long)&si) == -ESRCH)
			drop(&deferred[i]);
	}
}

/* ---- the plan's side ---------------------------------------------------------------------- */

void kk_sync_window_open(void)
{
	__atomic_store_n(&window_pid, my_pid(), __ATOMIC_RELAXED);
	__atomic_store_n(&window, 1, __ATOMIC_SEQ_CST);
}

void kk_sync_done(void)
{
	__atomic_store_n(&window, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&n_deferred, __ATOMIC_SEQ_CST))
		hand_back();
}

void kk_sync_window_atfork_child(void)
{
	/* One thread, a new mm: no window, and the deferrals were the parent's. */
	__atomic_store_n(&window, 0, __ATOMIC_RELAXED);
	memset(deferred, 0, sizeof(deferred));
	__atomic_store_n(&n_deferred, 0, __ATOMIC_RELAXED);
}
