// SPDX-License-Identifier: MIT
/*
 * Debug objects under concurrent churn: threads run every legal transition
 * on their own objects, hand initialised objects to each other through
 * shared slots (freed by another thread than the one that made them), drop
 * ranges with debug_check_no_obj_freed, while one thread switches the pool
 * policy, runs the free worker and reads the statistics.  Every operation is
 * legal, so the run passes when there was no warning and every tracker is
 * accounted for at the end.  Built twice: normally and under TSan
 * (mk/debugobjects.mk, test/scripts/debugobjects_tsan.sh).
 *   KK_STRESS_MS  run time (default 1000)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <kernelkit/debugobjects.h>

#define THREADS	4
#define OBJS	600
#define SLOTS	64

static const struct debug_obj_descr stress_descr = { .name = "stress" };

struct obj {
	long payload[8];	/* 64 bytes: 64 objects share a page, and a bucket */
};

enum { S_NONE, S_INIT, S_ACTIVE, S_INACTIVE };

struct tstate {
	struct obj *objs;		/* OBJS objects, on their own pages */
	unsigned char st[OBJS];
	unsigned long ops, handed, taken;
	unsigned int seed;
};

static _Atomic(struct obj *) slots[SLOTS];
static atomic_int stop;
static unsigned long printed;

static void quiet(const char *text, void *arg)
{
	(void)arg;
	fputs(text, stderr);
	__atomic_fetch_add(&printed, 1, __ATOMIC_RELAXED);
}

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

static void step(struct tstate *t, int i)
{
	struct obj *o = &t->objs[i];

	switch (t->st[i]) {
	case S_NONE:
		debug_object_init(o, &stress_descr);
		t->st[i] = S_INIT;
		break;
	case S_INIT:
	case S_INACTIVE:
		if (rnd(&t->seed) % 8 == 0) {
			debug_object_free(o, &stress_descr);
			t->st[i] = S_NONE;
		} else {
			if (debug_object_activate(o, &stress_descr))
				abort();
			t->st[i] = S_ACTIVE;
		}
		break;
	case S_ACTIVE:
		debug_object_active_state(o, &stress_descr, 0, 1);
		debug_object_active_state(o, &stress_descr, 1, 0);
		debug_object_deactivate(o, &stress_descr);
		t->st[i] = S_INACTIVE;
		break;
	}
}

static void *churn(void *arg)
{
	struct tstate *t = arg;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		unsigned int r = rnd(&t->seed);
		int i = (int)(r % OBJS);

		switch (r % 97) {
		case 0: {	/* hand a fresh object to whoever takes it */
			struct obj *o = malloc(sizeof(*o)), *old;

			debug_object_init(o, &stress_descr);
			old = atomic_exchange(&slots[r % SLOTS], o);
			t->handed++;
			if (old) {
				debug_object_activate(old, &stress_descr);
				debug_object_deactivate(old, &stress_descr);
				debug_object_free(old, &stress_descr);
				free(old);
				t->taken++;
			}
			break;
		}
		case 1: {	/* drop a range of objects none of which is active */
			int n = 1 + (int)(r % 16);
			if (i + n > OBJS)
				n = OBJS - i;
			for (int k = i; k < i + n; k++)
				if (t->st[k] == S_ACTIVE)
					step(t, k);
			debug_check_no_obj_freed(&t->objs[i], (unsigned long)n * sizeof(struct obj));
			for (int k = i; k < i + n; k++)
				t->st[k] = S_NONE;
			break;
		}
		default:
			step(t, i);
		}
		t->ops++;
	}
	/* leave nothing behind */
	for (int i = 0; i < OBJS; i++) {
		if (t->st[i] == S_ACTIVE)
			step(t, i);
		if (t->st[i] != S_NONE)
			debug_object_free(&t->objs[i], &stress_descr);
	}
	return NULL;
}

static void *fiddle(void *arg)
{
	static const char *const pol[] = { "base", "pcpu2x", "refill", "ewma" };
	unsigned int n = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct kk_debug_objects_stats st;
		struct timespec d = { 0, 3 * 1000000 };

		kk_debug_objects_set_policy(pol[n++ % 4]);
		kk_debug_objects_get_stats(&st);
		kk_debug_objects_run_worker();
		nanosleep(&d, NULL);
	}
	return NULL;
}

int main(void)
{
	const char *e = getenv("KK_STRESS_MS");
	long ms = e ? atol(e) : 1000;
	static struct tstate ts[THREADS];
	pthread_t th[THREADS], fid;
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };
	struct kk_debug_objects_stats st;
	unsigned long ops = 0, handed = 0, taken = 0;
	int fail = 0;

	kk_debug_objects_set_printer(quiet, NULL);
	if (kk_debug_objects_enable()) {
		fprintf(stderr, "cannot enable debug objects\n");
		return 1;
	}
	for (int i = 0; i < THREADS; i++) {
		ts[i].objs = aligned_alloc(4096, (OBJS * sizeof(struct obj) + 4095) & ~4095ul);
		ts[i].seed = 12345u * (unsigned int)(i + 1);
		if (!ts[i].objs || pthread_create(&th[i], NULL, churn, &ts[i]))
			return 1;
	}
	pthread_create(&fid, NULL, fiddle, NULL);
	nanosleep(&d, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		ops += ts[i].ops;
		handed += ts[i].handed;
		taken += ts[i].taken;
	}
	pthread_join(fid, NULL);
	for (int s = 0; s < SLOTS; s++) {
		struct obj *o = atomic_exchange(&slots[s], NULL);

		if (o) {
			debug_object_free(o, &stress_descr);
			free(o);
		}
	}
	kk_debug_objects_get_stats(&st);
	printf("ops %lu handed %lu taken %lu warnings %lu allocated %lu freed %lu used %lu "
	       "free %lu to-free %lu max_chain %lu\n", ops, handed, taken, st.warnings,
	       st.objs_allocated, st.objs_freed, st.pool_used, st.pool_free, st.on_free_list,
	       st.max_chain);
	if (st.warnings || printed) {
		fprintf(stderr, "FAIL: %lu warnings for legal operations\n", st.warnings);
		fail = 1;
	}
	if (st.pool_used) {
		fprintf(stderr, "FAIL: %lu trackers still in use\n", st.pool_used);
		fail = 1;
	}
	if (st.objs_allocated - st.objs_freed != st.pool_free + st.on_free_list) {
		fprintf(stderr, "FAIL: trackers unaccounted for\n");
		fail = 1;
	}
	if (!ops || !taken) {
		fprintf(stderr, "FAIL: no work done\n");
		fail = 1;
	}
	for (int i = 0; i < THREADS; i++)
		free(ts[i].objs);
	return fail;
}
