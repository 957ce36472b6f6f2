// SPDX-License-Identifier: MIT
/*
 * Debug objects: the hash of trackers and the state machine.
 *
 * Trackers live in 2^14 buckets keyed by address >> 12, each with its own
 * spinlock, so a range check visits only the buckets of the range's pages.
 * Every transition follows the kernel's table (see docs/debugobjects.md);
 * reports and fixups run after the bucket lock is dropped, on a copy of the
 * tracker, so a fixup may call the hooks again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#ifndef KK_ODEBUG_STANDALONE
#include <kernelkit/control.h>
#endif

DEFINE_STATIC_KEY_FALSE(kk_debug_objects_key);

#ifdef KK_ODEBUG_STANDALONE
/*
 * Built without the rest of kernelkit (the TSan stress test, with
 * KK_NO_JUMP_LABEL): every object still registers its (empty) site table.
 */
int kk_jump_label_add_object(const struct jump_entry *start, const struct jump_entry *stop)
{
	(void)start;
	(void)stop;
	return 0;
}

void kk_jump_label_del_object(const struct jump_entry *start, const struct jump_entry *stop,
			      const void *self)
{
	(void)start;
	(void)stop;
	(void)self;
}
#endif

int odebug_enabled;

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

	obj->next = f;
	if (f)
		f->pprev = &obj->next;
	obj->pprev = &b->first;
	__atomic_store_n(&b->first, obj, __ATOMIC_RELAXED);
}

static inline void bucket_del(struct debug_obj *obj)
{
	struct debug_obj *n = obj->next;

	__atomic_store_n(obj->pprev, n, __ATOMIC_RELAXED);
	if (n)
		n->pprev = obj->pprev;
}

static inline void update_max(unsigned long *m, unsigned long v)
{
	unsigned long cur = ODEBUG_READ(*m);

	while (v > cur && !__atomic_compare_exchange_n(m, &cur, v, false, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

static struct debug_obj *lookup_object(const void *addr, struct odebug_bucket *b)
{
	unsigned long cnt = 0;

	for (struct debug_obj *obj = b->first; obj; obj = obj->next) {
		cnt++;
		if (obj->object == addr)
			return obj;
	}
	if (odebug_unlikely(cnt > ODEBUG_READ(odebug_maxchain)))
		update_max(&odebug_maxchain, cnt);
	return NULL;
}

#define ERR_NOT_STATIC	((struct debug_obj *)-1L)

/*
 * The tracker of @addr, or a new one.  A new one is made unconditionally for
 * init; for activate and assert_init (@alloc_ifstatic) only when the type
 * says the object is static, and then it starts as INIT.  NULL: out of
 * trackers, tracking is now off and *oom_owner tells whether this caller
 * turned it off.  *new_obj: a tracker was created.
 */
static struct debug_obj *lookup_object_or_alloc(void *addr, struct odebug_bucket *b,
						const struct debug_obj_descr *descr,
						bool alloc_ifstatic, bool *new_obj,
						bool *oom_owner)
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
	obj = odebug_alloc_tracker();
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
	*oom_owner = __atomic_exchange_n(&odebug_enabled, 0, __ATOMIC_RELAXED) != 0;
	return NULL;
}

/* Take every tracker out of the hash and give it to the slab. */
static void flush_hash(void)
{
	for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct odebug_bucket *b = &obj_hash[i];
		struct debug_obj *list, *obj;
		unsigned long n = 0;

		if (!__atomic_load_n(&b->first, __ATOMIC_RELAXED))
			continue;
		odebug_spin_lock(&b->lock);
		list = b->first;
		__atomic_store_n(&b->first, NULL, __ATOMIC_RELAXED);
		odebug_spin_unlock(&b->lock);
		for (obj = list; obj; obj = obj->next)
			n++;
		odebug_free_to_slab(list, n);
	}
}

static void debug_objects_oom(void)
{
	ODEBUG_ADD(odebug_oom_count, 1);
	odebug_print_text("ODEBUG: Out of memory. ODEBUG disabled\n");
	flush_hash();
#ifdef KK_ODEBUG_STANDALONE
	__atomic_store_n(&kk_debug_objects_key.key.enabled, 0, __ATOMIC_RELEASE);
#else
	static_branch_disable(&kk_debug_objects_key);
#endif
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

void __kk_odebug_init(void *addr, const struct debug_obj_descr *descr, int onstack)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;
	bool new_obj = false, oom = false, on_stack;
	uint32_t stack = 0;

	if (!enabled())
		return;
	odebug_fill_pool();
	on_stack = odebug_on_stack(addr);
	if (ODEBUG_READ(odebug_backtraces))
		stack = odebug_stack_capture();

	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object_or_alloc(addr, db, descr, false, &new_obj, &oom);
	if (odebug_unlikely(!obj)) {
		odebug_spin_unlock(&db->lock);
		if (oom)
			debug_objects_oom();
		return;
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
		return;
	default:
		break;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "init");
	if (o.state == ODEBUG_STATE_ACTIVE)
		debug_object_fixup(descr->fixup_init, addr, o.state);
}

int __kk_odebug_activate(void *addr, const struct debug_obj_descr *descr)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;
	bool new_obj = false, oom = false;
	uint32_t stack = 0;

	if (!enabled())
		return 0;
	odebug_fill_pool();
	if (ODEBUG_READ(odebug_backtraces))
		stack = odebug_stack_capture();

	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object_or_alloc(addr, db, descr, true, &new_obj, &oom);
	if (odebug_unlikely(!obj)) {
		odebug_spin_unlock(&db->lock);
		if (oom)
			debug_objects_oom();
		return 0;
	}
	if (odebug_likely(obj != ERR_NOT_STATIC)) {
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
			return 0;
		}
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "activate");

	switch (o.state) {
	case ODEBUG_STATE_ACTIVE:
	case ODEBUG_STATE_NOTAVAILABLE:
		if (debug_object_fixup(descr->fixup_activate, addr, o.state))
			return 0;
		/* fall through */
	default:
		return -EINVAL;
	}
}

void __kk_odebug_deactivate(void *addr, const struct debug_obj_descr *descr)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;

	if (!enabled())
		return;
	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
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
			return;
		}
		o = *obj;
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "deactivate");
}

void __kk_odebug_destroy(void *addr, const struct debug_obj_descr *descr)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;

	if (!enabled())
		return;
	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object(addr, db);
	if (!obj) {
		odebug_spin_unlock(&db->lock);
		return;
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
		return;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "destroy");
	if (o.state == ODEBUG_STATE_ACTIVE)
		debug_object_fixup(descr->fixup_destroy, addr, o.state);
}

/* @onstack: 1 from destroy_object_on_stack() (checked), -1 unchecked. */
void __kk_odebug_free(void *addr, const struct debug_obj_descr *descr, int onstack)
{
	struct odebug_bucket *db;
	struct debug_obj *obj, o;

	if (!enabled())
		return;
	if (onstack == 1 && !odebug_on_stack(addr))
		odebug_stack_warning(addr, false);
	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object(addr, db);
	if (!obj) {
		odebug_spin_unlock(&db->lock);
		return;
	}
	if (obj->state != ODEBUG_STATE_ACTIVE) {
		bucket_del(obj);
		odebug_spin_unlock(&db->lock);
		odebug_free_tracker(obj);
		return;
	}
	o = *obj;
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "free");
	debug_object_fixup(descr->fixup_free, addr, o.state);
}

void __kk_odebug_assert_init(void *addr, const struct debug_obj_descr *descr)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;
	bool new_obj = false, oom = false;

	if (!enabled())
		return;
	odebug_fill_pool();
	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object_or_alloc(addr, db, descr, true, &new_obj, &oom);
	odebug_spin_unlock(&db->lock);
	if (odebug_likely(obj && obj != ERR_NOT_STATIC))
		return;
	if (!obj) {
		if (oom)
			debug_objects_oom();
		return;
	}
	/* neither tracked nor static: not initialised */
	odebug_print_object(&o, "assert_init");
	debug_object_fixup(descr->fixup_assert_init, addr, ODEBUG_STATE_NOTAVAILABLE);
}

void __kk_odebug_active_state(void *addr, const struct debug_obj_descr *descr,
			      unsigned int expect, unsigned int next)
{
	struct debug_obj o = { .object = addr, .state = ODEBUG_STATE_NOTAVAILABLE, .descr = descr };
	struct odebug_bucket *db;
	struct debug_obj *obj;

	if (!enabled())
		return;
	db = get_bucket((unsigned long)addr);
	odebug_spin_lock(&db->lock);
	obj = lookup_object(addr, db);
	if (obj) {
		if (obj->state == ODEBUG_STATE_ACTIVE && obj->astate == expect) {
			obj->astate = next;
			odebug_spin_unlock(&db->lock);
			return;
		}
		o = *obj;
	}
	odebug_spin_unlock(&db->lock);
	odebug_print_object(&o, "active_state");
}

static void free_local(struct debug_obj *list)
{
	while (list) {
		struct debug_obj *next = list->next;

		odebug_free_tracker(list);
		list = next;
	}
}

/*
 * One bucket of a range check.  Active objects in the range are reported and
 * their fixup_free runs; the kernel then rescans until none is left.  Where
 * the kernel would rescan forever (no fixup, or one that left the object
 * active), the tracker is dropped instead: its memory is going away.
 */
static unsigned long check_bucket(struct odebug_bucket *db, unsigned long saddr,
				  unsigned long eaddr)
{
	unsigned long cnt, total = 0;
	struct debug_obj *obj, *next, o;

repeat:
	cnt = 0;
	struct debug_obj *freelist = NULL;

	odebug_spin_lock(&db->lock);
	for (obj = db->first; obj; obj = next) {
		unsigned long oaddr = (unsigned long)obj->object;

		next = obj->next;
		cnt++;
		if (oaddr < saddr || oaddr >= eaddr)
			continue;
		if (obj->state == ODEBUG_STATE_ACTIVE) {
			o = *obj;
			odebug_spin_unlock(&db->lock);
			free_local(freelist);
			total += cnt;
			odebug_print_object(&o, "free");
			debug_object_fixup(o.descr->fixup_free, o.object, o.state);
			odebug_spin_lock(&db->lock);
			obj = lookup_object(o.object, db);
			if (obj && obj->state == ODEBUG_STATE_ACTIVE)
				bucket_del(obj);	/* not fixed: drop it */
			else
				obj = NULL;
			odebug_spin_unlock(&db->lock);
			if (obj)
				odebug_free_tracker(obj);
			if (!enabled())
				return total;
			goto repeat;
		}
		bucket_del(obj);
		obj->next = freelist;
		freelist = obj;
	}
	odebug_spin_unlock(&db->lock);
	free_local(freelist);
	if (cnt > ODEBUG_READ(odebug_maxchain))
		update_max(&odebug_maxchain, cnt);
	return total + cnt;
}

void __kk_odebug_check_no_obj_freed(const void *address, unsigned long size)
{
	unsigned long saddr = (unsigned long)address, eaddr, paddr, chunks, checked = 0;

	if (!enabled() || !size)
		return;
	eaddr = saddr + size;
	if (eaddr < saddr)
		eaddr = ~0ul;
	paddr = saddr & ODEBUG_CHUNK_MASK;
	chunks = ((eaddr - paddr) + (ODEBUG_CHUNK_SIZE - 1)) >> ODEBUG_CHUNK_SHIFT;
	if (eaddr - paddr > ~0ul - ODEBUG_CHUNK_SIZE)
		chunks = ~0ul;

	if (chunks >= ODEBUG_HASH_SIZE) {
		/* a huge range: every bucket once is cheaper than every page */
		for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
			if (__atomic_load_n(&obj_hash[i].first, __ATOMIC_RELAXED))
				checked += check_bucket(&obj_hash[i], saddr, eaddr);
			if (!enabled())
				return;
		}
	} else {
		for (; chunks > 0; chunks--, paddr += ODEBUG_CHUNK_SIZE) {
			struct odebug_bucket *db = get_bucket(paddr);

			/* an empty bucket holds nothing of ours: skip its lock */
			if (!__atomic_load_n(&db->first, __ATOMIC_RELAXED))
				continue;
			checked += check_bucket(db, saddr, eaddr);
			if (!enabled())
				return;
		}
	}
	if (checked > ODEBUG_READ(odebug_maxchecked))
		update_max(&odebug_maxchecked, checked);
}

/* ---- extras ------------------------------------------------------------------------- */

bool kk_debug_object_lookup(const void *addr, enum debug_obj_state *state, unsigned int *astate)
{
	struct odebug_bucket *db = get_bucket((unsigned long)addr);
	struct debug_obj *obj;
	bool found = false;

	odebug_spin_lock(&db->lock);
	obj = lookup_object(addr, db);
	if (obj) {
		found = true;
		if (state)
			*state = (enum debug_obj_state)obj->state;
		if (astate)
			*astate = obj->astate;
	}
	odebug_spin_unlock(&db->lock);
	return found;
}

/* Visit every tracker (bucket locked); for reports. */
void odebug_for_each_object(void (*fn)(const struct debug_obj *obj, void *arg), void *arg)
{
	for (unsigned int i = 0; i < ODEBUG_HASH_SIZE; i++) {
		struct odebug_bucket *b = &obj_hash[i];

		if (!__atomic_load_n(&b->first, __ATOMIC_RELAXED))
			continue;
		odebug_spin_lock(&b->lock);
		for (struct debug_obj *obj = b->first; obj; obj = obj->next)
			fn(obj, arg);
		odebug_spin_unlock(&b->lock);
	}
}

static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;

int kk_debug_objects_enable(void)
{
	int ret = 0;

	odebug_pool_init();
	pthread_mutex_lock(&enable_lock);
	odebug_worker_start();
	ODEBUG_WRITE(odebug_enabled, 1);
#ifdef KK_ODEBUG_STANDALONE
	__atomic_store_n(&kk_debug_objects_key.key.enabled, 1, __ATOMIC_RELEASE);
#else
	ret = static_branch_enable(&kk_debug_objects_key);
	if (ret)
		ODEBUG_WRITE(odebug_enabled, 0);
#endif
	pthread_mutex_unlock(&enable_lock);
	return ret;
}

int kk_debug_objects_disable(void)
{
	int ret = 0;

	pthread_mutex_lock(&enable_lock);
#ifdef KK_ODEBUG_STANDALONE
	__atomic_store_n(&kk_debug_objects_key.key.enabled, 0, __ATOMIC_RELEASE);
#else
	ret = static_branch_disable(&kk_debug_objects_key);
#endif
	if (!ret) {
		ODEBUG_WRITE(odebug_enabled, 0);
		flush_hash();
	}
	pthread_mutex_unlock(&enable_lock);
	return ret;
}

bool kk_debug_objects_enabled(void)
{
	return enabled();
}

void kk_debug_objects_reset(void)
{
	flush_hash();
	odebug_pool_reset();
	odebug_report_reset();
	ODEBUG_WRITE(odebug_maxchain, 0);
	ODEBUG_WRITE(odebug_maxchecked, 0);
}

void kk_debug_objects_get_stats(struct kk_debug_objects_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->max_chain = ODEBUG_READ(odebug_maxchain);
	st->max_checked = ODEBUG_READ(odebug_maxchecked);
	st->warnings = ODEBUG_READ(odebug_warnings);
	st->fixups = ODEBUG_READ(odebug_fixups);
	st->stack_warnings = ODEBUG_READ(odebug_stack_warnings);
	st->oom = ODEBUG_READ(odebug_oom_count);
	odebug_pool_stats(st);
}

/* ---- fork, the control files, load-time settings -------------------------------------- */

static bool fork_locked_buckets;		/* under enable_lock */

/* While tracking is off no thread is inside a bucket lock for long: skip them. */
static void atfork_prepare(void)
{
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
}

static void atfork_child(void)
{
	odebug_pool_atfork_child();
	unlock_buckets();
	odebug_report_atfork_child();
	pthread_mutex_unlock(&enable_lock);
}

#ifndef KK_ODEBUG_STANDALONE
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
#endif

static bool env_true(const char *name)
{
	const char *e = getenv(name);

	return e && (e[0] == '1' || e[0] == 'y' || e[0] == 'Y');
}

extern int odebug_exit_report;

__attribute__((constructor(210))) static void odebug_ctor(void)
{
	const char *e;

	odebug_pool_init();
	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	if ((e = getenv("KK_DEBUG_OBJECTS_POLICY")) && *e &&
	    kk_debug_objects_set_policy(e))
		fprintf(stderr, "ODEBUG: unknown policy KK_DEBUG_OBJECTS_POLICY=%s\n", e);
	if ((e = getenv("KK_DEBUG_OBJECTS_MAX_TRACKERS")) && *e)
		kk_debug_objects_set_max_trackers(strtoul(e, NULL, 0));
	if (env_true("KK_DEBUG_OBJECTS_BACKTRACE"))
		kk_debug_objects_set_backtraces(true);
	if ((e = getenv("KK_DEBUG_OBJECTS_EXIT_REPORT")) && e[0] == '0')
		ODEBUG_WRITE(odebug_exit_report, 0);
#ifndef KK_ODEBUG_STANDALONE
	kk_control_create_file("debug_objects/stats", &stats_ops, NULL);
	kk_control_create_file("debug_objects/policy", &policy_ops, NULL);
#endif
	if (env_true("KK_DEBUG_OBJECTS"))
		kk_debug_objects_enable();
}
