// SPDX-License-Identifier: MIT
/*
 * Static keys: the registry of keys and sites, and the key API.
 *
 * Data structures first.  They are the kernel's (kernel/jump_label.c), so
 * that registering an object costs no allocation per key or per site (only
 * a key with several runs costs a record, and one use for each object):
 *  - In each ELF object's own kk_jump_table the sites of one key are usually
 *    one run of entries: a site's key is linked to its run in one pass, O(n).
 *    A key with several runs in one table (a site in an inline function,
 *    inlined into several functions; a key used by several units) has a
 *    record, as a key used by several objects has: for each object, where
 *    its first and its last run start (jump_label_use).  The table is never
 *    sorted or written (the kernel sorts it), and no copy of it is kept.
 *  - jump_label_object: one per object with a table: where the table is, the
 *    object's address range, and its module name (computed when a listing or
 *    an error message first needs it).
 *  - key->priv links a key to its sites, as the kernel's key->entries and
 *    static_key_mod do:
 *      JL_ENTRIES set:   the first entry of the key's run in the only object
 *                        that has sites of the key (the common case);
 *      JL_ENTRIES clear: a struct jump_label_key (NULL: none), the runs of the key in
 *                        every object that has some.  Made for a key with
 *                        several runs (in one object or several), and for a
 *                        key that the API touched while no object had sites
 *                        of it (so that the listing shows it).
 *    Bits 1-2 of priv are the key's place in the queue (JL_Q_*).
 *  - the queue: an array of the keys with a queued state.  The state itself
 *    is in the key's priv bits, so queuing a key again, or an immediate change
 *    that takes it off the queue, costs O(1).
 *
 * Everything that patches code or edits these structures runs under
 * jump_label_mutex, the analogue of the kernel's jump_label_mutex.  Readers of a key
 * only ever load key->enabled.
 *
 * Differences from the kernel: the table is not sorted (the kernel's
 * jump_label_sort_entries() heap-sorts every table, ~700 instructions an
 * entry), so its pages stay as the loader left them (shared with the file
 * when nothing relocated them); a key in several runs costs a record
 * instead.  An entry's key is absolute (bit 1 set, relocated at load, so a
 * site can sit anywhere, also in a C++ inline function in a shared object),
 * or, in objects built with the headers before that, relative to a per-site
 * slot that holds the key's address.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "common/internal.h"
#include "control.h"
#include "jump_label/internal.h"
#include "arch/jump_label.h"
#include "text_poke.h"
#include "text_sync.h"

struct jump_label_object {
	struct jump_label_object *next;
	struct jump_entry *start, *stop;	/* the table, as linked */
	uintptr_t lo, hi;			/* the object's mapped range; 0, 0: unknown */
	char name[64];				/* "" until first needed */
};

/*
 * One object's runs of a key's entries: the first run starts at @first, the
 * last at @last (the same run, unless a site of the key was inlined into
 * several functions); other keys' entries may lie between them.
 */
struct jump_label_use {
	struct jump_label_object *obj;
	const struct jump_entry *first, *last;
};

struct jump_label_key {
	struct jump_label_key *next;
	struct jump_label_key **pprev;		/* O(1) unlink */
	struct static_key *key;
	struct jump_label_use *uses;		/* in the order linked: inl, or malloc'ed */
	size_t nuses, cap;
	bool known;				/* made by the API: kept with no use */
	struct jump_label_use inl[2];		/* the first two: one allocation a record */
};

#define JL_ENTRIES	1ul		/* priv points at a jump_entry, not a jump_label_key */
#define JL_QMASK	6ul		/* the key's place in the queue: */
#define JL_Q_NONE	0ul		/*   not in the queue array */
#define JL_Q_IDLE	2ul		/*   in the array, nothing pending (taken off) */
#define JL_Q_OFF	4ul		/*   queued: disable */
#define JL_Q_ON		6ul		/*   queued: enable */
#define JL_PTR		(~7ul)

_Static_assert(_Alignof(struct jump_label_key) >= 8, "priv needs 3 free bits");

static pthread_mutex_t jump_label_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(pthread_t) jump_label_owner;
static atomic_int jump_label_owned;

static struct jump_label_object *objects;
static struct jump_label_key *records;
static struct static_key **queue;
static size_t queue_len, queue_cap;

static __thread char jump_label_err[256];

#define fail jump_label_fail

/* ---- errors --------------------------------------------------------------------- */

int jump_label_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(jump_label_err, sizeof(jump_label_err), fmt, ap);
	va_end(ap);
	return err;
}

KK_EXPORT const char *kk_jump_label_strerror(void)
{
	return jump_label_err[0] ? jump_label_err : "no error";
}

/* ---- the lock ------------------------------------------------------------------- */

static int lock_held(void)
{
	return atomic_load(&jump_label_owned) && pthread_equal(atomic_load(&jump_label_owner), pthread_self());
}

bool jump_label_lock_held(void)
{
	return lock_held();
}

KK_EXPORT void jump_label_lock(void)
{
	pthread_mutex_lock(&jump_label_mutex);
	atomic_store(&jump_label_owner, pthread_self());
	atomic_store(&jump_label_owned, 1);
}

KK_EXPORT void jump_label_unlock(void)
{
	atomic_store(&jump_label_owned, 0);
	pthread_mutex_unlock(&jump_label_mutex);
}

/* ---- entries -------------------------------------------------------------------- */

static inline uintptr_t entry_code(const struct jump_entry *e)
{
	return (uintptr_t)&e->code + (uintptr_t)(intptr_t)e->code;
}

static inline uintptr_t entry_target(const struct jump_entry *e)
{
	return (uintptr_t)&e->target + (uintptr_t)(intptr_t)e->target;
}

/* Bit 1 of key: the key's address itself; clear: an offset to a slot. */
#define JL_KEY_ABS	2
#define JL_KEY_FLAGS	3

static inline bool entry_key_abs(const struct jump_entry *e)
{
	return e->key & JL_KEY_ABS;
}

static inline struct static_key *entry_key(const struct jump_entry *e)
{
	uintptr_t k = (uintptr_t)(e->key & ~(int64_t)JL_KEY_FLAGS);

	if (entry_key_abs(e))
		return (struct static_key *)k;
	return *(struct static_key *const *)((uintptr_t)&e->key + k);
}

static inline bool entry_branch(const struct jump_entry *e)
{
	return e->key & 1;
}

/* ---- key -> sites ----------------------------------------------------------------- */

static inline uintptr_t priv_of(const struct static_key *key)
{
	return (uintptr_t)key->priv;
}

static inline void priv_set(struct static_key *key, uintptr_t v)
{
	key->priv = (void *)v;
}

/*
 * What priv links to, checked: a key copied by value, or a stale value,
 * links to entries or a record of another key and is taken as unlinked.
 */
static const struct jump_entry *key_entries(struct static_key *key)
{
	uintptr_t p = priv_of(key);
	const struct jump_entry *e = (const struct jump_entry *)(p & JL_PTR);

	return (p & JL_ENTRIES) && e && entry_key(e) == key ? e : NULL;
}

static struct jump_label_key *key_record(struct static_key *key)
{
	uintptr_t p = priv_of(key);
	struct jump_label_key *k = (struct jump_label_key *)(p & JL_PTR);

	return !(p & JL_ENTRIES) && k && k->key == key ? k : NULL;
}

static uintptr_t key_qstate(struct static_key *key)
{
	uintptr_t p = priv_of(key);

	if ((p & JL_PTR) && !key_entries(key) && !key_record(key))
		return JL_Q_NONE;	/* stale copy: its queue bits are not ours either */
	return p & JL_QMASK;
}

static void set_qstate(struct static_key *key, uintptr_t q)
{
	priv_set(key, (priv_of(key) & ~JL_QMASK) | q);
}

static void link_entries(struct static_key *key, const struct jump_entry *e)
{
	priv_set(key, (uintptr_t)e | JL_ENTRIES | key_qstate(key));
}

static void link_record(struct static_key *key, struct jump_label_key *k)
{
	priv_set(key, (uintptr_t)k | key_qstate(key));
}

static struct jump_label_object *entry_object(const struct jump_entry *e)
{
	for (struct jump_label_object *o = objects; o; o = o->next)
		if (e >= o->start && e < o->stop)
			return o;
	return NULL;
}

/* The number of entries of @e's key from @e on, in @o's table. */
static size_t run_len(const struct jump_label_object *o, const struct jump_entry *e)
{
	struct static_key *key = entry_key(e);
	const struct jump_entry *x = e;

	while (x < o->stop && entry_key(x) == key)
		x++;
	return (size_t)(x - e);
}

typedef int run_fn(struct jump_label_object *o, const struct jump_entry *e, size_t n, void *arg);

/* Call @fn for each run of @key in @u; stops at a nonzero return. */
static int use_runs(struct static_key *key, const struct jump_label_use *u, run_fn *fn, void *arg)
{
	for (const struct jump_entry *e = u->first; e <= u->last; e++) {
		size_t n;
		int ret;

		if (entry_key(e) != key)
			continue;
		n = run_len(u->obj, e);
		if ((ret = fn(u->obj, e, n, arg)))
			return ret;
		e += n - 1;
	}
	return 0;
}

/* Call @fn for every run of @key's entries; stops at a nonzero return. */
static int for_each_run(struct static_key *key, run_fn *fn, void *arg)
{
	const struct jump_entry *e = key_entries(key);
	struct jump_label_key *k;
	struct jump_label_object *o;

	if (e) {
		o = entry_object(e);
		return o ? fn(o, e, run_len(o, e), arg) : 0;
	}
	if (!(k = key_record(key)))
		return 0;
	for (size_t i = 0; i < k->nuses; i++) {
		int ret = use_runs(key, &k->uses[i], fn, arg);

		if (ret)
			return ret;
	}
	return 0;
}

static int count_run(struct jump_label_object *o, const struct jump_entry *e, size_t n, void *arg)
{
	(void)o;
	(void)e;
	*(size_t *)arg += n;
	return 0;
}

static size_t key_nsites(struct static_key *key)
{
	size_t n = 0;

	for_each_run(key, count_run, &n);
	return n;
}

static struct jump_label_key *record_new(struct static_key *key)
{
	struct jump_label_key *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->key = key;
	k->uses = k->inl;
	k->cap = sizeof(k->inl) / sizeof(k->inl[0]);
	k->next = records;
	if (records)
		records->pprev = &k->next;
	k->pprev = &records;
	records = k;
	return k;
}

static void record_free(struct jump_label_key *k)
{
	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	if (k->uses != k->inl)
		free(k->uses);
	free(k);
}

static int record_add_use(struct jump_label_key *k, struct jump_label_object *o, const struct jump_entry *e)
{
	if (k->nuses == k->cap) {
		size_t cap = 2 * k->cap;
		struct jump_label_use *u = realloc(k->uses == k->inl ? NULL : k->uses, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		if (k->uses == k->inl)
			memcpy(u, k->inl, sizeof(k->inl));
		k->uses = u;
		k->cap = cap;
	}
	k->uses[k->nuses++] = (struct jump_label_use){ o, e, e };
	return 0;
}

/*
 * Make sure the registry knows @key, so that the listing shows it: a key the
 * API touches before any object with its sites registered gets a record.
 */
static int key_known(struct static_key *key)
{
	struct jump_label_key *k;

	if (key_entries(key) || key_record(key))
		return 0;
	if (!(k = record_new(key)))
		return fail(-ENOMEM, "out of memory for the key record");
	k->known = true;
	link_record(key, k);
	return 0;
}

int jump_label_key_known(struct static_key *key)
{
	return key_known(key);
}

/* Link the run @e of @o's table to its key (registration). */
static int link_run(struct jump_label_object *o, const struct jump_entry *e)
{
	struct static_key *key = entry_key(e);
	const struct jump_entry *other;
	struct jump_label_key *k;

	if (!priv_of(key)) {			/* the common case: nothing links it yet */
		priv_set(key, (uintptr_t)e | JL_ENTRIES);
		return 0;
	}
	other = key_entries(key);
	k = key_record(key);
	if (!other && !k) {			/* a stale value, or queue bits only */
		link_entries(key, e);
		return 0;
	}
	if (other) {				/* a second run: now a record */
		struct jump_label_object *oo = entry_object(other);

		if (!(k = record_new(key)))
			return -ENOMEM;
		if (!oo || record_add_use(k, oo, other)) {
			record_free(k);
			return -ENOMEM;
		}
		link_record(key, k);
	}
	if (k->nuses && k->uses[k->nuses - 1].obj == o) {	/* another run here */
		k->uses[k->nuses - 1].last = e;
		return 0;
	}
	return record_add_use(k, o, e);
}

/* Unlink the run @e of @o's table from its key (unload, or a failed registration). */
static void unlink_run(struct jump_label_object *o, const struct jump_entry *e)
{
	struct static_key *key = entry_key(e);
	struct jump_label_key *k;
	size_t w = 0;

	if (key_entries(key) == e) {
		priv_set(key, key_qstate(key));
		return;
	}
	if (!(k = key_record(key)))
		return;
	for (size_t i = 0; i < k->nuses; i++)
		if (k->uses[i].obj != o)
			k->uses[w++] = k->uses[i];
	k->nuses = w;
	if (!w && !k->known) {	/* its runs were all here: unlinked, as before */
		uintptr_t q = key_qstate(key);

		record_free(k);
		priv_set(key, q);
	} else if (w == 1 && k->uses[0].first == k->uses[0].last) {	/* back to the common case: one run */
		const struct jump_entry *first = k->uses[0].first;
		uintptr_t q = key_qstate(key);

		record_free(k);
		priv_set(key, (uintptr_t)first | JL_ENTRIES | q);
	}
}

/* Unlink the runs of @o's table before @end. */
static void unlink_runs(struct jump_label_object *o, const struct jump_entry *end)
{
	for (const struct jump_entry *e = o->start; e < end; e += run_len(o, e))
		unlink_run(o, e);
}

/*
 * Link every run of @o's table to its key, in one pass, in the table's order.
 * The linker concatenates the units' tables, so most keys are one run
 * whatever order the compiler gave a unit's sites; a key with a second run
 * (a dynamic-debug site in an inline function, inlined into several
 * functions: nginx's ngx_event_del_timer()) gets a record of its runs.
 * All or nothing: -ENOMEM with nothing linked.
 */
static int link_runs(struct jump_label_object *o)
{
	struct static_key *prev = NULL;
	struct jump_entry *e;

	for (e = o->start; e < o->stop; e++) {
		struct static_key *key = entry_key(e);

		if (key == prev)
			continue;
		prev = key;
		if (link_run(o, e)) {
			unlink_runs(o, e);
			return -ENOMEM;
		}
	}
	return 0;
}

/* ---- the queue -------------------------------------------------------------------- */

static int queue_add(struct static_key *key)
{
	if (queue_len == queue_cap) {
		size_t cap = queue_cap ? 2 * queue_cap : 64;
		struct static_key **q = realloc(queue, cap * sizeof(*q));

		if (!q)
			return -ENOMEM;
		queue = q;
		queue_cap = cap;
	}
	queue[queue_len++] = key;
	return 0;
}

/* Empty the queue: every key leaves it. */
static void queue_clear(void)
{
	for (size_t i = 0; i < queue_len; i++)
		set_qstate(queue[i], JL_Q_NONE);
	queue_len = 0;
}

/* ---- patching ------------------------------------------------------------------- */

struct collect {
	struct kk_text_queue q;
	bool on;
	const char *bad_obj;
	uintptr_t bad_site;
};

static const char *obj_name(struct jump_label_object *o)
{
	uintptr_t base;

	if (!o->name[0])
		kk_addr_object(o->start, o->name, sizeof(o->name), &base);
	return o->name;
}

static int collect_run(struct jump_label_object *o, const struct jump_entry *e, size_t n, void *arg)
{
	struct collect *c = arg;

	for (size_t i = 0; i < n; i++, e++) {
		uintptr_t code = entry_code(e), target = entry_target(e);
		bool jump = c->on ^ entry_branch(e);
		int cur = kk_arch_jump_label_state(code, target);

		if (cur < 0) {
			c->bad_obj = obj_name(o);
			c->bad_site = code;
			return -EILSEQ;
		}
		if (cur != jump && kk_arch_jump_label_transform_queue(&c->q, code, target, jump))
			return -ENOSPC;		/* not reached: the queue holds every site */
	}
	return 0;
}

/*
 * Bring every site of @n keys to the state @on[i] in one batch.  All or
 * nothing: on error no site changed.
 */
static int patch_keys(struct static_key *const *keys, const bool *on, size_t n)
{
	struct collect c = { 0 };
	size_t total = 0;
	char err[200] = "";
	int ret;

	for (size_t i = 0; i < n; i++)
		total += key_nsites(keys[i]);
	if (!total)
		return 0;
	c.q.v = malloc(total * sizeof(*c.q.v));
	c.q.cap = total;
	if (!c.q.v)
		return fail(-ENOMEM, "out of memory for %zu sites", total);
	for (size_t i = 0; i < n; i++) {
		c.on = on[i];
		if (for_each_run(keys[i], collect_run, &c)) {
			char why[160];

			kk_text_site_problem(c.bad_site, why, sizeof(why));
			free(c.q.v);
			return fail(-EILSEQ, "site %#lx in %s %s", (unsigned long)c.bad_site,
				    c.bad_obj, why);
		}
	}
	ret = kk_arch_jump_label_transform_apply(&c.q, err, sizeof(err));
	free(c.q.v);
	if (ret)
		return fail(ret, "%s", err);
	return 0;
}

static int key_set(struct static_key *key, bool on)
{
	int ret = key_known(key);

	return ret ? ret : patch_keys(&key, &on, 1);
}

/* ---- the key API ---------------------------------------------------------------- */

static int check_key(struct static_key *key)
{
	if (!key)
		return fail(-EINVAL, "NULL key");
	return 0;
}

/*
 * The start of every immediate change: check the key and take it off the
 * queue (an immediate call overrides a queued state).  Returns the count.
 */
static int begin_change(struct static_key *key, int *count)
{
	int ret = check_key(key);

	if (ret)
		return ret;
	if (key_qstate(key) > JL_Q_IDLE)
		set_qstate(key, JL_Q_IDLE);	/* it stays in the array, inert */
	*count = static_key_count(key);
	return 0;
}

static int enable_locked(struct static_key *key)
{
	int v, ret;

	if ((ret = begin_change(key, &v)))
		return ret;
	if (v > 0)
		return 0;
	ret = key_set(key, true);
	if (!ret)	/* the flag follows the code on the way up */
		__atomic_store_n(&key->enabled, 1, __ATOMIC_RELEASE);
	return ret;
}

static int disable_locked(struct static_key *key)
{
	int v, ret;

	if ((ret = begin_change(key, &v)))
		return ret;
	if (v == 0)
		return 0;
	if (v > 1)
		return fail(-EBUSY, "key %s holds %d references; static_key_disable() needs "
			    "at most 1", key->name ? key->name : "?", v);
	/* The flag goes first on the way down, then the code. */
	__atomic_store_n(&key->enabled, 0, __ATOMIC_RELEASE);
	ret = key_set(key, false);
	if (ret)
		__atomic_store_n(&key->enabled, v, __ATOMIC_RELEASE);
	return ret;
}

static int inc_locked(struct static_key *key)
{
	int v, ret;

	if ((ret = check_key(key)))
		return ret;
	v = static_key_count(key);
	if (v == INT_MAX)
		return fail(-EOVERFLOW, "key reference count would overflow");
	if (v > 0) {
		__atomic_store_n(&key->enabled, v + 1, __ATOMIC_RELEASE);
		return 0;
	}
	return enable_locked(key);
}

static int dec_locked(struct static_key *key)
{
	int v, ret;

	if ((ret = check_key(key)))
		return ret;
	v = static_key_count(key);
	if (v == 0)
		return fail(-EINVAL, "static_key_slow_dec() on a key whose count is 0");
	if (v > 1) {
		__atomic_store_n(&key->enabled, v - 1, __ATOMIC_RELEASE);
		return 0;
	}
	return disable_locked(key);
}

/* Run @fn under the lock, refusing to deadlock on a caller that holds it. */
static int locked_call(int (*fn)(struct static_key *), struct static_key *key)
{
	int ret;

	if (lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held; use the _cpuslocked "
			    "variant");
	jump_label_lock();
	ret = fn(key);
	jump_label_unlock();
	return ret;
}

static int cpuslocked_call(int (*fn)(struct static_key *), struct static_key *key)
{
	if (!lock_held())
		return fail(-EPERM, "_cpuslocked variant called without jump_label_lock()");
	return fn(key);
}

KK_EXPORT int static_key_enable(struct static_key *key) { return locked_call(enable_locked, key); }
KK_EXPORT int static_key_disable(struct static_key *key) { return locked_call(disable_locked, key); }
KK_EXPORT int static_key_enable_cpuslocked(struct static_key *key) { return cpuslocked_call(enable_locked, key); }
KK_EXPORT int static_key_disable_cpuslocked(struct static_key *key) { return cpuslocked_call(disable_locked, key); }
KK_EXPORT int static_key_slow_inc_cpuslocked(struct static_key *key) { return cpuslocked_call(inc_locked, key); }
KK_EXPORT int static_key_slow_dec_cpuslocked(struct static_key *key) { return cpuslocked_call(dec_locked, key); }

KK_EXPORT int static_key_slow_inc(struct static_key *key)
{
	int v;

	if (!key)
		return fail(-EINVAL, "NULL key");
	/* Fast path: the key is already on, so only the count moves. */
	v = static_key_count(key);
	while (v > 0 && v < INT_MAX)
		if (__atomic_compare_exchange_n(&key->enabled, &v, v + 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 0;
	return locked_call(inc_locked, key);
}

/*
 * The kernel's static_key_fast_inc_not_disabled(): take a reference only if
 * the key is already on, so that nothing needs patching and no lock is taken.
 */
KK_EXPORT bool static_key_fast_inc_not_disabled(struct static_key *key)
{
	int v;

	if (!key)
		return false;
	v = static_key_count(key);
	while (v > 0 && v < INT_MAX)
		if (__atomic_compare_exchange_n(&key->enabled, &v, v + 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

/* Keys are usable from the first constructor on: there is no early boot. */
KK_EXPORT bool static_key_initialized = true;

KK_EXPORT void jump_label_init(void)
{
}

KK_EXPORT void jump_label_init_ro(void)
{
}

bool jump_label_dec_not_one(struct static_key *key, int *v)
{
	*v = static_key_count(key);
	while (*v > 1)
		if (__atomic_compare_exchange_n(&key->enabled, v, *v - 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return true;
	return false;
}

KK_EXPORT int static_key_slow_dec(struct static_key *key)
{
	int v;

	if (!key)
		return fail(-EINVAL, "NULL key");
	if (jump_label_dec_not_one(key, &v))
		return 0;
	return locked_call(dec_locked, key);
}

/* ---- the queued API --------------------------------------------------------------- */

static int queue_key(struct static_key *key, uintptr_t state)
{
	int ret;

	if (!key)
		return fail(-EINVAL, "NULL key");
	if (lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	ret = key_known(key);
	if (!ret && key_qstate(key) == JL_Q_NONE && queue_add(key))
		ret = fail(-ENOMEM, "out of memory for the queue");
	if (!ret)
		set_qstate(key, state);		/* the last queued state wins */
	jump_label_unlock();
	return ret;
}

KK_EXPORT int static_key_enable_queued(struct static_key *key) { return queue_key(key, JL_Q_ON); }
KK_EXPORT int static_key_disable_queued(struct static_key *key) { return queue_key(key, JL_Q_OFF); }

KK_EXPORT void kk_static_key_discard_queued(void)
{
	jump_label_lock();
	queue_clear();
	jump_label_unlock();
}

/*
 * Switch @n keys, each of which changes state (@old: its count now), in one
 * batch, with the flags in publication order: down before the code, up
 * after it.  On error every flag is back as it was.
 */
static int flip_keys(struct static_key *const *keys, const bool *on, const int *old, size_t n)
{
	int ret;

	for (size_t i = 0; i < n; i++)
		if (!on[i])
			__atomic_store_n(&keys[i]->enabled, 0, __ATOMIC_RELEASE);
	ret = patch_keys(keys, on, n);
	for (size_t i = 0; i < n; i++) {
		if (ret)
			__atomic_store_n(&keys[i]->enabled, old[i], __ATOMIC_RELEASE);
		else if (on[i])
			__atomic_store_n(&keys[i]->enabled, 1, __ATOMIC_RELEASE);
	}
	return ret;
}

KK_EXPORT int static_key_apply_queued(void)
{
	struct static_key **keys = NULL;
	bool *on = NULL;
	int *old = NULL;
	size_t n = 0;
	int ret = 0;

	if (lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	if (!queue_len)
		goto out;
	keys = malloc(queue_len * sizeof(*keys));
	on = malloc(queue_len * sizeof(*on));
	old = malloc(queue_len * sizeof(*old));
	if (!keys || !on || !old) {
		ret = fail(-ENOMEM, "out of memory for %zu queued keys", queue_len);
		goto out;
	}
	/* Only keys whose state really changes take part; a queued disable of a
	 * key held by several references is refused before anything moves. */
	for (size_t i = 0; i < queue_len; i++) {
		struct static_key *key = queue[i];
		uintptr_t q = key_qstate(key);
		int v = static_key_count(key);

		if (q != JL_Q_ON && q != JL_Q_OFF)
			continue;
		if (q == JL_Q_OFF && v > 1) {
			ret = fail(-EBUSY, "queued disable of key %s, which holds %d references",
				   key->name ? key->name : "?", v);
			goto out;
		}
		if ((v > 0) == (q == JL_Q_ON))
			continue;
		keys[n] = key;
		on[n] = q == JL_Q_ON;
		old[n] = v;
		n++;
	}
	ret = flip_keys(keys, on, old, n);
	if (!ret)
		queue_clear();
out:
	jump_label_unlock();
	free(keys);
	free(on);
	free(old);
	return ret;
}

/*
 * static_key_enable() or static_key_disable() of @n distinct keys (a write
 * of the control endpoint), in one batch: a key already in its state keeps
 * its count; an off of a key held by more than one reference is refused, as
 * static_key_disable() refuses it.  All or nothing: on error no key, count
 * or site changed and no key left the queue.  On success each key leaves
 * the queue, as after an immediate call.  Under jump_label_mutex.
 */
int jump_label_set_keys_locked(struct static_key *const *keys, const bool *on, size_t n)
{
	struct static_key **flip = calloc(n + 1, sizeof(*flip));
	bool *fon = calloc(n + 1, sizeof(*fon));
	int *old = calloc(n + 1, sizeof(*old));
	char name[128];
	size_t m = 0;
	int ret = 0;

	if (!flip || !fon || !old) {
		ret = fail(-ENOMEM, "out of memory for %zu keys", n);
		goto out;
	}
	for (size_t i = 0; i < n && !ret; i++) {
		int v = static_key_count(keys[i]);

		if (!on[i] && v > 1) {
			jump_label_key_name(keys[i], name, sizeof(name));
			ret = fail(-EBUSY, "key %s holds %d references; off needs at most 1", name, v);
		} else if ((v > 0) != on[i]) {
			flip[m] = keys[i];
			fon[m] = on[i];
			old[m++] = v;
		}
	}
	for (size_t i = 0; i < n && !ret; i++)
		ret = key_known(keys[i]);
	if (!ret)
		ret = flip_keys(flip, fon, old, m);
	for (size_t i = 0; i < n && !ret; i++)
		if (key_qstate(keys[i]) > JL_Q_IDLE)
			set_qstate(keys[i], JL_Q_IDLE);	/* it stays in the array, inert */
out:
	free(flip);
	free(fon);
	free(old);
	return ret;
}

/* ---- objects ------------------------------------------------------------------------ */

/*
 * Sites were compiled for their key's initial value (key->type): a site is a
 * jump when type XOR branch (the kernel's jump_label_init_type()).  Patch
 * only the sites of keys that moved since; the others are not even read, so
 * loading an object touches none of its text.
 */
static void sync_new_sites(struct jump_label_object *o)
{
	struct kk_text_queue q = { 0 };
	size_t np, bad = 0;
	char err[200];

	struct static_key *prev = NULL;
	bool type = false, on = false;

	for (struct jump_entry *e = o->start; e < o->stop; e++) {
		struct static_key *key = entry_key(e);
		bool init, want;
		uintptr_t code, target;

		if (key != prev) {	/* once a run: the key's fields are shared data */
			prev = key;
			type = key->type != 0;
			on = static_key_count(key) > 0;
		}
		if (type == on)		/* init == want, whichever the branch */
			continue;
		init = type ^ entry_branch(e);
		want = on ^ entry_branch(e);
		code = entry_code(e);
		target = entry_target(e);
		if (kk_arch_jump_label_state(code, target) != (int)init) {
			bad++;
			continue;
		}
		if (!q.v && !(q.v = malloc((size_t)(o->stop - e) * sizeof(*q.v)))) {
			kk_warn("%s: out of memory setting the initial state of its sites",
				obj_name(o));
			return;
		}
		if (!q.cap)
			q.cap = (size_t)(o->stop - e);
		kk_arch_jump_label_transform_queue(&q, code, target, want);
	}
	np = q.n;
	if (np && kk_arch_jump_label_transform_apply(&q, err, sizeof(err)))
		kk_warn("%s: cannot set the initial state of %zu sites: %s", obj_name(o), np, err);
	if (bad)
		kk_warn("%s: %zu sites do not hold the instruction their key's initial value "
			"implies; left alone", obj_name(o), bad);
	free(q.v);
}

/*
 * KK_JUMP_LABEL_COW=lazy (the default): site pages stay shared until a site
 * on them changes.  =eager: they are made private as the object registers
 * (see kk_text_prepare): more memory, but the first batch over many pages
 * then costs no TLB-flush IPI per page even while other threads run them.
 */
static bool eager_cow(void)
{
	static const char *const how[] = { "lazy", "eager", NULL };
	static int eager = -1, warned;

	if (eager < 0)
		eager = kk_env_choice("KK_JUMP_LABEL_COW", how, &warned);
	return eager;
}

static int addr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

static void prepare_text(const struct jump_label_object *o)
{
	size_t n = (size_t)(o->stop - o->start);
	uintptr_t *a = malloc(n * sizeof(*a));

	if (!a)
		return;
	for (size_t i = 0; i < n; i++)
		a[i] = entry_code(&o->start[i]);
	qsort(a, n, sizeof(*a), addr_cmp);
	kk_text_prepare(a, n);
	free(a);
}

static struct jump_entry *next_run(struct jump_label_object *o, struct jump_entry *e)
{
	return e + run_len(o, e);
}

/*
 * The table registered last.  Every unit of an object calls
 * kk_jump_label_add_object() from its constructor, one after the other, and
 * only the first call has work to do: the others see this without the lock
 * (nginx: 127 units, ~150 instructions each for the lock and the list).
 * Set under the lock once the table is registered, cleared under it before
 * the table is dropped, so an object loaded later at the same address is
 * never taken for it.
 */
static _Atomic(const struct jump_entry *) last_added;

KK_EXPORT int kk_jump_label_add_object(const struct jump_entry *start, const struct jump_entry *stop)
{
	struct jump_label_object *o;
	uintptr_t base;
	int ret = 0;

	if (!start || stop <= start ||
	    atomic_load_explicit(&last_added, memory_order_acquire) == start)
		return 0;
	jump_label_lock();
	for (o = objects; o; o = o->next)
		if (o->start == start)		/* every unit of an object calls us */
			goto out;
	o = calloc(1, sizeof(*o));
	if (!o) {
		ret = -ENOMEM;
		kk_warn("out of memory registering %zu static-key sites", (size_t)(stop - start));
		goto out;
	}
	o->start = (struct jump_entry *)start;
	o->stop = (struct jump_entry *)stop;
	kk_addr_range(start, &base, &o->lo, &o->hi);
	o->next = objects;
	objects = o;
	ret = link_runs(o);
	if (ret) {
		kk_warn("out of memory registering %zu static-key sites", (size_t)(stop - start));
		objects = o->next;
		free(o);
		goto out;
	}
	kk_text_arm();
	if (eager_cow())
		prepare_text(o);
	sync_new_sites(o);
	atomic_store_explicit(&last_added, start, memory_order_release);
out:
	jump_label_unlock();
	kk_control_autostart();		/* n > 0 here: there is something to control */
	return ret;
}

static bool in_range(const void *p, uintptr_t lo, uintptr_t hi)
{
	return (uintptr_t)p >= lo && (uintptr_t)p < hi;
}

/*
 * Runs from every object's destructor, also at exit() inside a sandbox: no
 * syscall beyond the lock's futex (dl_iterate_phdr() makes none).  In an
 * exiting process nothing is unregistered (kk_exiting()): every object stays
 * mapped until _exit, so the registry stays as it is, and another thread
 * that still switches a key patches mapped code.
 */
__attribute__((__noinline__)) static void del_object(const struct jump_entry *start,
						   const struct jump_entry *stop, const void *self)
{
	struct jump_label_object *o = NULL, **pp;
	uintptr_t base, lo = 0, hi = 0;
	size_t w = 0;

	jump_label_deferred_forget_object(self);
	jump_label_lock();
	if (start && stop > start) {
		for (pp = &objects; *pp && (*pp)->start != start; pp = &(*pp)->next)
			;
		o = *pp;
	}
	if (o) {
		if (atomic_load_explicit(&last_added, memory_order_relaxed) == o->start)
			atomic_store_explicit(&last_added, NULL, memory_order_relaxed);
		for (struct jump_entry *e = o->start; e < o->stop; e = next_run(o, e))
			unlink_run(o, e);
		*pp = o->next;
		lo = o->lo;
		hi = o->hi;
		kk_text_forget(lo, hi);
	}
	/* Forget the keys that live in the object: their memory goes with it. */
	if (!hi && self && (records || queue_len || jump_label_exports_any()))
		kk_addr_range(self, &base, &lo, &hi);
	if (hi) {
		jump_label_exports_forget(lo, hi);
		for (struct jump_label_key *k = records, *next; k; k = next) {
			next = k->next;
			if (!in_range(k->key, lo, hi))
				continue;
			/* At exit the key stays mapped and another thread may
			 * still touch it: leave it unlinked, not dangling. */
			priv_set(k->key, 0);
			record_free(k);
		}
		for (size_t i = 0; i < queue_len; i++)
			if (!in_range(queue[i], lo, hi))
				queue[w++] = queue[i];
		queue_len = w;
	}
	jump_label_unlock();
	free(o);
}

/* Every unit of every object calls this at exit: no frame on that path. */
KK_EXPORT void kk_jump_label_del_object(const struct jump_entry *start, const struct jump_entry *stop,
			      const void *self)
{
	if (!kk_exiting(self))
		del_object(start, stop, self);
}

/* ---- listing and stats ------------------------------------------------------------- */

/* Call @fn once for every key the registry knows. */
void jump_label_for_each_key(void (*fn)(struct static_key *key, void *arg), void *arg)
{
	for (struct jump_label_object *o = objects; o; o = o->next)
		for (struct jump_entry *e = o->start; e < o->stop; e = next_run(o, e))
			if (key_entries(entry_key(e)) == e)
				fn(entry_key(e), arg);
	for (struct jump_label_key *k = records; k; k = k->next)
		fn(k->key, arg);
}

static void count_key(struct static_key *key, void *arg)
{
	(void)key;
	(*(unsigned long long *)arg)++;
}

KK_EXPORT void kk_jump_label_get_stats(struct kk_jump_label_stats *st)
{
	struct kk_text_stats ts;
	struct kk_sync_stats ss;

	kk_text_get_stats(&ts);
	memset(st, 0, sizeof(*st));
	st->syncs = ts.syncs;
	st->batches = ts.batches;
	st->sites_patched = ts.pokes;
	st->traps = ts.traps;
	st->stopped = ts.stopped;
	st->repairs = ts.repairs;
	st->stuck = ts.stuck;
	kk_sync_get_stats(&ss);
	st->signal_syncs = ss.signal_rounds;
	jump_label_lock();
	jump_label_for_each_key(count_key, &st->keys);
	for (struct jump_label_object *o = objects; o; o = o->next) {
		st->objects++;
		st->sites += (unsigned long long)(o->stop - o->start);
	}
	jump_label_unlock();
}

KK_EXPORT const char *kk_jump_label_method(void)
{
	return kk_text_method();
}

KK_EXPORT const char *kk_jump_label_sync_method(void)
{
	return kk_sync_method();
}

/* No symbol lookup here: this runs under jump_label_mutex (see object_name.c). */
void jump_label_key_name(const struct static_key *key, char *buf, size_t len)
{
	if (key->name && key->array)	/* an element of DEFINE_STATIC_KEY_ARRAY_* */
		snprintf(buf, len, "%s[%zu]", key->name,
			 (size_t)((const char *)key - (const char *)key->array) /
				 sizeof(struct static_key_true));
	else if (key->name)
		snprintf(buf, len, "%s", key->name);
	else
		snprintf(buf, len, "key@%p", (const void *)key);
}

/* The module of the object that holds @key, computed now (listing time). */
void jump_label_key_module(const struct static_key *key, char *buf, size_t len)
{
	uintptr_t base;

	for (struct jump_label_object *o = objects; o; o = o->next) {
		if (in_range(key, o->lo, o->hi)) {
			snprintf(buf, len, "%s", obj_name(o));
			return;
		}
	}
	kk_addr_object(key, buf, len, &base);
}

/*
 * An exported key is listed by the name it was exported with, the name a
 * write takes, and mode "rw"; any other key by its own name, "r-" (as
 * `kkctl files` marks files).
 */
static void show_key(struct static_key *key, void *arg)
{
	char name[128], module[64];
	const char *exported = jump_label_export_name(key);
	int v = static_key_count(key);

	if (exported)
		snprintf(name, sizeof(name), "%s", exported);
	else
		jump_label_key_name(key, name, sizeof(name));
	jump_label_key_module(key, module, sizeof(module));
	kk_buf_printf(arg, "%s %d %d %zu %s %s\n", name, v > 0, v, key_nsites(key), module,
		      exported ? "rw" : "r-");
}

static int static_keys_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	kk_buf_printf(out, "# name enabled count sites module mode\n");
	jump_label_lock();
	jump_label_for_each_key(show_key, out);
	jump_label_unlock();
	return 0;
}

static const struct kk_control_file_ops static_keys_fops = {
	.show = static_keys_show,
	.write = jump_label_control_write,
};
KK_CONTROL_LIB_FILE(static_keys_file, "static_keys", &static_keys_fops);

/* ---- init and fork ------------------------------------------------------------------- */

static void atfork_prepare(void)
{
	/* A fork in the middle of a batch would give the child half-patched
	 * code and no thread to finish it: wait for the batch. */
	if (!lock_held())
		pthread_mutex_lock(&jump_label_mutex);
}

static void atfork_parent(void)
{
	if (!lock_held())
		pthread_mutex_unlock(&jump_label_mutex);
}

static void atfork_child(void)
{
	int held = lock_held();

	kk_text_atfork_child();
	if (held)
		atomic_store(&jump_label_owner, pthread_self());
	else
		pthread_mutex_unlock(&jump_label_mutex);
}

static const struct kk_fork_ops jump_label_fork_ops = {
	KK_INIT_JUMP_LABEL, atfork_prepare, atfork_parent, atfork_child
};

/* Only what cannot fail and makes no syscall: set-up for patching is lazy. */
KK_INIT(150) static void jump_label_lib_init(void)
{
	kk_fork_register(&jump_label_fork_ops);
	kk_control_add_lib_file(&static_keys_file);
}
