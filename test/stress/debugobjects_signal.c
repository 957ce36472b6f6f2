// SPDX-License-Identifier: MIT
/*
 * Debug objects under signals: worker threads run legal transitions on their
 * own objects while the main thread keeps sending them a signal whose
 * handler, on the interrupted thread, does what free() does under the
 * preload library (debug_check_no_obj_freed on memory that shares the
 * worker's page, so bucket) and makes and forgets objects of its own
 * (spare trackers).  Every operation is legal, so the run passes when it
 * ends (no deadlock), with no warning, and every tracker is accounted for.
 * Skips are counted (nested_skips), not errors.
 *   KK_STRESS_MS  run time (default 1000)
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/debugobjects.h>

#define THREADS	2
#define NOBJ	32		/* per half page */

static const struct debug_obj_descr sig_descr = { .name = "sigstress" };

struct obj {
	long payload[8];	/* 64 bytes */
};

struct page {
	struct obj objs[NOBJ];	/* the worker's objects (first half of the page) */
	struct obj hobj[NOBJ];	/* inactive objects the handler "frees" (second half) */
};

struct tstate {
	pthread_t tid;
	struct page *pg;	/* one page, 4 KiB aligned */
	struct obj *own;	/* the handler's own objects, in another page */
	unsigned char st[NOBJ];	/* 0 none, 1 init, 2 active, 3 inactive */
	unsigned long ops, signals;
	unsigned int seed, hseed;
};

static atomic_int stop;
static unsigned long printed;
static __thread struct tstate *self;

static void count_reports(const char *text, void *arg)
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

/* On the interrupted worker: free()'s check on the handler half of its page,
 * and an object of its own made and forgotten. */
static void handler(int sig)
{
	struct tstate *t = self;
	struct obj *o;

	(void)sig;
	if (!t)
		return;
	t->signals++;
	debug_check_no_obj_freed(t->pg->hobj, sizeof(t->pg->hobj));
	o = &t->own[rnd(&t->hseed) % NOBJ];
	debug_object_init(o, &sig_descr);
	debug_object_free(o, &sig_descr);
}

static void step(struct tstate *t, int i)
{
	struct obj *o = &t->pg->objs[i];

	switch (t->st[i]) {
	case 0:
		debug_object_init(o, &sig_descr);
		t->st[i] = 1;
		break;
	case 1:
	case 3:
		if (rnd(&t->seed) & 1) {
			debug_object_activate(o, &sig_descr);
			t->st[i] = 2;
		} else {
			debug_object_free(o, &sig_descr);
			t->st[i] = 0;
		}
		break;
	default:
		debug_object_deactivate(o, &sig_descr);
		t->st[i] = 3;
		break;
	}
	/* an inactive object for the handler to find, in the same bucket */
	debug_object_init(&t->pg->hobj[i], &sig_descr);
	t->ops += 2;
}

static void *worker(void *arg)
{
	struct tstate *t = arg;

	/*
	 * The thread's first hook looks up its stack bounds and registers its
	 * pool, which may allocate: not async-signal-safe, so not in a handler
	 * (docs/debugobjects.md, "Signal handlers").
	 */
	debug_object_init(&t->pg->hobj[0], &sig_descr);
	self = t;
	while (!atomic_load_explicit(&stop, memory_order_relaxed))
		step(t, (int)(rnd(&t->seed) % NOBJ));
	self = NULL;
	/* leave nothing tracked: deactivate, then a range check frees all */
	for (int i = 0; i < NOBJ; i++)
		if (t->st[i] == 2)
			debug_object_deactivate(&t->pg->objs[i], &sig_descr);
	debug_check_no_obj_freed(t->pg, sizeof(*t->pg));
	debug_check_no_obj_freed(t->own, NOBJ * sizeof(struct obj));
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void)
{
	static struct tstate ts[THREADS];
	const char *e = getenv("KK_STRESS_MS");
	double end = now_s() + (e ? atoi(e) : 1000) / 1000.0;
	struct kk_debug_objects_stats st;
	struct sigaction sa = { .sa_handler = handler };
	unsigned long ops = 0, sigs = 0, kills = 0;

	alarm((unsigned int)(end - now_s()) + 60);	/* a deadlock ends the run */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	kk_debug_objects_set_printer(count_reports, NULL);
	if (kk_debug_objects_enable()) {
		fprintf(stderr, "cannot enable debug objects\n");
		return 1;
	}
	for (int i = 0; i < THREADS; i++) {
		ts[i].pg = aligned_alloc(4096, 4096);
		ts[i].own = aligned_alloc(4096, 4096);
		ts[i].seed = 17u + (unsigned int)i;
		ts[i].hseed = 71u + (unsigned int)i;
		pthread_create(&ts[i].tid, NULL, worker, &ts[i]);
	}
	while (now_s() < end) {
		for (int i = 0; i < THREADS; i++, kills++)
			pthread_kill(ts[i].tid, SIGUSR1);
		sched_yield();
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(ts[i].tid, NULL);
		ops += ts[i].ops;
		sigs += ts[i].signals;
	}
	kk_debug_objects_get_stats(&st);
	printf("ops %lu signals sent %lu handled %lu nested_skips %lu warnings %lu "
	       "allocated %lu freed %lu used %lu free %lu to-free %lu\n", ops, kills, sigs,
	       st.nested_skips, st.warnings, st.objs_allocated, st.objs_freed, st.pool_used,
	       st.pool_free, st.on_free_list);
	if (st.warnings || printed) {
		fprintf(stderr, "FAIL: %lu warnings in a legal sequence\n", st.warnings);
		return 1;
	}
	if (st.pool_used) {
		fprintf(stderr, "FAIL: %lu trackers still in use\n", st.pool_used);
		return 1;
	}
	if (st.objs_allocated - st.objs_freed != st.pool_free + st.on_free_list) {
		fprintf(stderr, "FAIL: trackers unaccounted for\n");
		return 1;
	}
	if (!sigs) {
		fprintf(stderr, "FAIL: no signal was handled\n");
		return 1;
	}
	return 0;
}
