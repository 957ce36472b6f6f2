// SPDX-License-Identifier: MIT
/*
 * kk-bench debugobjects: the tracker pools under a bursty churn, per policy,
 * and the cost of the hooks.
 *
 * Churn ("timers during a build").  Two threads run 100 waves of 20 ms each.
 * The load moves through ten phases of 10 waves (new objects per wave and
 * thread: 400, 2400, 900, 3000, 300, 1800, 2600, 600, 200, 100: bursts, then
 * the quiet end of a build), each wave's count varying by +-50%.  In a wave a thread frees (deactivate + free) the objects whose
 * lifetime (1..3 waves) is over, creates the wave's objects (init +
 * activate), re-arms them once (deactivate + activate), then sleeps to the
 * end of the wave.  Objects are 128 bytes (32 share a page).  Everything is
 * freed at the end, then the threads exit (their pools are handed back).
 * The counts are trackers taken from / given back to the slab
 * (objs_allocated / objs_freed), over the whole run, with the free worker on
 * its normal 100 ms schedule.  The random sequence is fixed; the EWMA and the
 * worker run on real time, so counts vary a little between runs.
 *
 * pair_ns: one thread, activate + deactivate of 256 initialised objects in
 * turn (ewma policy).  threads1/2_ops_s: hook calls per second of 1 and 2
 * threads each running init, activate, deactivate, free over 64 objects of
 * their own (what fits a per-thread pool), 0.5 s each.
 *
 * JSON: base_allocs, base_frees, pcpu2x_allocs, pcpu2x_frees, refill_allocs,
 * refill_frees, ewma_allocs, ewma_frees (trackers), pair_ns, threads1_ops_s,
 * threads2_ops_s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kernelkit/debugobjects.h>
#include "bench.h"

#define OBJ_SIZE	128
#define NSLOTS		16384
#define WAVE_MS		20
#define NWAVES		100
#define MAXLIFE		3

static const struct debug_obj_descr bench_descr = { .name = "bench_timer" };

struct bobj {
	char bytes[OBJ_SIZE];
};

static const unsigned int phase_level[NWAVES / 10] = {
	400, 2400, 900, 3000, 300, 1800, 2600, 600, 200, 100
};

struct churn {
	struct bobj *objs;
	unsigned int *free_idx;		/* stack of free slots */
	unsigned int nfree;
	unsigned int *gen[MAXLIFE + 1];	/* objects that die at wave w: gen[w % (MAXLIFE+1)] */
	unsigned int gen_n[MAXLIFE + 1];
	unsigned int seed;
	uint64_t start_ns;
};

static unsigned int rnd(unsigned int *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 8) & 0xffffff;
}

static void sleep_until(uint64_t t)
{
	uint64_t now = kkb_now_ns();

	if (t > now) {
		struct timespec d = { (time_t)((t - now) / 1000000000ull),
				      (long)((t - now) % 1000000000ull) };

		nanosleep(&d, NULL);
	}
}

static void kill_gen(struct churn *c, unsigned int g)
{
	for (unsigned int k = 0; k < c->gen_n[g]; k++) {
		unsigned int i = c->gen[g][k];

		debug_object_deactivate(&c->objs[i], &bench_descr);
		debug_object_free(&c->objs[i], &bench_descr);
		c->free_idx[c->nfree++] = i;
	}
	c->gen_n[g] = 0;
}

static void *churn_thread(void *arg)
{
	struct churn *c = arg;

	for (unsigned int w = 0; w < NWAVES; w++) {
		unsigned int level = phase_level[w / 10];
		unsigned int k = level / 2 + rnd(&c->seed) % (level + 1);
		unsigned int first_new[MAXLIFE + 1] = { 0 };

		kill_gen(c, w % (MAXLIFE + 1));
		for (unsigned int g = 0; g <= MAXLIFE; g++)
			first_new[g] = c->gen_n[g];
		for (unsigned int n = 0; n < k && c->nfree; n++) {
			unsigned int i = c->free_idx[--c->nfree];
			unsigned int life = 1 + rnd(&c->seed) % MAXLIFE;
			unsigned int g = (w + life) % (MAXLIFE + 1);

			debug_object_init(&c->objs[i], &bench_descr);
			debug_object_activate(&c->objs[i], &bench_descr);
			c->gen[g][c->gen_n[g]++] = i;
		}
		/* re-arm the wave's new timers once */
		for (unsigned int g = 0; g <= MAXLIFE; g++) {
			for (unsigned int n = first_new[g]; n < c->gen_n[g]; n++) {
				debug_object_deactivate(&c->objs[c->gen[g][n]], &bench_descr);
				debug_object_activate(&c->objs[c->gen[g][n]], &bench_descr);
			}
		}
		sleep_until(c->start_ns + (uint64_t)(w + 1) * WAVE_MS * 1000000ull);
	}
	for (unsigned int g = 0; g <= MAXLIFE; g++)
		kill_gen(c, g);
	return NULL;
}

static int churn_alloc(struct churn *c, unsigned int seed)
{
	memset(c, 0, sizeof(*c));
	c->objs = aligned_alloc(4096, NSLOTS * sizeof(struct bobj));
	c->free_idx = malloc(NSLOTS * sizeof(unsigned int));
	if (!c->objs || !c->free_idx)
		return -1;
	for (unsigned int g = 0; g <= MAXLIFE; g++)
		if (!(c->gen[g] = malloc(NSLOTS * sizeof(unsigned int))))
			return -1;
	c->seed = seed;
	return 0;
}

static void churn_release(struct churn *c)
{
	free(c->objs);
	free(c->free_idx);
	for (unsigned int g = 0; g <= MAXLIFE; g++)
		free(c->gen[g]);
}

/* One policy: the churn on two threads; the slab traffic it caused. */
static int run_policy(const char *pol, unsigned long *allocs, unsigned long *frees)
{
	struct churn c[2];
	pthread_t t[2];
	struct kk_debug_objects_stats st;
	uint64_t start;

	if (kk_debug_objects_set_policy(pol))
		return -1;
	kk_debug_objects_reset();
	for (int i = 0; i < 2; i++) {
		if (churn_alloc(&c[i], 1000u + (unsigned int)i))
			return -1;
		for (unsigned int s = 0; s < NSLOTS; s++)
			c[i].free_idx[c[i].nfree++] = NSLOTS - 1 - s;
	}
	start = kkb_now_ns();
	for (int i = 0; i < 2; i++) {
		c[i].start_ns = start;
		if (pthread_create(&t[i], NULL, churn_thread, &c[i]))
			return -1;
	}
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	kk_debug_objects_get_stats(&st);
	*allocs = st.objs_allocated;
	*frees = st.objs_freed;
	if (st.warnings || st.pool_used) {
		fprintf(stderr, "kk-bench debugobjects: %s: %lu warnings, %lu in use\n", pol,
			st.warnings, st.pool_used);
		return -1;
	}
	for (int i = 0; i < 2; i++)
		churn_release(&c[i]);
	return 0;
}

/* ---- hook costs ------------------------------------------------------------------------ */

#define NOBJ 256
#define NOBJ_T 64

static double pair_ns(int enabled_run)
{
	struct bobj *o = aligned_alloc(4096, NOBJ * sizeof(*o));
	const long rounds = enabled_run ? 20000 : 200000;
	uint64_t t0, t1;

	for (int i = 0; i < NOBJ; i++)
		debug_object_init(&o[i], &bench_descr);
	t0 = kkb_now_ns();
	for (long r = 0; r < rounds; r++) {
		for (int i = 0; i < NOBJ; i++) {
			debug_object_activate(&o[i], &bench_descr);
			debug_object_deactivate(&o[i], &bench_descr);
		}
	}
	t1 = kkb_now_ns();
	for (int i = 0; i < NOBJ; i++)
		debug_object_free(&o[i], &bench_descr);
	free(o);
	return (double)(t1 - t0) / ((double)rounds * NOBJ);
}

static atomic_int go, halt;

struct tput {
	unsigned long ops;
	double cpu_s;		/* the thread's own CPU time */
};

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void *tput_thread(void *arg)
{
	struct tput *tp = arg;
	struct bobj *o = aligned_alloc(4096, NOBJ_T * sizeof(*o));
	unsigned long ops = 0;
	double c0;

	while (!atomic_load(&go))
		;
	c0 = thread_cpu_s();
	while (!atomic_load_explicit(&halt, memory_order_relaxed)) {
		for (int i = 0; i < NOBJ_T; i++) {
			debug_object_init(&o[i], &bench_descr);
			debug_object_activate(&o[i], &bench_descr);
		}
		for (int i = 0; i < NOBJ_T; i++) {
			debug_object_deactivate(&o[i], &bench_descr);
			debug_object_free(&o[i], &bench_descr);
		}
		ops += 4 * NOBJ_T;
	}
	tp->ops = ops;
	tp->cpu_s = thread_cpu_s() - c0;
	free(o);
	return NULL;
}

/* ops/s over wall time; *per_cpu: ops per CPU-second the threads got */
static double throughput(int nthreads, double *per_cpu)
{
	pthread_t t[2];
	struct tput tp[2] = { { 0, 0 }, { 0, 0 } };
	struct timespec d = { 0, 500 * 1000000L };
	uint64_t t0, t1;

	atomic_store(&go, 0);
	atomic_store(&halt, 0);
	for (int i = 0; i < nthreads; i++)
		pthread_create(&t[i], NULL, tput_thread, &tp[i]);
	t0 = kkb_now_ns();
	atomic_store(&go, 1);
	nanosleep(&d, NULL);
	atomic_store(&halt, 1);
	t1 = kkb_now_ns();
	for (int i = 0; i < nthreads; i++)
		pthread_join(t[i], NULL);
	*per_cpu = (double)(tp[0].ops + tp[1].ops) / (tp[0].cpu_s + tp[1].cpu_s);
	return (double)(tp[0].ops + tp[1].ops) * 1e9 / (double)(t1 - t0);
}

static int run(struct kkb_ctx *ctx)
{
	static const char *const pols[] = { "base", "pcpu2x", "refill", "ewma" };
	unsigned long a[4], f[4];
	double off_ns, pns, t1, t2, c1, c2;
	char key[32];

	kk_debug_objects_set_printer(NULL, NULL);
	off_ns = pair_ns(0);		/* tracking off: the hooks are NOPs */
	if (kk_debug_objects_enable()) {
		fprintf(stderr, "kk-bench debugobjects: cannot enable debug objects\n");
		return -1;
	}
	for (int p = 0; p < 4; p++) {
		if (run_policy(pols[p], &a[p], &f[p]))
			return -1;
		snprintf(key, sizeof(key), "%s_allocs", pols[p]);
		kkb_json_num(ctx, key, (double)a[p]);
		snprintf(key, sizeof(key), "%s_frees", pols[p]);
		kkb_json_num(ctx, key, (double)f[p]);
	}
	kk_debug_objects_set_policy("ewma");
	kk_debug_objects_reset();
	pns = pair_ns(1);
	kkb_json_num(ctx, "pair_ns", pns);
	t1 = throughput(1, &c1);
	t2 = throughput(2, &c2);
	kkb_json_num(ctx, "threads1_ops_s", t1);
	kkb_json_num(ctx, "threads2_ops_s", t2);

	kkb_note(ctx, "tracker allocations / frees from the slab, in trackers:");
	for (int p = 0; p < 4; p++)
		kkb_note(ctx, "  %-7s %8lu / %8lu   (%.2f / %.2f of base; %lu kept in the pools)",
			 pols[p], a[p], f[p], (double)a[p] / (double)(a[0] ? a[0] : 1),
			 (double)f[p] / (double)(f[0] ? f[0] : 1), a[p] - f[p]);
	kkb_note(ctx, "targets: ewma_allocs <= 0.40 x base (%.2f), ewma_frees <= 0.30 x base (%.2f)",
		 (double)a[3] / (double)(a[0] ? a[0] : 1), (double)f[3] / (double)(f[0] ? f[0] : 1));
	kkb_note(ctx, "activate+deactivate pair: %.1f ns tracked, %.2f ns with tracking off "
		 "(target <= 100)", pns, off_ns);
	kkb_note(ctx, "2 threads / 1 thread: %.2fx (target >= 1.7); ops per CPU-second: "
		 "%.3g with 1 thread, %.3g with 2 (equal = no contention; a lower ratio "
		 "means the threads did not get 2 cores)", t2 / t1, c1, c2);
	kk_debug_objects_disable();
	return 0;
}

KKB_REGISTER("debugobjects", "debug-objects tracker pools under a bursty churn, per policy",
	     run);
