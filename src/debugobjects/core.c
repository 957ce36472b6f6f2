// SPDX-License-Identifier: MIT
/*
 * Debug objects: the hash of trackers and the state machine.
 *
 * Trackers live in 2^14 buckets keyed by address >> 12, each with its own
 * spinlock, so a range check visits only the buckets of the range's pages.
 * Every transition follows the kernel's table (see docs/debugobjects.md);
 * reports and fixups run after the bucket lock is dropped, on a copy of the
 * tracker, so a fixup may call the hooks again.
 *
 * Every entry point may run in a signal handler (free() calls
 * __kk_odebug_check_no_obj_freed() under the preload library): see "signal
 * safety" in internal.h for the rules a nested entry follows.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "debugobjects/internal.h"
#include <kernelkit/control.h>
#include "control.h"

KK_EXPORT DEFINE_STATIC_KEY_FALSE(kk_debug_objects_key);

int odebug_enabled KK_LOAD_DATA;	/* read at exit (odebug_exit) */
static unsigned long odebug_nested_skips;	/* nested entries that could not take a lock */
ODEBUG_TLS __attribute__((visibility("hidden"))) unsigned int odebug_depth;

struct odebug_bucket {
	struct debug_obj *first;
	odebug_spin_t lock;
};

static struct odebug_bucket obj_hash[ODEBUG_HASH_SIZE];

static inline struct odebug_bucket *get_bucket(unsigned long addr)
{
	unsigned long h = (addr >> ODEBUG_CHUNK_SHIFT) * 0x61C8864680B583EBul;

	return &obj_hash[h >> (64 - ODEBUG_HASH_BITS)];
}

/* bucket list operations; the head is also read without the lock (a peek) */
static inline void bucket_add(struct odebug_bucket *b, struct debug_obj *obj)
{
	struct debug_obj *f = b->first;

	obj->node.next = f;
	if (f)
		f->node.pprev = &obj->node.next;
	obj->node.pprev = &b->first;
	__atomic_store_n(&b->first, obj, __ATOMIC_RELAXED);
}

static inline void bucket_del(struct debug_obj *obj)
{
	struct debug_obj *n = obj->node.next;

	__atomic_store_n(obj->node.pprev, n, __ATOMIC_RELAXED);
	if (n)
		n->node.pprev = obj->node.pprev;
}

static inline void update_max(unsigned long *m, unsigned long v)
{
	unsigned long cur = ODEBUG_READ(*m);

	while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, false, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static inline void nested_skip(void)
{
	ODEBUG_ADD(odebug_nested_skips, 1);
}

/* Lock @b.  A nested entry only tries: false means skip (counted). */
static inline bool bucket_lock(struct odebug_bucket *b, bool nested)
{
	if (odebug_likely(!nested)) {
		odebug_spin_lock(&b->lock);
		return true;
	}
	if (odebug_spin_trylock(&b->lock))
		return true;
	nested_skip();
	return false;
}

/*
 * Spare trackers, for nested entries: a lock-free stack that a signal
 * handler can push to and pop from while the code it interrupted holds any
 * lock or is changing its per-thread pool.  A pop takes the whole stack with
 * one exchange and pushes the rest back, so it has no ABA problem.  Entries
 * that are not nested keep it between ODEBUG_SPARE_MIN and ODEBUG_SPARE_MAX
 * (from and to the pools).  Its trackers count as free in the statistics.
 */
#define ODEBUG_SPARE_MIN	16
#define ODEBUG_SPARE_MAX	64

static struct debug_obj *spare_head;
static long spare_cnt;			/* approximate while a pop is under way */

static void spare_push_list(struct debug_obj *first, struct debug_obj *last)
{
	struct debug_obj *h = __atomic_load_n(&spare_head, __ATOMIC_RELAXED);

	do
		last->node.next = h;
	while (!__atomic_compare_exchange_n(&spare_head, &h, first, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

static struct debug_obj *spare_pop(void)
{
	struct debug_obj *obj = __atomic_exchange_n(&spare_head, NULL, __ATOMIC_ACQUIRE);
	struct debug_obj *rest, *last;

	if (!obj)
		return NULL;
	ODEBUG_ADD(spare_cnt, -1);
	rest = obj->node.next;
	if (rest) {
		for (last = rest; last->node.next; last = last->node.next)
			;
		spare_push_list(rest, last);
	}
	return obj;
}

/* A list of trackers linked through ->next, to the spare stack. */
static void spare_put(struct debug_obj *list)
{
	struct debug_obj *last = list;
	long n = 1;

	if (!list)
		return;
	for (; last->node.next; last = last->node.next)
		n++;
	spare_push_list(list, last);
	ODEBUG_ADD(spare_cnt, n);
}

/* Not nested: top the spare stack up to its minimum, or give the excess back. */
static void __attribute__((noinline)) spare_balance(void)
{
	struct debug_obj *list, *obj, *keep = NULL;
	long n = 0;

	while (ODEBUG_READ(spare_cnt) < ODEBUG_SPARE_MIN) {
		if (!(obj = odebug_alloc_tracker()))
			return;		/* out of trackers: the hooks will say so */
		obj->node.next = NULL;
		spare_put(obj);
	}
	if (ODEBUG_READ(spare_cnt) <= ODEBUG_SPARE_MAX)
		return;
	list = __atomic_exchange_n(&spare_head, NULL, __ATOMIC_ACQUIRE);
	while ((obj = list)) {
		list = obj->node.next;
		if (n++ < ODEBUG_SPARE_MIN) {
			obj->node.next = keep;
			keep = obj;
		} else {
			ODEBUG_ADD(spare_cnt, -1);
			odebug_free_tracker(obj);
		}
	}
	if (keep) {
		ODEBUG_ADD(spare_cnt, -(n < ODEBUG_SPARE_MIN ? n : ODEBUG_SPARE_MIN));
		spare_put(keep);
	}
}

static inline void spare_check(void)
{
	long n = ODEBUG_READ(spare_cnt);

	if (odebug_unlikely((unsigned long)(n - ODEBUG_SPARE_MIN) >
			    ODEBUG_SPARE_MAX - ODEBUG_SPARE_MIN))
		spare_balance();
}

/* Every spare tracker back to the pools (quiescent, not nested). */
static void spare_drain(void)
{
	struct debug_obj *list = __atomic_exchange_n(&spare_head, NULL, __ATOMIC_ACQUIRE);

	while (list) {
		struct debug_obj *next = list->node.next;

		ODEBUG_ADD(spare_cnt, -1);
		odebug_free_tracker(list);
		list = next;
	}
}

static inline void tracker_free(struct debug_obj *obj, bool nested)
{
	if (odebug_likely(!nested))
		odebug_free_tracker(obj);
	else {
		obj->node.next = NULL;
		spare_put(obj);
	}
}

static struct debug_obj *lookup_object(const void *addr, struct odebug_bucket *b)
{
	unsigned long cnt = 0;

	for (struct debug_obj *obj = b->first; obj; obj = obj->node.next) {
		cnt++;
		if (obj->object == addr)
			return obj;
	}
	if (odebug_unlikely(cnt > ODEBUG_READ(odebug_maxchain)))
		update_max(&odebug_maxchain, cnt);
	return NULL;
}

#define ERR_NOT_STATIC	((struct debug_obj *)-1L)
#define ERR_SKIP	((struct debug_obj *)-2L)

/*
 * The tracker of @addr, or a new one.  A new one is made unconditionally for
 * init; for activate and assert_init (@alloc_ifstatic) only when the type
 * says the object is static, and then it starts as INIT.  NULL: out of
 * trackers, tracking is now off and *oom_owner tells whether this caller
 * turned it off.  ERR_SKIP: nested, and no spare tracker (counted).
 * *new_obj: a tracker was created.
 */
static struct debug_obj *lookup_object_or_alloc(void *addr, struct odebug_bucket *b,
						const struct debug_obj_descr *descr,
						bool alloc_ifstatic, bool *new_obj,
						bool *oom_owner, bool nested)
{
	struct debug_obj *obj = lookup_object(addr, b);
	unsigned int state = ODEBUG_STATE_NONE;

	if (odebug_likely(obj))
		return obj;
	if (alloc_ifstatic) {
		if (!descr->is_static_object || !descr->is_static_object(addr))
			return ERR_NOT_STATIC;
		state = ODEBUG_STATE_INIT;
	}
	obj = odebug_likely(!nested) ? odebug_alloc_tracker() : spare_pop();
	if (odebug_likely(obj)) {
		obj->object = addr;
		obj->descr = descr;
		obj->state = state;
		obj->astate = 0;
		obj->init_stack = 0;
		obj->act_stack = 0;
		bucket_add(b, obj);
		*new_obj = true;
		return obj;
	}
	if (nested) {
		nested_skip();
		return ERR_SKIP;
	}
	*oom_owner = __atomic_exchange_n(&odebug_enabled, 0, __ATOMIC_RELAXED) != 0;
	return NULL;
}

/*
 * Take every tracker out of the hash and give it to the slab (nested: to the
 * spare stack, and buckets that are locked are left alone).
 */
static void flush_hash(bool nested)
{
	for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct odebug_bucket *b = &obj_hash[i];
		struct debug_obj *list, *obj;
		unsigned long n = 0;

		if (!__atomic_load_n(&b->first, __ATOMIC_RELAXED))
			continue;
		if (!bucket_lock(b, nested))
			continue;
		list = b->first;
		__atomic_store_n(&b->first, NULL, __ATOMIC_RELAXED);
		odebug_spin_unlock(&b->lock);
		if (nested) {
			spare_put(list);
			continue;
		}
		for (obj = list; obj; obj = obj->node.next)
			n++;
		odebug_free_to_slab(list, n);
	}
}

static void debug_objects_oom(void)
{
	ODEBUG_ADD(odebug_oom_count, 1);
	odebug_print_text("ODEBUG: Out of memory. ODEBUG disabled\n");
	flush_hash(false);
	static_branch_disable(&kk_debug_objects_key);
}

static bool debug_object_fixup(bool (*fixup)(void *, enum debug_obj_state), void *addr,
			       unsigned int state)
{
	if (fixup && fixup(addr, (enum debug_obj_state)state)) {
		ODEBUG_ADD(odebug_fixups, 1);
		return true;
	}
	return false;
}

static inline bool enabled(void)
{
	return ODEBUG_READ(odebug_enabled) != 0;
}

/*
 * The hooks.  Each runs as one section (see internal.h) from its entry to its
 * report; the fixup, which may call the hooks again, runs after the section.
 */
KK_EXPORT void __kk_odebug_init(void *addr, const struct debug_obj_descr *descr, int onstack)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool new_obj = false, oom = false, on_stack = !!onstack, nested;
	uint32_t stack = 0;

	if (!enabled())
		return;
	nested = odebug_enter();
	if (odebug_likely(!nested)) {
		odebug_fill_pool();
		spare_check();
		on_stack = odebug_on_stack(addr);
		if (ODEBUG_READ(odebug_backtraces))
			stack = odebug_stack_capture();
	}

	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object_or_alloc(addr, db, descr, false, &new_obj, &oom, nested);
	if (odebug_unlikely(!obj || obj == ERR_SKIP)) {
		odebug_spin_unlock(&db->lock);
		if (oom)
			debug_objects_oom();
		goto out;
	}
	switch (obj->state) {
	case ODEBUG_STATE_NONE:
	case ODEBUG_STATE_INIT:
	case ODEBUG_STATE_INACTIVE:
		obj->state = ODEBUG_STATE_INIT;
		if (stack)
			obj->init_stack = stack;
		odebug_spin_unlock(&db->lock);
		if (new_obj && on_stack != !!onstack)
			odebug_stack_warning(addr, on_stack);
		goto out;
	default:
		break;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "init");
	odebug_leave();
	if (o.state == ODEBUG_STATE_ACTIVE)
		debug_object_fixup(descr->fixup_init, addr, o.state);
	return;
out:
	odebug_leave();
}

KK_EXPORT int __kk_odebug_activate(void *addr, const struct debug_obj_descr *descr)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool new_obj = false, oom = false, nested;
	uint32_t stack = 0;

	if (!enabled())
		return 0;
	nested = odebug_enter();
	if (odebug_likely(!nested)) {
		odebug_fill_pool();
		spare_check();
		if (ODEBUG_READ(odebug_backtraces))
			stack = odebug_stack_capture();
	}

	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object_or_alloc(addr, db, descr, true, &new_obj, &oom, nested);
	if (odebug_unlikely(!obj || obj == ERR_SKIP)) {
		odebug_spin_unlock(&db->lock);
		if (oom)
			debug_objects_oom();
		goto out;
	}
	/* built only for a report: this is the hot path */
	if (odebug_unlikely(obj == ERR_NOT_STATIC)) {
		o = (struct debug_obj){ .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE,
					.descr = descr };
	} else {
		switch (obj->state) {
		case ODEBUG_STATE_ACTIVE:
		case ODEBUG_STATE_DESTROYED:
			o = *obj;
			break;
		case ODEBUG_STATE_INIT:
		case ODEBUG_STATE_INACTIVE:
			obj->state = ODEBUG_STATE_ACTIVE;
			if (stack) {
				obj->act_stack = stack;
				if (new_obj)
					obj->init_stack = stack;
			}
			/* fall through */
		default:
			odebug_spin_unlock(&db->lock);
			goto out;
		}
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "activate");
	odebug_leave();

	switch (o.state) {
	case ODEBUG_STATE_ACTIVE:
	case ODEBUG_STATE_NOTAVAILABLE:
		if (debug_object_fixup(descr->fixup_activate, addr, o.state))
			return 0;
		/* fall through */
	default:
		return -EINVAL;
	}
out:
	odebug_leave();
	return 0;
}

KK_EXPORT void __kk_odebug_deactivate(void *addr, const struct debug_obj_descr *descr)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool nested;

	if (!enabled())
		return;
	nested = odebug_enter();
	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object(addr, db);
	if (obj) {
		switch (obj->state) {
		case ODEBUG_STATE_DESTROYED:
			break;
		case ODEBUG_STATE_INIT:
		case ODEBUG_STATE_INACTIVE:
		case ODEBUG_STATE_ACTIVE:
			if (obj->astate)
				break;
			obj->state = ODEBUG_STATE_INACTIVE;
			/* fall through */
		default:
			odebug_spin_unlock(&db->lock);
			goto out;
		}
		o = *obj;
	} else {
		o = (struct debug_obj){ .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE,
					.descr = descr };
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "deactivate");
out:
	odebug_leave();
}

KK_EXPORT void __kk_odebug_destroy(void *addr, const struct debug_obj_descr *descr)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool nested;

	if (!enabled())
		return;
	nested = odebug_enter();
	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object(addr, db);
	if (!obj) {
		odebug_spin_unlock(&db->lock);
		goto out;
	}
	switch (obj->state) {
	case ODEBUG_STATE_ACTIVE:
	case ODEBUG_STATE_DESTROYED:
		break;
	case ODEBUG_STATE_NONE:
	case ODEBUG_STATE_INIT:
	case ODEBUG_STATE_INACTIVE:
		obj->state = ODEBUG_STATE_DESTROYED;
		/* fall through */
	default:
		odebug_spin_unlock(&db->lock);
		goto out;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "destroy");
	odebug_leave();
	if (o.state == ODEBUG_STATE_ACTIVE)
		debug_object_fixup(descr->fixup_destroy, addr, o.state);
	return;
out:
	odebug_leave();
}

/* @onstack: 1 from destroy_object_on_stack() (checked), -1 unchecked. */
KK_EXPORT void __kk_odebug_free(void *addr, const struct debug_obj_descr *descr, int onstack)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool nested;

	if (!enabled())
		return;
	nested = odebug_enter();
	/* nested: no stack bounds lookup (it may allocate on first use) */
	if (onstack == 1 && !nested && !odebug_on_stack(addr))
		odebug_stack_warning(addr, false);
	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object(addr, db);
	if (!obj) {
		odebug_spin_unlock(&db->lock);
		goto out;
	}
	if (obj->state != ODEBUG_STATE_ACTIVE) {
		bucket_del(obj);
		odebug_spin_unlock(&db->lock);
		tracker_free(obj, nested);
		goto out;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "free");
	odebug_leave();
	debug_object_fixup(descr->fixup_free, addr, o.state);
	return;
out:
	odebug_leave();
}

KK_EXPORT void __kk_odebug_assert_init(void *addr, const struct debug_obj_descr *descr)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;
	bool new_obj = false, oom = false, nested;

	if (!enabled())
		return;
	nested = odebug_enter();
	if (odebug_likely(!nested)) {
		odebug_fill_pool();
		spare_check();
	}
	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object_or_alloc(addr, db, descr, true, &new_obj, &oom, nested);
	odebug_spin_unlock(&db->lock);
	if (odebug_likely(obj && obj != ERR_NOT_STATIC))
		goto out;		/* tracked, or skipped */
	if (!obj) {
		if (oom)
			debug_objects_oom();
		goto out;
	}
	/* neither tracked nor static: not initialised */
	odebug_print_object(&o, "assert_init");
	odebug_leave();
	debug_object_fixup(descr->fixup_assert_init, addr, ODEBUG_STATE_NOTAVAILABLE);
	return;
out:
	odebug_leave();
}

KK_EXPORT void __kk_odebug_active_state(void *addr, const struct debug_obj_descr *descr,
			      unsigned int expect, unsigned int next)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;
	bool nested;

	if (!enabled())
		return;
	nested = odebug_enter();
	db = get_bucket((unsigned long)addr);
	if (!bucket_lock(db, nested))
		goto out;
	obj = lookup_object(addr, db);
	if (obj) {
		if (obj->state == ODEBUG_STATE_ACTIVE && obj->astate == expect) {
			obj->astate = next;
			odebug_spin_unlock(&db->lock);
			goto out;
		}
		o = *obj;
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "active_state");
out:
	odebug_leave();
}

static void free_local(struct debug_obj *list, bool nested)
{
	if (nested) {
		spare_put(list);
		return;
	}
	while (list) {
		struct debug_obj *next = list->node.next;

		odebug_free_tracker(list);
		list = next;
	}
}

/*
 * One bucket of a range check.  Active objects in the range are reported and
 * their fixup_free runs; the kernel then rescans until none is left.  Where
 * the kernel would rescan forever (no fixup, or one that left the object
 * active), the tracker is dropped instead: its memory is going away.
 * Called inside a section; the fixup runs outside it.
 */
static unsigned long check_bucket(struct odebug_bucket *db, unsigned long saddr,
				  unsigned long eaddr, bool nested)
{
	unsigned long cnt, total = 0;
	struct debug_obj *obj, *next, o;

repeat:
	cnt = 0;
	struct debug_obj *freelist = NULL;

	if (!bucket_lock(db, nested))
		return total;
	for (obj = db->first; obj; obj = next) {
		unsigned long oaddr = (unsigned long)obj->object;

		next = obj->node.next;
		cnt++;
		if (oaddr < saddr || oaddr >= eaddr)
			continue;
		if (obj->state == ODEBUG_STATE_ACTIVE) {
			o = *obj;
			odebug_spin_unlock(&db->lock);
			free_local(freelist, nested);
			total += cnt;
			odebug_print_object(&o, "free");
			odebug_leave();
			debug_object_fixup(o.descr->fixup_free, o.object, o.state);
			odebug_enter();
			if (!bucket_lock(db, nested))
				return total;
			obj = lookup_object(o.object, db);
			if (obj && obj->state == ODEBUG_STATE_ACTIVE)
				bucket_del(obj);	/* not fixed: drop it */
			else
				obj = NULL;
			odebug_spin_unlock(&db->lock);
			if (obj)
				tracker_free(obj, nested);
			if (!enabled())
				return total;
			goto repeat;
		}
		bucket_del(obj);
		obj->node.next = freelist;
		freelist = obj;
	}
	odebug_spin_unlock(&db->lock);
	free_local(freelist, nested);
	if (cnt > ODEBUG_READ(odebug_maxchain))
		update_max(&odebug_maxchain, cnt);
	return total + cnt;
}

KK_EXPORT void __kk_odebug_check_no_obj_freed(const void *address, unsigned long size)
{
	unsigned long saddr = (unsigned long)address, eaddr, paddr, chunks, checked = 0;
	bool nested;

	if (!enabled() || !size)
		return;
	eaddr = saddr + size;
	if (eaddr < saddr)
		eaddr = ~0ul;
	paddr = saddr & ODEBUG_CHUNK_MASK;
	chunks = ((eaddr - paddr) + (ODEBUG_CHUNK_SIZE - 1)) >> ODEBUG_CHUNK_SHIFT;
	if (eaddr - paddr > ~0ul - ODEBUG_CHUNK_SIZE)
		chunks = ~0ul;

	nested = odebug_enter();
	if (chunks >= ODEBUG_HASH_SIZE) {
		/* a huge range: every bucket once is cheaper than every page */
		for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
			if (__atomic_load_n(&obj_hash[i].first, __ATOMIC_RELAXED))
				checked += check_bucket(&obj_hash[i], saddr, eaddr, nested);
			if (!enabled())
				goto out;
		}
	} else {
		for (; chunks > 0; chunks--, paddr += ODEBUG_CHUNK_SIZE) {
			struct odebug_bucket *db = get_bucket(paddr);

			/* an empty bucket holds nothing of ours: skip its lock */
			if (!__atomic_load_n(&db->first, __ATOMIC_RELAXED))
				continue;
			checked += check_bucket(db, saddr, eaddr, nested);
			if (!enabled())
				goto out;
		}
	}
	if (checked > ODEBUG_READ(odebug_maxchecked))
		update_max(&odebug_maxchecked, checked);
out:
	odebug_leave();
}

/* ---- extras ------------------------------------------------------------------------- */

KK_EXPORT bool kk_debug_object_lookup(const void *addr, enum debug_obj_state *state, unsigned int *astate)
{
	struct odebug_bucket *db = get_bucket((unsigned long)addr);
	struct debug_obj *obj;
	bool found = false, nested = odebug_enter();

	if (bucket_lock(db, nested)) {
		obj = lookup_object(addr, db);
		if (obj) {
			found = true;
			if (state)
				*state = (enum debug_obj_state)obj->state;
			if (astate)
				*astate = obj->astate;
		}
		odebug_spin_unlock(&db->lock);
	}
	odebug_leave();
	return found;
}

KK_EXPORT bool kk_debug_object_get(const void *addr, struct debug_obj *out)
{
	struct odebug_bucket *db = get_bucket((unsigned long)addr);
	struct debug_obj *obj;
	bool found = false, nested = odebug_enter();

	if (bucket_lock(db, nested)) {
		obj = lookup_object(addr, db);
		if (obj) {
			found = true;
			*out = *obj;
			out->node.next = NULL;
			out->node.pprev = NULL;
			out->batch_last = NULL;
		}
		odebug_spin_unlock(&db->lock);
	}
	odebug_leave();
	return found;
}

/* Visit every tracker (bucket locked); for reports.  Call inside a section. */
void odebug_for_each_object(void (*fn)(const struct debug_obj *obj, void *arg), void *arg)
{
	bool nested = odebug_nested();

	for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct odebug_bucket *b = &obj_hash[i];

		if (!__atomic_load_n(&b->first, __ATOMIC_RELAXED))
			continue;
		if (!bucket_lock(b, nested))
			continue;
		for (struct debug_obj *obj = b->first; obj; obj = obj->node.next)
			fn(obj, arg);
		odebug_spin_unlock(&b->lock);
	}
}

static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;

KK_EXPORT int kk_debug_objects_enable(void)
{
	int ret = 0;

	odebug_pool_init();
	odebug_enter();
	pthread_mutex_lock(&enable_lock);
	odebug_worker_start();
	ODEBUG_WRITE(odebug_enabled, 1);
	ret = static_branch_enable(&kk_debug_objects_key);
	if (ret)
		ODEBUG_WRITE(odebug_enabled, 0);
	if (!ret)
		spare_balance();	/* before a signal handler may need one */
	pthread_mutex_unlock(&enable_lock);
	odebug_leave();
	return ret;
}

KK_EXPORT int kk_debug_objects_disable(void)
{
	int ret = 0;
	bool nested = odebug_enter();

	pthread_mutex_lock(&enable_lock);
	ret = static_branch_disable(&kk_debug_objects_key);
	if (!ret) {
		ODEBUG_WRITE(odebug_enabled, 0);
		flush_hash(nested);
	}
	pthread_mutex_unlock(&enable_lock);
	odebug_leave();
	return ret;
}

KK_EXPORT bool kk_debug_objects_enabled(void)
{
	return enabled();
}

KK_EXPORT void kk_debug_objects_reset(void)
{
	odebug_enter();
	flush_hash(false);
	spare_drain();
	odebug_pool_reset();
	odebug_report_reset();
	ODEBUG_WRITE(odebug_maxchain, 0);
	ODEBUG_WRITE(odebug_maxchecked, 0);
	ODEBUG_WRITE(odebug_nested_skips, 0);
	odebug_leave();
}

KK_EXPORT void kk_debug_objects_get_stats(struct kk_debug_objects_stats *st)
{
	unsigned long spare;
	long sc;

	memset(st, 0, sizeof(*st));
	st->max_chain = ODEBUG_READ(odebug_maxchain);
	st->max_checked = ODEBUG_READ(odebug_maxchecked);
	st->warnings = ODEBUG_READ(odebug_warnings);
	st->fixups = ODEBUG_READ(odebug_fixups);
	st->stack_warnings = ODEBUG_READ(odebug_stack_warnings);
	st->oom = ODEBUG_READ(odebug_oom_count);
	st->nested_skips = ODEBUG_READ(odebug_nested_skips);
	/* the pool statistics take the pools' locks: not when nested */
	if (odebug_enter()) {
		odebug_leave();
		return;
	}
	odebug_pool_stats(st);
	odebug_leave();
	/* spare trackers are in use as far as the pools know, but free */
	sc = ODEBUG_READ(spare_cnt);
	spare = sc > 0 ? (unsigned long)sc : 0;
	if (spare > st->pool_used)
		spare = st->pool_used;
	st->pool_used -= spare;
	st->pool_free += spare;
}

/* ---- fork, the control files, load-time settings -------------------------------------- */

static bool fork_locked_buckets;		/* under enable_lock */

/*
 * While tracking is off no thread is inside a bucket lock for long: skip them.
 * The section lasts from prepare to parent/child, so that a signal handler
 * in between only try-locks.
 */
static void atfork_prepare(void)
{
	odebug_enter();
	pthread_mutex_lock(&enable_lock);
	odebug_report_atfork_prepare();
	fork_locked_buckets = enabled();
	if (fork_locked_buckets)
		for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++)
			odebug_spin_lock(&obj_hash[i].lock);
	odebug_pool_atfork_prepare();
}

static void unlock_buckets(void)
{
	if (fork_locked_buckets)
		for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++)
			odebug_spin_unlock(&obj_hash[i].lock);
}

static void atfork_parent(void)
{
	odebug_pool_atfork_parent();
	unlock_buckets();
	odebug_report_atfork_parent();
	pthread_mutex_unlock(&enable_lock);
	odebug_leave();
}

static void atfork_child(void)
{
	odebug_pool_atfork_child();
	unlock_buckets();
	odebug_report_atfork_child();
	pthread_mutex_unlock(&enable_lock);
	odebug_leave();
}

static const struct kk_fork_ops odebug_fork_ops = {
	KK_INIT_ODEBUG, atfork_prepare, atfork_parent, atfork_child
};

static int stats_show(struct kk_buf *out, void *priv)
{
	struct kk_debug_objects_stats st;

	(void)priv;
	kk_debug_objects_get_stats(&st);
	kk_buf_printf(out, "max_chain     : %lu\n", st.max_chain);
	kk_buf_printf(out, "max_checked   : %lu\n", st.max_checked);
	kk_buf_printf(out, "warnings      : %lu\n", st.warnings);
	kk_buf_printf(out, "fixups        : %lu\n", st.fixups);
	kk_buf_printf(out, "pool_free     : %lu\n", st.pool_free);
	kk_buf_printf(out, "pool_pcp_free : %lu\n", st.pool_pcp_free);
	kk_buf_printf(out, "pool_min_free : %lu\n", st.pool_min_free);
	kk_buf_printf(out, "pool_used     : %lu\n", st.pool_used);
	kk_buf_printf(out, "pool_max_used : %lu\n", st.pool_max_used);
	kk_buf_printf(out, "on_free_list  : %lu\n", st.on_free_list);
	kk_buf_printf(out, "objs_allocated: %lu\n", st.objs_allocated);
	kk_buf_printf(out, "objs_freed    : %lu\n", st.objs_freed);
	kk_buf_printf(out, "avg_usage     : %lu\n", st.avg_usage);
	kk_buf_printf(out, "nested_skips  : %lu\n", st.nested_skips);
	return out->error;
}

static int policy_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	kk_buf_printf(out, "%s\n", kk_debug_objects_policy());
	return out->error;
}

static int policy_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	char name[16];

	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len >= sizeof(name)) {
		kk_buf_printf(out, "debug_objects/policy: base, pcpu2x, refill or ewma\n");
		return -EINVAL;
	}
	memcpy(name, buf, len);
	name[len] = 0;
	if (kk_debug_objects_set_policy(name)) {
		kk_buf_printf(out, "debug_objects/policy: base, pcpu2x, refill or ewma\n");
		return -EINVAL;
	}
	return 0;
}

static const struct kk_control_file_ops stats_ops = { .show = stats_show };
static const struct kk_control_file_ops policy_ops = {
	.show = policy_show, .write = policy_write, .max_write = 64,
};
KK_CONTROL_LIB_FILE(stats_file, "debug_objects/stats", &stats_ops);
KK_CONTROL_LIB_FILE(policy_file, "debug_objects/policy", &policy_ops);

extern int odebug_exit_report;

/* The KK_DEBUG_OBJECTS* settings. */
static void odebug_env_init(void)
{
	const char *e;
	unsigned long max;

	if ((e = kk_getenv("KK_DEBUG_OBJECTS_POLICY")) && kk_debug_objects_set_policy(e))
		kk_warn("ignoring KK_DEBUG_OBJECTS_POLICY=%.64s: not base, pcpu2x, refill or ewma", e);
	max = kk_env_ulong("KK_DEBUG_OBJECTS_MAX_TRACKERS", 0, 0, ULONG_MAX);
	if (max)
		kk_debug_objects_set_max_trackers(max);
	/* Not kk_debug_objects_set_backtraces(): no unwinding in a constructor
	 * (the first capture loads the unwinder). */
	if (kk_env_bool("KK_DEBUG_OBJECTS_BACKTRACE", false))
		ODEBUG_WRITE(odebug_backtraces, 1);
	if (!kk_env_bool("KK_DEBUG_OBJECTS_EXIT_REPORT", true))
		ODEBUG_WRITE(odebug_exit_report, 0);
	if (kk_env_bool("KK_DEBUG_OBJECTS", false))
		kk_debug_objects_enable();
}

KK_INIT(KK_INIT_ODEBUG) static void odebug_ctor(void)
{
	/* The pool is sized when tracking is first switched on, not here:
	 * counting CPUs reads /sys, which a sandbox may refuse. */
	kk_fork_register(&odebug_fork_ops);
	kk_control_add_lib_file(&stats_file);
	kk_control_add_lib_file(&policy_file);
	if (kk_env_any() && kk_env_has_prefix("KK_DEBUG_OBJECTS"))
		odebug_env_init();
}
