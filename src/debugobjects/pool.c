// SPDX-License-Identifier: MIT
/*
 * Debug objects: where trackers come from and go to.
 *
 *   slab        mmap'ed chunks carved into trackers, with a free list.  This is
 *               the kmem_cache of the kernel: objs_allocated / objs_freed count
 *               trackers taken from and given back to it.  Never the hooked
 *               malloc, so the preload library can check free() safely.
 *   per-thread  one pool per thread (TLS), no lock: trackers are taken from and
 *               given to it by its thread only.  Full batches move to and from
 *               the shared pools.
 *   global      a stack of batches (min 256, max 1024, plus 16 per CPU).
 *   to-free     batches waiting for the free worker (unbounded).
 *
 * One spinlock (pool_lock) covers the global and to-free pools and is taken
 * only to move a whole batch.  Lock order: bucket lock -> pool_lock -> slab.
 *
 * The policies (see kk_debug_objects_set_policy()) differ in the per-thread
 * pool's size, in whether the per-thread pool refills from the to-free pool
 * at every batch boundary, in where overflow goes (slab or to-free) and in how
 * the free worker decides how much to free.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "debugobjects/internal.h"

/* ---- policies ------------------------------------------------------------------ */

struct odebug_policy {
	const char *name;
	unsigned int pcpu_max;		/* per-thread pool size, trackers */
	bool aggressive;		/* refill from to-free at each batch boundary */
	bool to_free;			/* overflow of the global pool goes to to-free */
	bool ewma;			/* the worker frees only as the average falls */
};

static const struct odebug_policy policies[] = {
	{ "base",   4 * ODEBUG_BATCH_SIZE, false, false, false },
	{ "pcpu2x", 8 * ODEBUG_BATCH_SIZE, false, false, false },
	{ "refill", 8 * ODEBUG_BATCH_SIZE, true,  true,  false },
	{ "ewma",   8 * ODEBUG_BATCH_SIZE, true,  true,  true  },
};
#define NPOLICIES (sizeof(policies) / sizeof(policies[0]))

static int cur_policy = NPOLICIES - 1;

static inline const struct odebug_policy *policy(void)
{
	return &policies[ODEBUG_READ(cur_policy)];
}

KK_EXPORT int kk_debug_objects_set_policy(const char *name)
{
	if (!name)
		return -EINVAL;
	for (unsigned int i = 0; i < NPOLICIES; i++) {
		if (!strcmp(name, policies[i].name)) {
			ODEBUG_WRITE(cur_policy, (int)i);
			return 0;
		}
	}
	return -EINVAL;
}

KK_EXPORT const char *kk_debug_objects_policy(void)
{
	return policy()->name;
}

/* ---- the slab ------------------------------------------------------------------ */

#define SLAB_CHUNK	(256 * 1024)

static pthread_mutex_t slab_lock = PTHREAD_MUTEX_INITIALIZER;
static struct debug_obj *slab_free_list;
static char *slab_cur, *slab_end;
static unsigned long slab_outstanding;		/* trackers out of the slab now */
static unsigned long slab_max;			/* 0: no limit */
static unsigned long objs_allocated, objs_freed;

KK_EXPORT void kk_debug_objects_set_max_trackers(unsigned long max)
{
	odebug_enter();		/* a signal handler's free() must not wait for slab_lock */
	pthread_mutex_lock(&slab_lock);
	slab_max = max;
	pthread_mutex_unlock(&slab_lock);
	odebug_leave();
}

static struct debug_obj *slab_get_locked(void)
{
	struct debug_obj *obj;

	if (slab_max && slab_outstanding >= slab_max)
		return NULL;
	if (slab_free_list) {
		obj = slab_free_list;
		slab_free_list = obj->node.next;
	} else {
		if (slab_end - slab_cur < (long)sizeof(*obj)) {
			void *p = mmap(NULL, SLAB_CHUNK, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

			if (p == MAP_FAILED)
				return NULL;
			slab_cur = p;
			slab_end = slab_cur + SLAB_CHUNK;
		}
		obj = (struct debug_obj *)slab_cur;
		slab_cur += sizeof(*obj);
	}
	memset(obj, 0, sizeof(*obj));
	slab_outstanding++;
	ODEBUG_WRITE(objs_allocated, objs_allocated + 1);
	return obj;
}

static void slab_put_locked(struct debug_obj *obj)
{
	obj->node.next = slab_free_list;
	slab_free_list = obj;
	slab_outstanding--;
	ODEBUG_WRITE(objs_freed, objs_freed + 1);
}

/* One batch of ODEBUG_BATCH_SIZE trackers linked through ->next, or NULL. */
static struct debug_obj *slab_alloc_batch(void)
{
	struct debug_obj *head = NULL, *last = NULL;
	int cnt;

	pthread_mutex_lock(&slab_lock);
	if (slab_max && slab_outstanding + ODEBUG_BATCH_SIZE > slab_max) {
		pthread_mutex_unlock(&slab_lock);
		return NULL;
	}
	for (cnt = 0; cnt < ODEBUG_BATCH_SIZE; cnt++) {
		struct debug_obj *obj = slab_get_locked();

		if (!obj)
			break;
		if (!last)
			last = obj;
		obj->node.next = head;
		head = obj;
	}
	if (cnt < ODEBUG_BATCH_SIZE) {
		while (head) {
			struct debug_obj *n = head->node.next;

			slab_put_locked(head);
			head = n;
		}
		pthread_mutex_unlock(&slab_lock);
		return NULL;
	}
	pthread_mutex_unlock(&slab_lock);
	for (struct debug_obj *o = head; o; o = o->node.next)
		o->batch_last = last;
	return head;
}

static struct debug_obj *slab_alloc_one(void)
{
	struct debug_obj *obj;

	pthread_mutex_lock(&slab_lock);
	obj = slab_get_locked();
	pthread_mutex_unlock(&slab_lock);
	return obj;
}

/* ---- pools --------------------------------------------------------------------- */

struct obj_pool {
	struct debug_obj *first;
	unsigned int cnt;		/* written with ODEBUG_WRITE: read without lock */
	unsigned int min_cnt;
	unsigned int max_cnt;
};

enum { PCP_NEW, PCP_LIVE, PCP_DEAD };

struct pcpu_pool {
	struct obj_pool pool;
	int state;
	struct pcpu_pool *next, **pprev;	/* the registry, under reg_lock */
};

static ODEBUG_TLS struct pcpu_pool tpool;

static odebug_spin_t pool_lock;
static struct obj_pool pool_global = {
	.min_cnt = ODEBUG_POOL_MIN_LEVEL,
	.max_cnt = ODEBUG_POOL_SIZE,
};
static struct obj_pool pool_to_free = { .max_cnt = UINT_MAX };

/* Statistics of the global pool, under pool_lock (cur_used: atomic). */
static long cur_used;			/* trackers handed to per-thread pools or in use */
static unsigned long max_used;
static unsigned long min_fill = ODEBUG_POOL_SIZE;

static unsigned long avg_usage;		/* EWMA of cur_used * ODEBUG_FREE_WORK_MAX */

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pcpu_pool *reg_head;
static pthread_key_t pcp_key;
static int pcp_key_ok;

static inline unsigned int pool_count(struct obj_pool *p)
{
	return ODEBUG_READ(p->cnt);
}

static bool pool_move_batch(struct obj_pool *dst, struct obj_pool *src)
{
	struct debug_obj *first, *last;

	if (dst->cnt >= dst->max_cnt || src->cnt < ODEBUG_BATCH_SIZE)
		return false;
	first = src->first;
	last = first->batch_last;
	src->first = last->node.next;
	last->node.next = dst->first;
	dst->first = first;
	ODEBUG_WRITE(src->cnt, src->cnt - ODEBUG_BATCH_SIZE);
	ODEBUG_WRITE(dst->cnt, dst->cnt + ODEBUG_BATCH_SIZE);
	return true;
}

static bool pool_push_batch(struct obj_pool *dst, struct debug_obj *batch)
{
	if (dst->cnt >= dst->max_cnt)
		return false;
	batch->batch_last->node.next = dst->first;
	dst->first = batch;
	ODEBUG_WRITE(dst->cnt, dst->cnt + ODEBUG_BATCH_SIZE);
	return true;
}

/* The top batch of @src, NULL-terminated, or NULL. */
static struct debug_obj *pool_pop_batch(struct obj_pool *src)
{
	struct debug_obj *first, *last;

	if (src->cnt < ODEBUG_BATCH_SIZE)
		return NULL;
	first = src->first;
	last = first->batch_last;
	src->first = last->node.next;
	last->node.next = NULL;
	ODEBUG_WRITE(src->cnt, src->cnt - ODEBUG_BATCH_SIZE);
	return first;
}

void odebug_free_to_slab(struct debug_obj *list, unsigned long n)
{
	if (!list)
		return;
	pthread_mutex_lock(&slab_lock);
	while (list) {
		struct debug_obj *next = list->node.next;

		slab_put_locked(list);
		list = next;
	}
	pthread_mutex_unlock(&slab_lock);
	if (n)
		ODEBUG_ADD(cur_used, -(long)n);
}

/* A batch moved into a per-thread pool (pool_lock held). */
static void pcpu_refill_stats(void)
{
	long used = ODEBUG_ADD(cur_used, ODEBUG_BATCH_SIZE) + ODEBUG_BATCH_SIZE;

	if (used > 0 && (unsigned long)used > max_used)
		ODEBUG_WRITE(max_used, (unsigned long)used);
	if (pool_global.cnt < min_fill)
		ODEBUG_WRITE(min_fill, pool_global.cnt);
}

/* ---- per-thread pools ------------------------------------------------------------ */

static void pcp_drain(struct pcpu_pool *p);

static void pcp_dtor(void *arg)
{
	struct pcpu_pool *p = arg;

	odebug_enter();		/* a signal handler's free() must not wait for our locks */
	pthread_mutex_lock(&reg_lock);
	if (p->pprev) {
		*p->pprev = p->next;
		if (p->next)
			p->next->pprev = p->pprev;
		p->pprev = NULL;
	}
	pthread_mutex_unlock(&reg_lock);
	p->state = PCP_DEAD;
	pcp_drain(p);
	odebug_leave();
}

static struct pcpu_pool *this_pool(void)
{
	struct pcpu_pool *p = &tpool;

	if (odebug_likely(p->state == PCP_LIVE))
		return p;
	if (p->state == PCP_DEAD || !ODEBUG_READ(pcp_key_ok))
		return NULL;
	if (pthread_setspecific(pcp_key, p)) {
		p->state = PCP_DEAD;
		return NULL;
	}
	pthread_mutex_lock(&reg_lock);
	p->next = reg_head;
	if (reg_head)
		reg_head->pprev = &p->next;
	p->pprev = &reg_head;
	reg_head = p;
	pthread_mutex_unlock(&reg_lock);
	p->state = PCP_LIVE;
	return p;
}

/* Empty a per-thread pool: full batches to the shared pools, the rest to the slab. */
static void pcp_drain(struct pcpu_pool *p)
{
	struct debug_obj *slab = NULL;
	unsigned long nslab = 0;

	while (p->pool.cnt % ODEBUG_BATCH_SIZE) {
		struct debug_obj *obj = p->pool.first;

		p->pool.first = obj->node.next;
		ODEBUG_WRITE(p->pool.cnt, p->pool.cnt - 1);
		obj->node.next = slab;
		slab = obj;
		nslab++;
	}
	odebug_free_to_slab(slab, nslab);
	while (p->pool.cnt) {
		struct debug_obj *batch = NULL;

		odebug_spin_lock(&pool_lock);
		if (!pool_move_batch(&pool_global, &p->pool) &&
		    !(policy()->to_free && pool_move_batch(&pool_to_free, &p->pool)))
			batch = pool_pop_batch(&p->pool);
		ODEBUG_ADD(cur_used, -ODEBUG_BATCH_SIZE);
		odebug_spin_unlock(&pool_lock);
		if (batch)
			odebug_free_to_slab(batch, 0);
	}
}

static struct debug_obj *pcpu_alloc(struct pcpu_pool *pcp, const struct odebug_policy *pol)
{
	pcp->pool.max_cnt = pol->pcpu_max;
	for (;;) {
		struct debug_obj *obj = pcp->pool.first, *batch;
		bool moved;

		if (odebug_likely(obj)) {
			unsigned int cnt = pcp->pool.cnt - 1;

			pcp->pool.first = obj->node.next;
			ODEBUG_WRITE(pcp->pool.cnt, cnt);
			/*
			 * Emptied a batch: refill from the to-free pool (never from
			 * the global pool, not to exhaust it), unless this was the
			 * top-most batch.
			 */
			if (pol->aggressive && cnt < pol->pcpu_max - ODEBUG_BATCH_SIZE &&
			    !(cnt % ODEBUG_BATCH_SIZE) && pool_count(&pool_to_free)) {
				odebug_spin_lock(&pool_lock);
				if (pool_move_batch(&pcp->pool, &pool_to_free))
					pcpu_refill_stats();
				odebug_spin_unlock(&pool_lock);
			}
			return obj;
		}

		odebug_spin_lock(&pool_lock);
		moved = pool_move_batch(&pcp->pool, &pool_to_free) ||
			pool_move_batch(&pcp->pool, &pool_global);
		if (moved)
			pcpu_refill_stats();
		odebug_spin_unlock(&pool_lock);
		if (moved)
			continue;

		/* Both shared pools are empty (another thread raced us): the slab. */
		batch = slab_alloc_batch();
		if (!batch)
			return NULL;
		odebug_spin_lock(&pool_lock);
		pool_push_batch(&pcp->pool, batch);
		pcpu_refill_stats();
		odebug_spin_unlock(&pool_lock);
	}
}

static void pcpu_free(struct pcpu_pool *pcp, struct debug_obj *obj,
		      const struct odebug_policy *pol)
{
	if (!(pcp->pool.cnt % ODEBUG_BATCH_SIZE))
		obj->batch_last = obj;
	else
		obj->batch_last = pcp->pool.first->batch_last;
	obj->node.next = pcp->pool.first;
	pcp->pool.first = obj;
	ODEBUG_WRITE(pcp->pool.cnt, pcp->pool.cnt + 1);

	/* Full: hand a batch on (a policy switch may leave more than one over) */
	while (odebug_unlikely(pcp->pool.cnt >= pol->pcpu_max) &&
	       !(pcp->pool.cnt % ODEBUG_BATCH_SIZE)) {
		struct debug_obj *batch = NULL;

		odebug_spin_lock(&pool_lock);
		if (!pool_move_batch(&pool_global, &pcp->pool) &&
		    !(pol->to_free && pool_move_batch(&pool_to_free, &pcp->pool)))
			batch = pool_pop_batch(&pcp->pool);
		ODEBUG_ADD(cur_used, -ODEBUG_BATCH_SIZE);
		odebug_spin_unlock(&pool_lock);
		if (batch)
			odebug_free_to_slab(batch, 0);	/* base, pcpu2x: immediate free */
	}
}

/* ---- the moving average and the free worker ---------------------------------------- */

#define FSHIFT	11
#define FIXED_1	(1ul << FSHIFT)
#define EXP_5	2014ul			/* 1/exp(10ms/600ms) in fixed point */

static unsigned long calc_load(unsigned long load, unsigned long exp, unsigned long active)
{
	unsigned long newload = load * exp + active * (FIXED_1 - exp);

	if (active >= load)
		newload += FIXED_1 - 1;
	return newload / FIXED_1;
}

static unsigned long avg_period;
static odebug_spin_t avg_lock;

static void calc_usage(void)
{
	unsigned long now = kk_now_coarse_ms(), periods, avg;
	long cur;

	if (now < ODEBUG_READ(avg_period))
		return;
	if (!odebug_spin_trylock(&avg_lock))
		return;
	/* one step per 10 ms period that passed (several when nothing allocated) */
	periods = ODEBUG_READ(avg_period) ?
		  1 + (now - ODEBUG_READ(avg_period)) / ODEBUG_AVG_PERIOD_MS : 1;
	if (periods > 512)
		periods = 512;	/* 5 s: the old average is gone by then */
	ODEBUG_WRITE(avg_period, now + ODEBUG_AVG_PERIOD_MS);
	cur = ODEBUG_READ(cur_used);
	if (cur < 0)
		cur = 0;
	avg = ODEBUG_READ(avg_usage);
	while (periods--)
		avg = calc_load(avg, EXP_5, (unsigned long)cur * ODEBUG_FREE_WORK_MAX);
	ODEBUG_WRITE(avg_usage, avg);
	odebug_spin_unlock(&avg_lock);
}

static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long last_use_avg;	/* under work_lock */
static int obj_freeing;			/* a worker round is pending */
static unsigned long inline_work_at;	/* no worker: when an inline round may run */

static void kick_worker(void);

static void free_obj_work(void)
{
	const struct odebug_policy *pol = policy();
	unsigned long cur, last, max_free = 0;
	bool rearm;

	pthread_mutex_lock(&work_lock);
	ODEBUG_WRITE(obj_freeing, 0);
	/*
	 * Beyond the kernel: the worker feeds the average too, so that it keeps
	 * falling in a process that stopped allocating trackers.
	 */
	if (pol->ewma)
		calc_usage();
	cur = ODEBUG_READ(avg_usage);
	last = last_use_avg;
	last_use_avg = cur;

	if (!pol->ewma)
		max_free = ODEBUG_FREE_WORK_MAX;
	else if (cur < last) {
		/* the average fell by this many trackers: free that much, rounded up */
		unsigned long drop = (last - cur) / ODEBUG_FREE_WORK_MAX;

		max_free = (drop + ODEBUG_BATCH_SIZE - 1) / ODEBUG_BATCH_SIZE;
		if (max_free > ODEBUG_FREE_WORK_MAX)
			max_free = ODEBUG_FREE_WORK_MAX;
	}

	for (int cnt = 0; cnt < ODEBUG_FREE_WORK_MAX; cnt++) {
		struct debug_obj *batch = NULL;
		bool done = false;

		/* take and drop the lock for each batch */
		odebug_spin_lock(&pool_lock);
		if (!pool_to_free.cnt)
			done = true;
		else if (pool_move_batch(&pool_global, &pool_to_free))
			max_free = 0;		/* there is demand: keep the trackers */
		else if (max_free) {
			batch = pool_pop_batch(&pool_to_free);
			max_free--;
		} else
			done = true;
		odebug_spin_unlock(&pool_lock);
		if (batch)
			odebug_free_to_slab(batch, 0);
		if (done)
			break;
	}
	/* more to free later: while the average is above what is in use, or (no
	 * EWMA) while anything is left */
	rearm = pool_count(&pool_to_free) &&
		(!pol->ewma || ODEBUG_READ(avg_usage) / ODEBUG_FREE_WORK_MAX >
			       (unsigned long)(ODEBUG_READ(cur_used) > 0 ? ODEBUG_READ(cur_used) : 0));
	pthread_mutex_unlock(&work_lock);
	if (rearm)
		kick_worker();
}

KK_EXPORT void kk_debug_objects_run_worker(void)
{
	free_obj_work();
}

/* The kernel's debug_obj_work, on the library's worker (src/common/workqueue.c). */
static void free_obj_fn(struct kk_work *w)
{
	(void)w;
	free_obj_work();
}

static struct kk_work free_work = KK_WORK_INIT(free_obj_fn);

/*
 * Nothing to start: the worker starts when the first round is queued.  Kept
 * for core.c, which calls it when tracking is switched on.
 */
void odebug_worker_start(void)
{
}

/*
 * schedule_delayed_work(&debug_obj_work, ODEBUG_FREE_WORK_DELAY) once trackers
 * wait on the to-free list.  Reached from free() (the preload library), maybe
 * in a signal handler: queuing is lock-free once the worker runs.  While the
 * library's threads are stopped the round waits (the trackers stay pooled).
 */
static void kick_worker(void)
{
	if (ODEBUG_READ(obj_freeing) || !pool_count(&pool_to_free))
		return;
	if (__atomic_exchange_n(&obj_freeing, 1, __ATOMIC_ACQ_REL))
		return;
	if (kk_queue_work(&free_work, ODEBUG_FREE_WORK_DELAY_MS * 1000000ull) >= 0)
		return;
	/* No worker thread (it cannot start): run a round inline, rate-limited. */
	ODEBUG_WRITE(obj_freeing, 0);
	unsigned long now = kk_now_coarse_ms();

	if (now >= ODEBUG_READ(inline_work_at)) {
		ODEBUG_WRITE(inline_work_at, now + ODEBUG_FREE_WORK_DELAY_MS);
		free_obj_work();
	}
}

/* ---- the entry points used by core.c ----------------------------------------------- */

static void fill_pool_from_freelist(void)
{
	static int state;

	if (!pool_count(&pool_to_free))
		return;
	if (ODEBUG_READ(state) || __atomic_exchange_n(&state, 1, __ATOMIC_ACQUIRE))
		return;
	while (pool_count(&pool_global) < pool_global.min_cnt && pool_count(&pool_to_free)) {
		odebug_spin_lock(&pool_lock);
		pool_move_batch(&pool_global, &pool_to_free);
		odebug_spin_unlock(&pool_lock);
	}
	__atomic_store_n(&state, 0, __ATOMIC_RELEASE);
}

static void fill_pool(void)
{
	static int allocating;

	/* one refiller at a time, unless the pool is below half its minimum */
	if (pool_count(&pool_global) >= pool_global.min_cnt / 2 && ODEBUG_READ(allocating))
		return;
	ODEBUG_ADD(allocating, 1);
	while (pool_count(&pool_global) < pool_global.min_cnt) {
		struct debug_obj *batch = slab_alloc_batch();

		if (!batch)
			break;
		odebug_spin_lock(&pool_lock);
		if (!pool_push_batch(&pool_global, batch))
			pool_push_batch(&pool_to_free, batch);
		odebug_spin_unlock(&pool_lock);
	}
	ODEBUG_ADD(allocating, -1);
}

void odebug_fill_pool(void)
{
	this_pool();
	if (odebug_likely(pool_count(&pool_global) >= pool_global.min_cnt))
		return;
	fill_pool_from_freelist();
	if (odebug_likely(pool_count(&pool_global) >= pool_global.min_cnt))
		return;
	fill_pool();
}

struct debug_obj *odebug_alloc_tracker(void)
{
	struct pcpu_pool *pcp = this_pool();
	struct debug_obj *obj;

	calc_usage();
	if (odebug_likely(pcp))
		return pcpu_alloc(pcp, policy());
	/* a thread past its TLS destructors: straight from the slab */
	obj = slab_alloc_one();
	if (obj)
		ODEBUG_ADD(cur_used, 1);
	return obj;
}

void odebug_free_tracker(struct debug_obj *obj)
{
	struct pcpu_pool *pcp = this_pool();
	const struct odebug_policy *pol = policy();

	if (odebug_likely(pcp))
		pcpu_free(pcp, obj, pol);
	else {
		obj->node.next = NULL;
		odebug_free_to_slab(obj, 1);
	}
	if (pol->to_free)
		kick_worker();
}

/* ---- statistics, reset, init, fork ----------------------------------------------- */

void odebug_pool_stats(struct kk_debug_objects_stats *st)
{
	unsigned long pcp_free = 0, used;
	long cu;

	pthread_mutex_lock(&reg_lock);
	for (struct pcpu_pool *p = reg_head; p; p = p->next)
		pcp_free += ODEBUG_READ(p->pool.cnt);
	pthread_mutex_unlock(&reg_lock);

	cu = ODEBUG_READ(cur_used);
	used = cu > 0 ? (unsigned long)cu : 0;
	if (pcp_free > used)
		pcp_free = used;
	st->pool_pcp_free = pcp_free;
	st->pool_free = pool_count(&pool_global) + pcp_free;
	st->pool_used = used - pcp_free;
	st->pool_min_free = ODEBUG_READ(min_fill);
	st->pool_max_used = ODEBUG_READ(max_used);
	st->on_free_list = pool_count(&pool_to_free);
	st->objs_allocated = ODEBUG_READ(objs_allocated);
	st->objs_freed = ODEBUG_READ(objs_freed);
	st->avg_usage = ODEBUG_READ(avg_usage) / ODEBUG_FREE_WORK_MAX;
}

void odebug_pool_reset(void)
{
	struct debug_obj *b;

	odebug_pool_init();

	pthread_mutex_lock(&reg_lock);
	for (struct pcpu_pool *p = reg_head; p; p = p->next)
		pcp_drain(p);
	pthread_mutex_unlock(&reg_lock);
	odebug_spin_lock(&pool_lock);
	for (;;) {
		if (!(b = pool_pop_batch(&pool_global)) && !(b = pool_pop_batch(&pool_to_free)))
			break;
		odebug_spin_unlock(&pool_lock);
		odebug_free_to_slab(b, 0);
		odebug_spin_lock(&pool_lock);
	}
	ODEBUG_WRITE(cur_used, 0);
	ODEBUG_WRITE(max_used, 0);
	ODEBUG_WRITE(min_fill, pool_global.max_cnt);
	odebug_spin_unlock(&pool_lock);

	pthread_mutex_lock(&work_lock);
	last_use_avg = 0;
	pthread_mutex_unlock(&work_lock);
	odebug_spin_lock(&avg_lock);
	ODEBUG_WRITE(avg_usage, 0);
	ODEBUG_WRITE(avg_period, 0);
	odebug_spin_unlock(&avg_lock);
	pthread_mutex_lock(&slab_lock);
	ODEBUG_WRITE(objs_allocated, 0);
	ODEBUG_WRITE(objs_freed, 0);
	pthread_mutex_unlock(&slab_lock);
}

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;

static void pool_init_once(void)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	unsigned int extras;

	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > 1024)
		ncpu = 1024;
	extras = (unsigned int)ncpu * ODEBUG_BATCH_SIZE;
	pool_global.max_cnt = ODEBUG_POOL_SIZE + extras;
	pool_global.min_cnt = ODEBUG_POOL_MIN_LEVEL + extras;
	ODEBUG_WRITE(min_fill, pool_global.max_cnt);
	if (!pthread_key_create(&pcp_key, pcp_dtor))
		ODEBUG_WRITE(pcp_key_ok, 1);
}

void odebug_pool_init(void)
{
	pthread_once(&pool_once, pool_init_once);
}

void odebug_pool_atfork_prepare(void)
{
	pthread_mutex_lock(&work_lock);
	pthread_mutex_lock(&reg_lock);
	odebug_spin_lock(&pool_lock);
	pthread_mutex_lock(&slab_lock);
}

void odebug_pool_atfork_parent(void)
{
	pthread_mutex_unlock(&slab_lock);
	odebug_spin_unlock(&pool_lock);
	pthread_mutex_unlock(&reg_lock);
	pthread_mutex_unlock(&work_lock);
}

void odebug_pool_atfork_child(void)
{
	struct pcpu_pool *p, *next;

	pthread_mutex_unlock(&slab_lock);
	odebug_spin_unlock(&pool_lock);
	/*
	 * The other threads did not come along, but their pools did (their TLS
	 * is a copy of the parent's memory): give those trackers back.
	 */
	for (p = reg_head; p; p = next) {
		next = p->next;
		if (p == &tpool)
			continue;
		*p->pprev = p->next;
		if (p->next)
			p->next->pprev = p->pprev;
		p->pprev = NULL;
		pcp_drain(p);
	}
	pthread_mutex_unlock(&reg_lock);
	/* A pending round stays queued: it runs once the child's worker starts.
	 * One the parent's worker was running did not come along. */
	ODEBUG_WRITE(obj_freeing, kk_work_pending(&free_work));
	pthread_mutex_unlock(&work_lock);
}
