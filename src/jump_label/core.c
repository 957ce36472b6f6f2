// SPDX-License-Identifier: MIT
/*
 * Static keys: the registry of keys and sites, and the key API.
 *
 * Data structures first:
 *  - jl_object: one ELF object (the executable or a shared library) with a
 *    kk_jump_table.  Its entries are decoded into absolute jl_site records,
 *    sorted by (key, address), so the sites of one key are one run.
 *  - jl_key: the library's record of one struct static_key (key->priv).  It
 *    lists the runs of sites that use the key, one per object.
 *  - the queue: keys with a pending queued state, applied as one batch.
 *
 * Everything that patches code or edits these structures runs under
 * jl_mutex, the analogue of the kernel's jump_label_mutex.  Readers of a key
 * only ever load key->enabled.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "common.h"
#include "control_internal.h"
#include "internal.h"
#include "jump_label/jl.h"
#include "text_patch.h"

struct jl_site {
	uintptr_t code;
	uintptr_t target;
	struct static_key *key;
	unsigned branch;
};

struct jl_object {
	struct jl_object *next;
	const void *start;		/* identifies the object's table */
	struct jl_site *sites;
	size_t nsites;
	uintptr_t base;
	char name[64];
};

struct jl_use {
	struct jl_object *obj;
	size_t first, n;		/* a run of obj->sites */
};

struct jl_key {
	struct jl_key *next;
	struct jl_key **pprev;		/* O(1) unlink: objects can hold thousands */
	struct static_key *key;
	struct jl_use *uses;
	size_t nuses, cap;
	uintptr_t owner;		/* base of the object that holds the key */
	char module[64];
	int queued;			/* -1: not queued; else the queued state */
};

static pthread_mutex_t jl_mutex = PTHREAD_MUTEX_INITIALIZER;
static _Atomic(pthread_t) jl_owner;
static atomic_int jl_owned;

static struct jl_object *objects;
static struct jl_key *keys;
static struct jl_key **queue;
static size_t queue_len, queue_cap;

static __thread char jl_err[256];

#define fail jl_fail

/* ---- errors --------------------------------------------------------------------- */

int jl_fail(int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(jl_err, sizeof(jl_err), fmt, ap);
	va_end(ap);
	return err;
}

const char *kk_jump_label_strerror(void)
{
	return jl_err[0] ? jl_err : "no error";
}

/* ---- the lock ------------------------------------------------------------------- */

static int lock_held(void)
{
	return atomic_load(&jl_owned) && pthread_equal(atomic_load(&jl_owner), pthread_self());
}

void jump_label_lock(void)
{
	pthread_mutex_lock(&jl_mutex);
	atomic_store(&jl_owner, pthread_self());
	atomic_store(&jl_owned, 1);
}

void jump_label_unlock(void)
{
	atomic_store(&jl_owned, 0);
	pthread_mutex_unlock(&jl_mutex);
}

/* ---- key records ---------------------------------------------------------------- */

static struct jl_key *key_rec(struct static_key *key, int create)
{
	struct jl_key *k = key->priv;

	if (k && k->key == key)
		return k;
	if (!create)
		return NULL;
	k = calloc(1, sizeof(*k));
	if (!k)
		return NULL;
	k->key = key;
	k->queued = -1;
	kk_addr_object(key, k->module, sizeof(k->module), &k->owner);
	k->next = keys;
	if (keys)
		keys->pprev = &k->next;
	k->pprev = &keys;
	keys = k;
	key->priv = k;
	return k;
}

static int key_add_use(struct jl_key *k, struct jl_object *o, size_t first, size_t n)
{
	if (k->nuses == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 2;
		struct jl_use *u = realloc(k->uses, cap * sizeof(*u));

		if (!u)
			return -ENOMEM;
		k->uses = u;
		k->cap = cap;
	}
	k->uses[k->nuses++] = (struct jl_use){ o, first, n };
	return 0;
}

static size_t key_nsites(const struct jl_key *k)
{
	size_t n = 0;

	for (size_t i = 0; i < k->nuses; i++)
		n += k->uses[i].n;
	return n;
}

static void queue_del(struct jl_key *k)
{
	for (size_t i = 0; i < queue_len; i++) {
		if (queue[i] == k) {
			queue[i] = queue[--queue_len];
			break;
		}
	}
	k->queued = -1;
}

/* ---- patching ------------------------------------------------------------------- */

/*
 * Bring every site of @n keys to the state @on[i] in one batch.  All or
 * nothing: on error no site changed.
 */
static int patch_keys(struct jl_key *const *recs, const bool *on, size_t n)
{
	struct kk_poke *pokes;
	size_t total = 0, np = 0;
	char err[200] = "";
	int ret;

	for (size_t i = 0; i < n; i++)
		total += key_nsites(recs[i]);
	if (!total)
		return 0;
	pokes = malloc(total * sizeof(*pokes));
	if (!pokes)
		return fail(-ENOMEM, "out of memory for %zu sites", total);
	for (size_t i = 0; i < n; i++) {
		const struct jl_key *k = recs[i];

		for (size_t u = 0; u < k->nuses; u++) {
			const struct jl_use *use = &k->uses[u];

			for (size_t s = use->first; s < use->first + use->n; s++) {
				const struct jl_site *site = &use->obj->sites[s];
				bool jump = on[i] ^ site->branch;
				int cur = kk_arch_site_state(site->code, site->target);

				if (cur < 0) {
					free(pokes);
					return fail(-EILSEQ, "site %#lx in %s does not hold a jump-label "
						    "instruction", (unsigned long)site->code,
						    use->obj->name);
				}
				if (cur != jump)
					kk_arch_site_poke(&pokes[np++], site->code, site->target, jump);
			}
		}
	}
	ret = kk_text_poke_batch(pokes, np, err, sizeof(err));
	free(pokes);
	if (ret)
		return fail(ret, "%s", err);
	return 0;
}

static int key_set(struct static_key *key, bool on)
{
	struct jl_key *k = key_rec(key, 1);

	if (!k)
		return fail(-ENOMEM, "out of memory for the key record");
	return patch_keys(&k, &on, 1);
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
	struct jl_key *k;
	int ret = check_key(key);

	if (ret)
		return ret;
	if ((k = key_rec(key, 0)) && k->queued >= 0)
		queue_del(k);
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

int static_key_enable(struct static_key *key) { return locked_call(enable_locked, key); }
int static_key_disable(struct static_key *key) { return locked_call(disable_locked, key); }
int static_key_enable_cpuslocked(struct static_key *key) { return cpuslocked_call(enable_locked, key); }
int static_key_disable_cpuslocked(struct static_key *key) { return cpuslocked_call(disable_locked, key); }
int static_key_slow_inc_cpuslocked(struct static_key *key) { return cpuslocked_call(inc_locked, key); }
int static_key_slow_dec_cpuslocked(struct static_key *key) { return cpuslocked_call(dec_locked, key); }

int static_key_slow_inc(struct static_key *key)
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

int static_key_slow_dec(struct static_key *key)
{
	int v;

	if (!key)
		return fail(-EINVAL, "NULL key");
	v = static_key_count(key);
	while (v > 1)
		if (__atomic_compare_exchange_n(&key->enabled, &v, v - 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 0;
	return locked_call(dec_locked, key);
}

/* ---- the queued API --------------------------------------------------------------- */

static int queue_key(struct static_key *key, int state)
{
	struct jl_key *k;
	int ret = 0;

	if (!key)
		return fail(-EINVAL, "NULL key");
	if (lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	k = key_rec(key, 1);
	if (!k) {
		ret = fail(-ENOMEM, "out of memory for the key record");
	} else if (k->queued < 0) {
		if (queue_len == queue_cap) {
			size_t cap = queue_cap ? 2 * queue_cap : 64;
			struct jl_key **q = realloc(queue, cap * sizeof(*q));

			if (!q) {
				ret = fail(-ENOMEM, "out of memory for the queue");
				goto out;
			}
			queue = q;
			queue_cap = cap;
		}
		queue[queue_len++] = k;
	}
	if (!ret)
		k->queued = state;
out:
	jump_label_unlock();
	return ret;
}

int static_key_enable_queued(struct static_key *key) { return queue_key(key, 1); }
int static_key_disable_queued(struct static_key *key) { return queue_key(key, 0); }

void kk_static_key_discard_queued(void)
{
	jump_label_lock();
	for (size_t i = 0; i < queue_len; i++)
		queue[i]->queued = -1;
	queue_len = 0;
	jump_label_unlock();
}

int static_key_apply_queued(void)
{
	struct jl_key **recs = NULL;
	bool *on = NULL;
	int *old = NULL;
	size_t n = 0;
	int ret = 0;

	if (lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	if (!queue_len)
		goto out;
	recs = malloc(queue_len * sizeof(*recs));
	on = malloc(queue_len * sizeof(*on));
	old = malloc(queue_len * sizeof(*old));
	if (!recs || !on || !old) {
		ret = fail(-ENOMEM, "out of memory for %zu queued keys", queue_len);
		goto out;
	}
	/* Only keys whose state really changes take part; a queued disable of a
	 * key held by several references is refused before anything moves. */
	for (size_t i = 0; i < queue_len; i++) {
		struct jl_key *k = queue[i];
		int v = static_key_count(k->key);

		if (k->queued == 0 && v > 1) {
			ret = fail(-EBUSY, "queued disable of key %s, which holds %d references",
				   k->key->name ? k->key->name : "?", v);
			goto out;
		}
		if ((v > 0) == (k->queued == 1))
			continue;
		recs[n] = k;
		on[n] = k->queued == 1;
		old[n] = v;
		n++;
	}
	for (size_t i = 0; i < n; i++)
		if (!on[i])
			__atomic_store_n(&recs[i]->key->enabled, 0, __ATOMIC_RELEASE);
	ret = patch_keys(recs, on, n);
	for (size_t i = 0; i < n; i++) {
		if (ret)
			__atomic_store_n(&recs[i]->key->enabled, old[i], __ATOMIC_RELEASE);
		else if (on[i])
			__atomic_store_n(&recs[i]->key->enabled, 1, __ATOMIC_RELEASE);
	}
	if (!ret) {
		for (size_t i = 0; i < queue_len; i++)
			queue[i]->queued = -1;
		queue_len = 0;
	}
out:
	jump_label_unlock();
	free(recs);
	free(on);
	free(old);
	return ret;
}

/* ---- objects ------------------------------------------------------------------------ */

static int site_cmp(const void *a, const void *b)
{
	const struct jl_site *x = a, *y = b;

	if (x->key != y->key)
		return (uintptr_t)x->key < (uintptr_t)y->key ? -1 : 1;
	return x->code < y->code ? -1 : x->code > y->code;
}

static void decode_entries(const struct jump_entry *start, const struct jump_entry *stop,
			   struct jl_site *out)
{
	for (const struct jump_entry *e = start; e < stop; e++, out++) {
		uintptr_t slot = (uintptr_t)&e->key + (uintptr_t)(e->key & ~1LL);

		out->code = (uintptr_t)&e->code + (intptr_t)e->code;
		out->target = (uintptr_t)&e->target + (intptr_t)e->target;
		out->key = *(struct static_key *const *)slot;
		out->branch = (unsigned)(e->key & 1);
	}
}

static int addr_cmp(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;

	return x < y ? -1 : x > y;
}

/* Break copy-on-write on the object's site pages now (see kk_text_prepare). */
static void prepare_text(const struct jl_object *o)
{
	uintptr_t *a = malloc(o->nsites * sizeof(*a));

	if (!a)
		return;
	for (size_t i = 0; i < o->nsites; i++)
		a[i] = o->sites[i].code;
	qsort(a, o->nsites, sizeof(*a), addr_cmp);
	kk_text_prepare(a, o->nsites);
	free(a);
}

/* Sites were compiled for the key's initial value; bring them to its current one. */
static void sync_new_sites(struct jl_object *o)
{
	struct kk_poke *pokes = malloc(o->nsites * sizeof(*pokes));
	char err[200];
	size_t np = 0;

	if (!pokes)
		return;
	for (size_t i = 0; i < o->nsites; i++) {
		const struct jl_site *s = &o->sites[i];
		bool jump = (static_key_count(s->key) > 0) ^ s->branch;

		if (kk_arch_site_state(s->code, s->target) == !jump)
			kk_arch_site_poke(&pokes[np++], s->code, s->target, jump);
	}
	if (np && kk_text_poke_batch(pokes, np, err, sizeof(err)))
		fprintf(stderr, "kernelkit: %s: cannot set the initial state of %zu sites: %s\n",
			o->name, np, err);
	free(pokes);
}

int kk_jump_label_add_object(const struct jump_entry *start, const struct jump_entry *stop)
{
	size_t n = (size_t)(stop - start);
	struct jl_object *o;
	int ret = 0;

	if (!start || stop <= start)
		return 0;
	jump_label_lock();
	for (o = objects; o; o = o->next)
		if (o->start == start)		/* every unit of an object calls us */
			goto out;
	o = calloc(1, sizeof(*o));
	if (o)
		o->sites = malloc(n * sizeof(*o->sites));
	if (!o || !o->sites) {
		ret = -ENOMEM;
		if (o)
			free(o);
		fprintf(stderr, "kernelkit: out of memory registering %zu static-key sites\n", n);
		goto out;
	}
	o->start = start;
	o->nsites = n;
	kk_addr_object(start, o->name, sizeof(o->name), &o->base);
	decode_entries(start, stop, o->sites);
	qsort(o->sites, n, sizeof(*o->sites), site_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct jl_key *k = key_rec(o->sites[i].key, 1);

		while (j < n && o->sites[j].key == o->sites[i].key)
			j++;
		if (!k || key_add_use(k, o, i, j - i))
			ret = -ENOMEM;
		i = j;
	}
	o->next = objects;
	objects = o;
	if (!getenv("KK_JUMP_LABEL_LAZY_COW"))
		prepare_text(o);
	sync_new_sites(o);
out:
	jump_label_unlock();
	kk_control_autostart();		/* n > 0 here: there is something to control */
	return ret;
}

static void drop_key(struct jl_key *k)
{
	*k->pprev = k->next;
	if (k->next)
		k->next->pprev = k->pprev;
	if (k->queued >= 0)
		queue_del(k);
	free(k->uses);
	free(k);
}

void kk_jump_label_del_object(const struct jump_entry *start, const struct jump_entry *stop,
			      const void *self)
{
	struct jl_object *o = NULL, **pp;
	struct jl_key *k, *next;
	char name[64];
	uintptr_t base;

	kk_addr_object(self, name, sizeof(name), &base);
	jl_deferred_forget_object(self);
	jump_label_lock();
	if (start && stop > start) {
		for (pp = &objects; *pp && (*pp)->start != start; pp = &(*pp)->next)
			;
		o = *pp;
		if (o)
			*pp = o->next;
	}
	/* Forget this object's sites, and the keys that live in it: their
	 * memory goes away with it. */
	for (k = keys; k; k = next) {
		size_t w = 0;

		next = k->next;
		for (size_t i = 0; i < k->nuses; i++)
			if (k->uses[i].obj != o)
				k->uses[w++] = k->uses[i];
		k->nuses = w;
		if (base && k->owner == base && !k->nuses)
			drop_key(k);
	}
	if (o) {
		free(o->sites);
		free(o);
	}
	jump_label_unlock();
}

/* ---- listing and stats ------------------------------------------------------------- */

void kk_jump_label_get_stats(struct kk_jump_label_stats *st)
{
	struct kk_text_stats ts;

	kk_text_get_stats(&ts);
	memset(st, 0, sizeof(*st));
	st->syncs = ts.syncs;
	st->batches = ts.batches;
	st->sites_patched = ts.pokes;
	st->traps = ts.traps;
	jump_label_lock();
	for (struct jl_key *k = keys; k; k = k->next)
		st->keys++;
	for (struct jl_object *o = objects; o; o = o->next) {
		st->objects++;
		st->sites += o->nsites;
	}
	jump_label_unlock();
}

const char *kk_jump_label_method(void)
{
	return kk_text_method();
}

/* No symbol lookup here: this runs under jl_mutex (see object_name.c). */
static void key_name(const struct static_key *key, char *buf, size_t len)
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

static int static_keys_show(struct kk_buf *out, void *priv)
{
	char name[128];

	(void)priv;
	kk_buf_printf(out, "# name enabled count sites module\n");
	jump_label_lock();
	for (struct jl_key *k = keys; k; k = k->next) {
		int v = static_key_count(k->key);

		key_name(k->key, name, sizeof(name));
		kk_buf_printf(out, "%s %d %d %zu %s\n", name, v > 0, v, key_nsites(k), k->module);
	}
	jump_label_unlock();
	return 0;
}

static const struct kk_control_file_ops static_keys_fops = {
	.show = static_keys_show,
};

/* ---- init and fork ------------------------------------------------------------------- */

static void atfork_prepare(void)
{
	/* A fork in the middle of a batch would give the child half-patched
	 * code and no thread to finish it: wait for the batch. */
	if (!lock_held())
		pthread_mutex_lock(&jl_mutex);
}

static void atfork_parent(void)
{
	if (!lock_held())
		pthread_mutex_unlock(&jl_mutex);
}

static void atfork_child(void)
{
	int held = lock_held();

	kk_text_atfork_child();
	if (held)
		atomic_store(&jl_owner, pthread_self());
	else
		pthread_mutex_unlock(&jl_mutex);
}

static const struct kk_fork_ops jl_fork_ops = {
	KK_INIT_JUMP_LABEL, atfork_prepare, atfork_parent, atfork_child
};

KK_INIT(150) static void jump_label_init(void)
{
	kk_text_init();
	kk_fork_register(&jl_fork_ops);
	kk_control_create_file("static_keys", &static_keys_fops, NULL);
}
