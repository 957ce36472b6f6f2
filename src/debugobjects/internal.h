/* SPDX-License-Identifier: MIT */
/* Debug objects: what the hash/state code, the pools and the reports share. */
#ifndef KK_ODEBUG_INTERNAL_H
#define KK_ODEBUG_INTERNAL_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include <kernelkit/debugobjects.h>

#define ODEBUG_HASH_BITS	14
#define ODEBUG_HASH_SIZE	(1u << ODEBUG_HASH_BITS)
#define ODEBUG_BATCH_SIZE	16
#define ODEBUG_CHUNK_SHIFT	12
#define ODEBUG_CHUNK_SIZE	(1ul << ODEBUG_CHUNK_SHIFT)
#define ODEBUG_CHUNK_MASK	(~(ODEBUG_CHUNK_SIZE - 1))
#define ODEBUG_POOL_SIZE	(64 * ODEBUG_BATCH_SIZE)
#define ODEBUG_POOL_MIN_LEVEL	(ODEBUG_POOL_SIZE / 4)
#define ODEBUG_FREE_WORK_MAX	(1024 / ODEBUG_BATCH_SIZE)
#define ODEBUG_FREE_WORK_DELAY_MS 100
#define ODEBUG_AVG_PERIOD_MS	10
#define ODEBUG_PRINT_LIMIT	5

#define odebug_likely(x)	__builtin_expect(!!(x), 1)
#define odebug_unlikely(x)	__builtin_expect(!!(x), 0)

#define ODEBUG_TLS __thread __attribute__((tls_model("initial-exec")))

/*
 * A tracker: struct debug_obj is public (<kernelkit/debugobjects.h>).  In a
 * hash bucket it is linked through node.next/node.pprev; in a pool only
 * node.next is used, and every tracker of a batch points at the batch's last
 * tracker (batch_last), so a whole batch moves between pools with a few
 * pointer writes.
 */

/* ---- a small spinlock (held for a few list operations at most) ------------- */

typedef struct { int v; } odebug_spin_t;

static inline void odebug_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline bool odebug_spin_trylock(odebug_spin_t *l)
{
	return !__atomic_load_n(&l->v, __ATOMIC_RELAXED) &&
	       !__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE);
}

static inline void odebug_spin_lock(odebug_spin_t *l)
{
	while (__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE)) {
		unsigned int n = 0;

		while (__atomic_load_n(&l->v, __ATOMIC_RELAXED)) {
			if (++n < 128)
				odebug_cpu_relax();
			else {
				sched_yield();	/* the holder may have been preempted */
				n = 0;
			}
		}
	}
}

static inline void odebug_spin_unlock(odebug_spin_t *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* relaxed atomic helpers for counters read without a lock */
#define ODEBUG_READ(x)		__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ODEBUG_WRITE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define ODEBUG_ADD(x, v)	__atomic_fetch_add(&(x), (v), __ATOMIC_RELAXED)

/* ---- signal safety --------------------------------------------------------------
 *
 * free() may run in a signal handler, and with the preload library free()
 * calls a hook.  The handler may have interrupted its own thread inside a
 * debug-objects operation that holds a bucket lock, a pool lock or the
 * depot lock, or that is half-way through changing the thread's tracker pool
 * (which has no lock: only its thread uses it).
 *
 * So every entry point that may take a lock counts itself in odebug_depth
 * (initial-exec TLS) for as long as it may hold one; fixups, which may call
 * the hooks again, run outside that section.  An entry that finds the depth
 * already raised on its thread is nested: it only try-locks (and skips, and
 * counts the skip in nested_skips, when it cannot get the lock), takes and
 * returns trackers through the lock-free spare list instead of the pools,
 * captures no backtrace and calls nothing that takes a lock.
 */
extern ODEBUG_TLS __attribute__((visibility("hidden"))) unsigned int odebug_depth;

/* Enter a section; true when this thread was already inside one (nested). */
static inline bool odebug_enter(void)
{
	unsigned int d = odebug_depth;

	odebug_depth = d + 1;
	/* a handler on this thread must see the depth before any lock is taken */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return d != 0;
}

static inline void odebug_leave(void)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	odebug_depth--;
}

/* Inside a section: was another one interrupted (or called into) on this thread? */
static inline bool odebug_nested(void)
{
	return odebug_depth > 1;
}

/* ---- core.c ------------------------------------------------------------------- */

extern int odebug_enabled;		/* tracking is on (checked by every slow path) */

/* ---- pool.c ------------------------------------------------------------------- */

void odebug_pool_init(void);		/* idempotent */
/* Before taking a bucket lock: register the thread, top up the global pool. */
void odebug_fill_pool(void);
/* A tracker for a bucket (called under the bucket lock).  NULL: out of trackers. */
struct debug_obj *odebug_alloc_tracker(void);
/* Give a tracker back (no bucket lock needed, none held by the caller required). */
void odebug_free_tracker(struct debug_obj *obj);
/* Give a list of trackers linked through ->next straight back to the slab. */
void odebug_free_to_slab(struct debug_obj *list, unsigned long n);
void odebug_pool_stats(struct kk_debug_objects_stats *st);
void odebug_pool_reset(void);		/* quiescent: every pooled tracker to the slab */
void odebug_worker_start(void);
void odebug_pool_atfork_prepare(void);
void odebug_pool_atfork_parent(void);
void odebug_pool_atfork_child(void);

/* ---- report.c ----------------------------------------------------------------- */

void odebug_print_object(const struct debug_obj *o, const char *msg);
void odebug_print_text(const char *text);
void odebug_stack_warning(const void *addr, bool is_on_stack);
bool odebug_on_stack(const void *addr);
extern int odebug_backtraces;
uint32_t odebug_stack_capture(void);
void odebug_report_reset(void);
void odebug_report_atfork_prepare(void);
void odebug_report_atfork_parent(void);
void odebug_report_atfork_child(void);

extern unsigned long odebug_warnings, odebug_fixups, odebug_maxchain, odebug_maxchecked;
extern unsigned long odebug_stack_warnings, odebug_oom_count;

#endif
