/* SPDX-License-Identifier: MIT */
/*
 * Making the other threads of the process see code that was just written.
 * Generic (no instruction encoding here): src/text_sync.c.
 *
 * A batch of text changes (src/text_poke.c) asks kk_sync_plan() how to
 * reach the other threads *before it writes anything*, so that a refusal
 * changes nothing:
 *
 *   KK_PATCH_LIVE   the arch's live protocol (x86: int3; aarch64: word
 *                   writes): write, kk_sync_round(), write, ...
 *                   Each round is membarrier(PRIVATE_EXPEDITED_SYNC_CORE) or,
 *                   where that is unavailable, the park signal sent to every
 *                   other thread, whose handler executes a serializing
 *                   instruction (liburcu's signal flavour).
 *   KK_PATCH_SWAP   the page swap: every page the batch touches is rebuilt
 *                   in a fresh anonymous page and swapped in with one
 *                   mremap() per run of pages, then one membarrier: no trap
 *                   and no signal reaches any thread.  Used, when the
 *                   protocol has traps, under a tracer or valgrind (which
 *                   would show every trap and park signal), and when some
 *                   thread blocks SIGTRAP (a trap there would kill the
 *                   process), including threads that block every signal;
 *                   and, left to itself, where @cow_hot says the batch
 *                   would break copy-on-write on pages that other threads
 *                   keep running (one TLB flush per run of pages instead of
 *                   one per page).
 *   KK_PATCH_STOP   stop_machine: every other thread waits in the park
 *                   signal's handler while the whole batch is written with no
 *                   trap at all, then executes a serializing instruction and
 *                   runs on.  Used where mremap() is refused and the
 *                   page swap would be needed, and when
 *                   KK_TEXT_SYNC=stop-machine asks for it.
 *
 * KK_TEXT_SYNC=auto|membarrier|signal|stop-machine|swap forces a choice
 * (tests, kk-bench); an impossible forced choice is an error, not a fallback.
 */
#ifndef KK_TEXT_SYNC_H
#define KK_TEXT_SYNC_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/internal.h"

enum kk_patch_how {
	KK_PATCH_LIVE = 1,
	KK_PATCH_STOP = 2,
	KK_PATCH_SWAP = 3,
};

/* First object with sites registered: register membarrier SYNC_CORE now (see
 * kk_text_arm()).  Idempotent, cannot fail (failure = signal fallback later). */
KK_WHITEBOX void kk_sync_arm(void);
/* In a fork child (one thread, new mm): membarrier registration is per mm. */
void kk_sync_atfork_child(void);

/*
 * How the next batch must be written (enum kk_patch_how), or -errno with a
 * one-line reason in @err.  @traps: the arch's live protocol uses traps
 * (kk_arch_text_traps), so who blocks SIGTRAP, a tracer and valgrind
 * matter; without traps only reaching every thread does.  @cow_hot (may be
 * NULL), called with @cow once the threads are listed where a page swap is
 * possible: the batch would break copy-on-write on pages that other threads
 * keep mapping, at a flush each (text_poke.c's cow_hot()).  -ENOTSUP when no way to reach every thread exists
 * (no membarrier SYNC_CORE and a thread blocks the park signal; one thread
 * blocks SIGTRAP and another the park signal; a forced KK_TEXT_SYNC that
 * cannot work).  The reason names the thread (tid and comm) and the signal.
 *
 * A thread that blocks both SIGTRAP and the park signal (glibc's helper
 * thread for SIGEV_THREAD timers and mq_notify(), a sigwaitinfo() loop: every
 * Criterion test process has one) can be neither stopped, nor synced by
 * signal, nor trapped.  It is assumed never to run a site: rounds and stops
 * leave it alone (membarrier still syncs it).  The remaining hazard.
 */
KK_WHITEBOX int kk_sync_plan(bool traps, bool (*cow_hot)(void *), void *cow, char *err,
			     size_t errlen);

/*
 * One sync round for the int3 protocol: returns once every other thread of
 * the process has executed a core-serializing instruction after the call
 * began (or cannot run stale code: it did not exist yet).  0 or -errno.
 * With one thread, a no-op.  Not async-signal-safe; called under the
 * jump-label lock only.
 */
KK_WHITEBOX int kk_sync_round(void);

/*
 * Run @fn(@arg) while every other thread waits in the park signal's handler;
 * after @fn, each executes a serializing instruction before it returns to
 * what it was doing.  @fn must not take locks or allocate (other threads may
 * hold malloc's lock).  Returns @fn's result, or -errno with @err filled and
 * @fn not called (a thread could not be stopped).
 */
KK_WHITEBOX int kk_stop_machine(int (*fn)(void *), void *arg, char *err, size_t errlen);

/*
 * The trap window (src/text_sync_sigmask.c): while it is open, a
 * pthread_sigmask() or sigprocmask() call that would block SIGTRAP blocks
 * the rest and defers SIGTRAP, without waiting; the window's close hands
 * the block back.  kk_sync_plan() opens it before it reads the threads'
 * masks, when the arch's live protocol has traps, and closes it again
 * unless it chose that protocol; kk_sync_done(), called once the batch has
 * no trap byte left, closes it (a no-op when it is closed).  Every
 * kk_sync_plan() is followed by one kk_sync_done().  A window belongs to
 * the process that opened it: a child made by _Fork() or clone() has none.
 */
KK_WHITEBOX void kk_sync_window_open(void);
KK_WHITEBOX void kk_sync_done(void);
void kk_sync_window_atfork_child(void);
/* In the SIGTRAP handler: @si is a deferred block handed back (used or
 * spent), so it is not a trap. */
KK_WHITEBOX bool kk_sync_deferred_trap(const siginfo_t *si, void *uc);
/* A hand-back is a SIGTRAP queued (SI_QUEUE) by this process to one of its
 * threads with this value ("kktr"); any other SIGTRAP is the program's. */
#define KK_SYNC_DEFER_MAGIC	0x6b6b7472
/* The same, for @si taken by a sigwait() of this thread: applied, and true
 * if it was ours (the program must not see it). */
bool kk_sync_waited_trap(const siginfo_t *si);

/*
 * Around a call that waits with mask @set (sigsuspend(), ppoll(), ...):
 * begin returns the mask to pass, end restores the thread's own.  Every
 * signal is blocked in between, outside the wait (text_sync_sigmask.c).
 */
struct kk_sync_wait {
	sigset_t use;
	uint64_t live;
	bool restore;
};
const sigset_t *kk_sync_wait_begin(const sigset_t *set, struct kk_sync_wait *w);
void kk_sync_wait_end(const struct kk_sync_wait *w);

/* Test-only: called by kk_sync_plan() with KK_PLAN_LISTED once it has
 * listed the threads the first time, before it reads their masks, and with
 * KK_PLAN_SURVEYED once it has read every thread's, before it decides. */
enum kk_plan_stage { KK_PLAN_LISTED, KK_PLAN_SURVEYED };
KK_WHITEBOX extern void (*kk_sync_plan_hook)(int stage);
/* Test-only: called by a round that has waited past its first limit, for
 * a pending thread @tid whose mask it has read and found blocking the park
 * signal, before it decides. */
KK_WHITEBOX extern void (*kk_sync_round_hook)(pid_t tid);
/* Test-only: called in the park handler by a thread that a stop released,
 * before it marks itself out of the handler. */
KK_WHITEBOX extern void (*kk_sync_leave_hook)(void);

/* mremap() refused a page swap: plan without it from now on. */
KK_WHITEBOX void kk_sync_swap_refused(void);

/* TracerPid from /proc/self/status: 0 when not traced or unknown. */
KK_WHITEBOX pid_t kk_tracer_pid(void);
/* RUNNING_ON_VALGRIND, cached. */
bool kk_under_valgrind(void);

struct kk_sync_stats {
	unsigned long long membarrier_rounds;	/* rounds done with membarrier */
	unsigned long long signal_rounds;	/* rounds done by signalling threads */
	unsigned long long signals;		/* park signals sent (rounds + stops) */
	unsigned long long stop_machines;	/* batches written under stop_machine */
	unsigned long long deferrals;		/* SIGTRAP blocks deferred (text_sync_sigmask.c) */
	unsigned long long deferrals_standing;	/* ... not yet handed back or dropped */
};
void kk_sync_deferral_stats(unsigned long long *made, unsigned long long *standing);
KK_WHITEBOX void kk_sync_get_stats(struct kk_sync_stats *st);
/* The method the last plan chose: "membarrier", "signal", "stop-machine", "swap",
 * "single-thread" or "unused". */
KK_WHITEBOX const char *kk_sync_method(void);

/* kk_gdb_stop_signal(), the gdb helper's breakpoint, is public API:
 * <kernelkit/kernelkit.h>. */

#endif
