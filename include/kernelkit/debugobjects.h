/* SPDX-License-Identifier: MIT */
/*
 * Debug objects: life-cycle checking for objects embedded in other memory
 * (timers, work items, locks, ...).  The API is the kernel's
 * (include/linux/debugobjects.h): describe a type with a struct
 * debug_obj_descr, then call the hooks at each transition of an object:
 *
 *	debug_object_init(&t, &timer_descr);		init or re-init
 *	debug_object_activate(&t, &timer_descr);	armed / queued / locked
 *	debug_object_deactivate(&t, &timer_descr);	expired / run / unlocked
 *	debug_object_destroy(&t, &timer_descr);		never to be used again
 *	debug_object_free(&t, &timer_descr);		its memory goes away
 *
 * Misuse (activating an uninitialised object, re-initialising or freeing an
 * active one, using a destroyed one, freeing memory that still holds an active
 * object) prints
 *	ODEBUG: <op> <state> (active state N) object: <addr> object type: <name> hint: <sym>
 * (the first 5 are printed, all are counted) and calls the type's fixup.
 *
 * Tracking is off until KK_DEBUG_OBJECTS=1 is in the environment or
 * kk_debug_objects_enable() is called.  While off, each hook below is one
 * NOP (a static key; see <kernelkit/jump_label.h>).
 *
 * Differences from the kernel, all additive (kk_ prefix): a runtime pool
 * policy, a tracker limit, optional init/activate backtraces, a report of
 * objects still active at exit, a report callback, and a preload library
 * (libkernelkit-odebug.so) that checks free(), realloc() and munmap().
 * See docs/debugobjects.md.
 */
#ifndef KERNELKIT_DEBUGOBJECTS_H
#define KERNELKIT_DEBUGOBJECTS_H

#include <stdbool.h>
#include <stddef.h>

#include <kernelkit/jump_label.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

enum debug_obj_state {
	ODEBUG_STATE_NONE,
	ODEBUG_STATE_INIT,
	ODEBUG_STATE_INACTIVE,
	ODEBUG_STATE_ACTIVE,
	ODEBUG_STATE_DESTROYED,
	ODEBUG_STATE_NOTAVAILABLE,
	ODEBUG_STATE_MAX,
};

struct debug_obj_descr;
struct debug_obj;

/* The kernel's struct hlist_node, with its links typed as trackers. */
struct kk_debug_obj_node {
	struct debug_obj *next;
	struct debug_obj **pprev;
};

/*
 * The tracker of one object (the kernel's struct debug_obj).  The kernel's
 * fields, in its order: @node links the tracker into its hash bucket (or a
 * pool), @state is the life-cycle state, @astate the active state of
 * debug_object_active_state(), @object the tracked address, @descr its type.
 * The kernel keeps @object in a union with its pool link; here the pool link
 * is the separate @batch_last, and the init/activate backtraces
 * (KK_DEBUG_OBJECTS_BACKTRACE) are recorded too.  Trackers belong to the
 * library: read one with kk_debug_object_get().
 */
struct debug_obj {
	struct kk_debug_obj_node node;
	enum debug_obj_state state;
	unsigned int astate;
	void *object;
	const struct debug_obj_descr *descr;
	/* kernelkit additions */
	struct debug_obj *batch_last;	/* pools: the last tracker of this batch */
	unsigned int init_stack;	/* stack-depot handles, 0 = none */
	unsigned int act_stack;
};

/*
 * A tracked type.  Every callback is optional.  The fixups return true when
 * they repaired the object (and then count in the "fixups" statistic); they
 * are called without any internal lock held and may call the debug_object_*
 * hooks themselves.
 *
 * The kernel's idiom `static const struct debug_obj_descr d = { .name = "x" };`
 * is warning-free in C and in C++20 and later, with g++ and clang++ under
 * -Wall -Wextra -pedantic: in C++14 and later every callback has a default
 * member initializer (null), so -Wmissing-field-initializers has nothing to
 * report, and `{ "x" }` is quiet too.  C++11 cannot have them (an aggregate
 * may not have default member initializers there): write all eight fields,
 * `{ "x", 0, 0, 0, 0, 0, 0, 0 }`.  Designated initializers before C++20 are
 * a -pedantic error whatever the struct.  The layout is the same in C and C++.
 * The cost in C++14 and later: the struct is not trivial any more, so g++
 * -Wall (-Wclass-memaccess) warns about memset() on it; assign
 * `d = debug_obj_descr();` instead.
 */
#if defined(__cplusplus) && __cplusplus >= 201402L
#define __KK_ODB_NULL	= nullptr
#else
#define __KK_ODB_NULL
#endif
struct debug_obj_descr {
	const char *name;
	/* An address printed as "hint:" in reports (e.g. the timer's callback). */
	void *(*debug_hint)(void *addr) __KK_ODB_NULL;
	/* True when @addr is a statically initialised object (it needs no init). */
	bool (*is_static_object)(void *addr) __KK_ODB_NULL;
	bool (*fixup_init)(void *addr, enum debug_obj_state state) __KK_ODB_NULL;
	bool (*fixup_activate)(void *addr, enum debug_obj_state state) __KK_ODB_NULL;
	bool (*fixup_destroy)(void *addr, enum debug_obj_state state) __KK_ODB_NULL;
	bool (*fixup_free)(void *addr, enum debug_obj_state state) __KK_ODB_NULL;
	bool (*fixup_assert_init)(void *addr, enum debug_obj_state state) __KK_ODB_NULL;
};

/* ---- the out-of-line checks (call the inline hooks below instead) ---------- */

DECLARE_STATIC_KEY_FALSE(kk_debug_objects_key);

void __kk_odebug_init(void *addr, const struct debug_obj_descr *descr, int onstack);
int __kk_odebug_activate(void *addr, const struct debug_obj_descr *descr);
void __kk_odebug_deactivate(void *addr, const struct debug_obj_descr *descr);
void __kk_odebug_destroy(void *addr, const struct debug_obj_descr *descr);
void __kk_odebug_free(void *addr, const struct debug_obj_descr *descr, int onstack);
void __kk_odebug_assert_init(void *addr, const struct debug_obj_descr *descr);
void __kk_odebug_active_state(void *addr, const struct debug_obj_descr *descr,
			      unsigned int expect, unsigned int next);
void __kk_odebug_check_no_obj_freed(const void *addr, unsigned long size);

/* ---- the kernel's API ---------------------------------------------------------- */

static inline void debug_object_init(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_init(addr, descr, 0);
}

/* For an object on the calling thread's stack (checked against its real bounds). */
static inline void debug_object_init_on_stack(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_init(addr, descr, 1);
}

/* 0, or -EINVAL when the object was destroyed or unknown and no fixup fixed it. */
static inline int debug_object_activate(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		return __kk_odebug_activate(addr, descr);
	return 0;
}

static inline void debug_object_deactivate(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_deactivate(addr, descr);
}

static inline void debug_object_destroy(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_destroy(addr, descr);
}

static inline void debug_object_free(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_free(addr, descr, -1);
}

/*
 * The end of an on-stack object's life (the kernel's destroy_timer_on_stack()
 * pattern): debug_object_free(), after checking that @addr is on the calling
 * thread's stack.
 */
static inline void destroy_object_on_stack(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_free(addr, descr, 1);
}

static inline void debug_object_assert_init(void *addr, const struct debug_obj_descr *descr)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_assert_init(addr, descr);
}

/* An ACTIVE object whose active state is @expect moves to active state @next. */
static inline void debug_object_active_state(void *addr, const struct debug_obj_descr *descr,
					     unsigned int expect, unsigned int next)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_active_state(addr, descr, expect, next);
}

/*
 * The kernel's boot-time set-up calls.  The library sets itself up when
 * tracking is first switched on, so both are no-ops kept for code that calls
 * them (they do not switch tracking on).
 */
static inline void debug_objects_early_init(void) { }
static inline void debug_objects_mem_init(void) { }

/* Call before [addr, addr+size) is freed: active objects in it are reported. */
static inline void debug_check_no_obj_freed(const void *addr, unsigned long size)
{
	if (static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_check_no_obj_freed(addr, size);
}

/* ---- process-level extras (no kernel twin) --------------------------------------- */

/*
 * Switch tracking on or off.  0 or -errno (from the static key).  Switching
 * off forgets every tracked object.  KK_DEBUG_OBJECTS=1 switches it on at
 * load time.
 */
int kk_debug_objects_enable(void);
int kk_debug_objects_disable(void);
bool kk_debug_objects_enabled(void);

/*
 * The tracker pool policy (KK_DEBUG_OBJECTS_POLICY at load time):
 *   "base"    per-thread pool of 4 batches; trackers that do not fit the
 *             global pool go straight back to the slab
 *   "pcpu2x"  per-thread pool of 8 batches; otherwise as base
 *   "refill"  pcpu2x, overflow kept in a to-free pool that refills the
 *             per-thread pools aggressively; the free worker frees it all
 *   "ewma"    refill, and the free worker only frees as much as the moving
 *             average of trackers in use has fallen (the default)
 * Returns 0 or -EINVAL.  Safe at any time; best set before tracking starts.
 */
int kk_debug_objects_set_policy(const char *name);
const char *kk_debug_objects_policy(void);

/*
 * Most trackers that may exist at once (0: no limit but memory;
 * KK_DEBUG_OBJECTS_MAX_TRACKERS at load time).  Running out prints
 * "ODEBUG: Out of memory. ODEBUG disabled", forgets every object and switches
 * tracking off; the program carries on.
 */
void kk_debug_objects_set_max_trackers(unsigned long max);

/*
 * Record the backtraces of the init and the activate of each object and
 * print them with reports (KK_DEBUG_OBJECTS_BACKTRACE=1 at load time).
 */
void kk_debug_objects_set_backtraces(bool on);

/*
 * Where report text goes: NULL restores the default (stderr).  @fn gets one
 * complete report (one or more lines, NUL-terminated) per call, with no
 * internal lock held.
 */
typedef void (*kk_odebug_printer_fn)(const char *text, void *arg);
void kk_debug_objects_set_printer(kk_odebug_printer_fn fn, void *arg);

/* The kernel's debug_objects/stats, plus the moving average of trackers in use. */
struct kk_debug_objects_stats {
	unsigned long max_chain;
	unsigned long max_checked;
	unsigned long warnings;		/* all, printed or not */
	unsigned long fixups;
	unsigned long pool_free;	/* free trackers in the global and per-thread pools */
	unsigned long pool_pcp_free;	/* ... of which in per-thread pools */
	unsigned long pool_min_free;	/* lowest fill of the global pool */
	unsigned long pool_used;	/* trackers in use (estimate) */
	unsigned long pool_max_used;
	unsigned long on_free_list;	/* trackers in the to-free pool */
	unsigned long objs_allocated;	/* trackers taken from the slab */
	unsigned long objs_freed;	/* trackers given back to the slab */
	unsigned long avg_usage;	/* EWMA of trackers handed to per-thread pools */
	unsigned long stack_warnings;	/* on-stack annotation mismatches */
	unsigned long oom;		/* times tracking was switched off for lack of trackers */
	unsigned long nested_skips;	/* hooks skipped in a signal handler that interrupted
					 * its thread inside debug objects (lock held, or
					 * no spare tracker) */
};
void kk_debug_objects_get_stats(struct kk_debug_objects_stats *st);

/*
 * The tracker of @addr: true and its state when it is tracked, false when not.
 * @state and @astate may be NULL.
 */
bool kk_debug_object_lookup(const void *addr, enum debug_obj_state *state,
			    unsigned int *astate);

/*
 * A snapshot of @addr's tracker (its links cleared to NULL): true when
 * @addr is tracked, false (and *@out untouched) when it is not.
 */
bool kk_debug_object_get(const void *addr, struct debug_obj *out);

/*
 * Print the report of active objects, by type (what is printed at exit;
 * KK_DEBUG_OBJECTS_EXIT_REPORT=0 turns the exit report off).  Returns the
 * number of active objects.
 */
unsigned long kk_debug_objects_report_active(void);

/*
 * Run one round of the free worker now, as if its 100 ms delay had passed
 * (for tests and benchmarks).
 */
void kk_debug_objects_run_worker(void);

/*
 * Quiescent reset, for tests and benchmarks: forget every object, give every
 * pooled tracker (of every thread) back to the slab and zero the statistics
 * and the warning limit.  No other thread may be inside a debug_object call.
 */
void kk_debug_objects_reset(void);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif /* KERNELKIT_DEBUGOBJECTS_H */
