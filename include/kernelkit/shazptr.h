/* SPDX-License-Identifier: MIT */
/*
 * Simple hazard pointers (shazptr): wait for the readers of one pointer.
 *
 * A reader publishes a pointer in its thread's slot:
 *
 *	struct shazptr_guard g = shazptr_acquire(bucket);
 *	... walk what `bucket` leads to ...
 *	shazptr_clear(g);
 *
 * An updater unpublishes an object and then calls synchronize_shazptr(bucket),
 * which returns once no thread holds `bucket` (or the wildcard) in its slot
 * at any moment after the call started; then it may free what it unpublished.
 *
 * Semantics follow the kernel's v1 shazptr series (Boqun Feng, "Introduce simple hazard pointers for lockdep", June 2025), adapted to user
 * space:
 *  - One slot per thread, registered automatically on the thread's first
 *    acquire and released when the thread exits (a thread that exits while
 *    holding a guard stops blocking synchronizers at that point).
 *  - Guards nest strictly LIFO (normal code, then signal handlers on top).  A
 *    nested acquire finds the slot taken and publishes SHAZPTR_WILDCARD
 *    instead, which blocks every synchronize_shazptr() until the outermost
 *    guard is cleared.  Acquire and clear are async-signal-safe.
 *  - A guard belongs to the thread that acquired it; clear it in that thread.
 *  - Readers pay one full fence per acquire (xchg on x86-64); updaters never
 *    send IPIs (no membarrier).
 *  - synchronize_shazptr() scans all slots itself first; if a reader blocks
 *    it, the wait is handed to a scan thread that batches all waiters over one
 *    snapshot of the slots while the waiters sleep on a futex.
 *  - Calling synchronize_shazptr(p) while holding a guard in the same thread
 *    deadlocks (as synchronize_rcu() inside rcu_read_lock() would); a warning
 *    is printed once.
 *  - fork(): the child keeps only the forking thread's slot.
 */
#ifndef KERNELKIT_SHAZPTR_H
#define KERNELKIT_SHAZPTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* Published by nested acquires: blocks every synchronize_shazptr(). */
#define SHAZPTR_WILDCARD ((void *)~(uintptr_t)0)

struct shazptr_guard {
	void **slot;
	bool use_wildcard;
};

/* ---- internals used by the inline fast path -------------------------- */
/* This thread's slot, NULL until the thread registers. */
extern __thread void **__kk_shazptr_slot __attribute__((__tls_model__("initial-exec")));
/* Register the calling thread (async-signal-safe); returns its slot. */
void **__kk_shazptr_register_thread(void);

/* Store @val into @slot, then a full memory barrier. */
static inline void __kk_shazptr_publish(void **slot, void *val)
{
#if defined(__x86_64__) || defined(__i386__)
	/* A locked instruction: the store and a full fence in one. */
	(void)__atomic_exchange_n(slot, val, __ATOMIC_SEQ_CST);
#else
	__atomic_store_n(slot, val, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}
/* ---------------------------------------------------------------------- */

/*
 * Protect @ptr: until the returned guard is cleared, synchronize_shazptr(ptr)
 * waits.  If this thread already holds a guard, the wildcard is published
 * instead (and guard.use_wildcard is set).  @ptr NULL protects nothing.
 */
static inline struct shazptr_guard shazptr_acquire(void *ptr)
{
	struct shazptr_guard g;
	void **slot = __kk_shazptr_slot;

	if (__builtin_expect(slot == NULL, 0))
		slot = __kk_shazptr_register_thread();
	g.slot = slot;
	/*
	 * Check-then-store is safe per thread: anything that can interrupt us
	 * here (a signal handler) runs to completion, LIFO, before we resume.
	 */
	if (__builtin_expect(__atomic_load_n(slot, __ATOMIC_RELAXED) == NULL, 1)) {
		g.use_wildcard = false;
		__kk_shazptr_publish(slot, ptr);
	} else {
		g.use_wildcard = true;
		__kk_shazptr_publish(slot, SHAZPTR_WILDCARD);
	}
	return g;
}

/* End the protection of @guard.  Only the outermost guard empties the slot. */
static inline void shazptr_clear(struct shazptr_guard guard)
{
	if (!guard.use_wildcard)
		__atomic_store_n(guard.slot, (void *)0, __ATOMIC_RELEASE);
}

/*
 * Wait until every thread that held @ptr or SHAZPTR_WILDCARD in its slot when
 * the call started has been seen without it.  Sleeps (never spins) when it has
 * to wait; may be called from any thread that holds no guard.  NULL and
 * SHAZPTR_WILDCARD are rejected (return at once).
 */
void synchronize_shazptr(void *ptr);

/* ---- kernelkit extras (no kernel twin) ------------------------------- */

/*
 * One scan, as synchronize_shazptr()'s self-scan does, without waiting:
 * 0 if no slot holds @ptr or the wildcard, -EBUSY if one does,
 * -EINVAL for NULL or SHAZPTR_WILDCARD.
 */
int kk_shazptr_scan(const void *ptr);

/*
 * The skip_synchronize_self_scan setting: when true, synchronize_shazptr()
 * skips its own scan and always hands the wait to the scan thread.  Returns
 * the previous value.  Also set by the environment variable
 * KK_SHAZPTR_SKIP_SELF_SCAN=1 at start-up and by writing 0/1 to the control
 * file shazptr/skip_synchronize_self_scan.
 */
bool kk_shazptr_set_skip_synchronize_self_scan(bool skip);
bool kk_shazptr_get_skip_synchronize_self_scan(void);

struct kk_shazptr_stats {
	uint64_t sync_calls;		/* synchronize_shazptr() calls */
	uint64_t sync_scan_thread;	/* ... of which waited via the scan thread */
	uint64_t longest_wait_ns;	/* longest synchronize_shazptr() call */
	uint64_t scan_rounds;		/* snapshots taken by the scan thread */
	uint64_t slots;			/* per-thread slots allocated */
	uint64_t slots_in_use;		/* ... of which owned by a live thread */
};
/* Snapshot of the counters (also the text of control file shazptr/stats). */
void kk_shazptr_get_stats(struct kk_shazptr_stats *st);
/* Zero the counters (also: write "reset" to shazptr/stats). */
void kk_shazptr_reset_stats(void);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif /* KERNELKIT_SHAZPTR_H */
