// SPDX-License-Identifier: MIT
/*
 * kk-bench shazptr: simple hazard pointers against liburcu and ck_hp, in the
 * spirit of the kernel's refscale (reader cost) and rcuscale (grace periods).
 *
 *  1. Reader cost, ns per acquire+release, one thread, uncontended (best of 7).
 *  2. Grace-period latency: a reader thread runs read sections back to back on
 *     the other CPU while this thread times synchronize calls.  shazptr readers
 *     protect one of 64 objects in turn and the updater waits for one of them
 *     (the lockdep pattern: a reader holds a hash bucket); the "samekey" run has
 *     the reader protect the very pointer the updater waits for, the
 *     "wildcard" run has readers publish SHAZPTR_WILDCARD, and "scanthread"
 *     sets skip_synchronize_self_scan.
 *  3. IPIs per synchronize: the delta of the CAL line of /proc/interrupts
 *     (system-wide, so other load on the machine shows up as noise).
 *  4. The key registry: 100 unregisters with a reader running, shazptr against
 *     the liburcu build.
 *  5. Slot layout: a per-CPU CAS slot prototype's reader cost, and the
 *     self-scan cost with few and with 64 more registered threads.
 */
#include <ck_hp.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/shazptr.h>
#include "bench.h"
#include "shazptr_bench.h"
#include "../examples/shazptr/keyreg.h"

static int objs[SHZB_NOBJS] __attribute__((aligned(64)));

/* ---- helpers ------------------------------------------------------------ */

static int ncpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

static void pin_self(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu % ncpus(), &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];

			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- the shazptr method ------------------------------------------------- */

enum { SHZ_ROTATE, SHZ_SAMEKEY, SHZ_WILDCARD };

static void shazptr_nop(void)
{
}

static double shazptr_read_ns(long iters)
{
	uint64_t t0 = kkb_now_ns();

	for (long i = 0; i < iters; i++) {
		struct shazptr_guard g = shazptr_acquire(&objs[0]);

		__asm__ __volatile__("" ::: "memory");
		shazptr_clear(g);
	}
	return (double)(kkb_now_ns() - t0) / (double)iters;
}

static double shazptr_wildcard_read_ns(long iters)
{
	struct shazptr_guard outer = shazptr_acquire(&objs[1]);
	uint64_t t0 = kkb_now_ns();

	for (long i = 0; i < iters; i++) {
		struct shazptr_guard g = shazptr_acquire(&objs[0]);	/* nested */

		__asm__ __volatile__("" ::: "memory");
		shazptr_clear(g);
	}
	t0 = kkb_now_ns() - t0;
	shazptr_clear(outer);
	return (double)t0 / (double)iters;
}

static void shazptr_reader(struct shzb_reader *r, const int *o)
{
	unsigned long n = 0, sink = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < SHZB_NOBJS; k++) {
			void *p = r->mode == SHZ_SAMEKEY ? (void *)&o[0] :
				  r->mode == SHZ_WILDCARD ? SHAZPTR_WILDCARD : (void *)&o[k];
			struct shazptr_guard g = shazptr_acquire(p);

			sink += (unsigned long)__atomic_load_n(&o[k], __ATOMIC_RELAXED);
			if (r->mode == SHZ_SAMEKEY)	/* a longer section: walk all objects */
				for (int j = 0; j < SHZB_NOBJS; j++)
					sink += (unsigned long)__atomic_load_n(&o[j], __ATOMIC_RELAXED);
			shazptr_clear(g);
			__atomic_store_n(&r->count, ++n, __ATOMIC_RELAXED);
		}
	}
	r->sink = sink;
}

static void shazptr_sync(void *p)
{
	synchronize_shazptr(p);
}

static const struct shzb_method shzb_shazptr = {
	"shazptr", shazptr_nop, shazptr_nop, shazptr_read_ns, shazptr_reader, shazptr_sync,
};

/* ---- ck_hp -------------------------------------------------------------- */

static void ckhp_destroy(void *p)
{
	(void)p;
}

static double ckhp_read_ns(long iters)
{
	static ck_hp_t hp;
	static ck_hp_record_t rec;
	static void *ptrs[1];
	uint64_t t0;

	ck_hp_init(&hp, 1, 64, ckhp_destroy);
	ck_hp_register(&hp, &rec, ptrs);
	t0 = kkb_now_ns();
	for (long i = 0; i < iters; i++) {
		ck_hp_set_fence(&rec, 0, &objs[0]);
		__asm__ __volatile__("" ::: "memory");
		ck_hp_set(&rec, 0, NULL);
	}
	t0 = kkb_now_ns() - t0;
	ck_hp_unregister(&rec);
	return (double)t0 / (double)iters;
}

/* ---- a per-CPU slot prototype (CAS claim), for the layout decision ------- */

struct pcpu_slot {
	void *p;
	char pad[64 - sizeof(void *)];
};
static struct pcpu_slot pcpu_slots[256];

static double pcpu_read_ns(long iters)
{
	uint64_t t0 = kkb_now_ns();
	long fallbacks = 0;

	for (long i = 0; i < iters; i++) {
		/* A preempted holder may sit on this CPU's slot: CAS, not store. */
		int cpu = sched_getcpu() & 255;
		void *expect = NULL;

		if (__atomic_compare_exchange_n(&pcpu_slots[cpu].p, &expect, &objs[0], false,
						__ATOMIC_SEQ_CST, __ATOMIC_RELAXED)) {
			__asm__ __volatile__("" ::: "memory");
			__atomic_store_n(&pcpu_slots[cpu].p, NULL, __ATOMIC_RELEASE);
		} else {
			fallbacks++;	/* the real thing would need a second slot */
		}
	}
	t0 = kkb_now_ns() - t0;
	(void)fallbacks;
	return (double)t0 / (double)iters;
}

/* ---- reader cost -------------------------------------------------------- */

/* The best of 7 runs: other load on the shared machine only adds time. */
static double read_cost(double (*fn)(long), long iters)
{
	double best = 0;

	fn(iters / 10);	/* warm-up */
	for (int i = 0; i < 7; i++) {
		double v = fn(iters);

		if (i == 0 || v < best)
			best = v;
	}
	return best;
}

/* ---- grace periods ------------------------------------------------------- */

struct reader_ctx {
	const struct shzb_method *m;
	struct shzb_reader r;
	int cpu;
};

static void *reader_thread(void *arg)
{
	struct reader_ctx *rc = arg;

	pin_self(rc->cpu);
	rc->m->online();
	rc->m->reader(&rc->r, objs);
	rc->m->offline();
	return NULL;
}

static int start_reader(struct reader_ctx *rc, pthread_t *t)
{
	if (pthread_create(t, NULL, reader_thread, rc))
		return -1;
	/* Wait (bounded) until the reader runs. */
	for (int i = 0; i < 2000 && !__atomic_load_n(&rc->r.count, __ATOMIC_RELAXED); i++)
		sleep_us(500);
	return __atomic_load_n(&rc->r.count, __ATOMIC_RELAXED) ? 0 : -1;
}

static void stop_reader(struct reader_ctx *rc, pthread_t t)
{
	__atomic_store_n(&rc->r.stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
}

struct gp_result {
	double avg, min, p50, p90, p99, max;	/* us, samples with the reader running */
	double all_p50;				/* us, every sample */
	double ipis_per_sync;			/* < 0: unknown */
	long n, n_running;			/* samples */
	unsigned long reads;			/* reader sections during the run */
	double reader_share;			/* reader CPU time / wall time */
};

static uint64_t thread_cpu_ns(pthread_t t)
{
	clockid_t cid;
	struct timespec ts;

	if (pthread_getcpuclockid(t, &cid) || clock_gettime(cid, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * Time synchronize calls while a reader runs read sections back to back on
 * the other CPU.  The machine is shared, so the reader is not always on its
 * CPU: a sample counts as "reader running" when the reader's heartbeat moved
 * during the call (checked outside the timed window).  The statistics are
 * taken over those samples; every sample's p50 is reported as well.  Runs for
 * at least @ms ms and @min_n running samples, at most 4 * @ms ms.
 */
#define GP_MAX 400000

static int gp_run(const struct shzb_method *m, int mode, long min_n, long ms,
		  struct gp_result *res)
{
	struct reader_ctx rc = { .m = m, .r = { .mode = mode }, .cpu = 1 };
	uint64_t *s = calloc(GP_MAX, sizeof(*s));
	uint64_t *all = calloc(GP_MAX, sizeof(*all));
	uint64_t start, cpu0, wall;
	unsigned long c0;
	long long ipi0, ipi1;
	double sum = 0;
	pthread_t t;
	long n = 0, nr = 0;

	if (!s || !all) {
		free(s);
		free(all);
		return -ENOMEM;
	}
	pin_self(0);
	if (start_reader(&rc, &t)) {
		free(s);
		free(all);
		return -EAGAIN;
	}
	for (int i = 0; i < 20; i++)	/* warm-up */
		m->sync(&objs[i % SHZB_NOBJS]);
	c0 = __atomic_load_n(&rc.r.count, __ATOMIC_RELAXED);
	cpu0 = thread_cpu_ns(t);
	ipi0 = kkb_ipi_count();
	start = kkb_now_ns();
	do {
		for (int i = 0; i < 64 && n < GP_MAX; i++, n++) {
			/* samekey: the reader holds objs[0]; the others rotate. */
			void *p = mode == SHZ_SAMEKEY ? &objs[0] : &objs[(n * 7) % SHZB_NOBJS];
			unsigned long h0 = __atomic_load_n(&rc.r.count, __ATOMIC_RELAXED), h1;
			uint64_t t0 = kkb_now_ns();

			m->sync(p);
			all[n] = kkb_now_ns() - t0;
			h1 = __atomic_load_n(&rc.r.count, __ATOMIC_RELAXED);
			if (h1 != h0)
				s[nr++] = all[n];
		}
		wall = kkb_now_ns() - start;
	} while (n < GP_MAX && wall < (uint64_t)ms * 4000000 &&
		 (nr < min_n || wall < (uint64_t)ms * 1000000));
	ipi1 = kkb_ipi_count();
	res->reads = __atomic_load_n(&rc.r.count, __ATOMIC_RELAXED) - c0;
	res->reader_share = (double)(thread_cpu_ns(t) - cpu0) / (double)wall;
	stop_reader(&rc, t);

	res->n = n;
	res->n_running = nr;
	qsort(all, (size_t)n, sizeof(*all), cmp_u64);
	res->all_p50 = (double)all[n / 2] / 1e3;
	if (nr == 0) {		/* never saw the reader run: report everything */
		memcpy(s, all, (size_t)n * sizeof(*s));
		nr = n;
	}
	qsort(s, (size_t)nr, sizeof(*s), cmp_u64);
	for (long i = 0; i < nr; i++)
		sum += (double)s[i];
	res->avg = sum / (double)nr / 1e3;
	res->min = (double)s[0] / 1e3;
	res->p50 = (double)s[nr / 2] / 1e3;
	res->p90 = (double)s[nr * 90 / 100] / 1e3;
	res->p99 = (double)s[nr * 99 / 100] / 1e3;
	res->max = (double)s[nr - 1] / 1e3;
	res->ipis_per_sync = ipi0 >= 0 && ipi1 >= 0 ? (double)(ipi1 - ipi0) / (double)n : -1;
	free(s);
	free(all);
	return 0;
}

static void gp_report(struct kkb_ctx *ctx, const char *prefix, const char *ipikey,
		      const struct gp_result *r)
{
	char k[128];

	snprintf(k, sizeof(k), "%s_avg_us", prefix);
	kkb_json_num(ctx, k, r->avg);
	snprintf(k, sizeof(k), "%s_min_us", prefix);
	kkb_json_num(ctx, k, r->min);
	snprintf(k, sizeof(k), "%s_p50_us", prefix);
	kkb_json_num(ctx, k, r->p50);
	snprintf(k, sizeof(k), "%s_p90_us", prefix);
	kkb_json_num(ctx, k, r->p90);
	snprintf(k, sizeof(k), "%s_p99_us", prefix);
	kkb_json_num(ctx, k, r->p99);
	snprintf(k, sizeof(k), "%s_max_us", prefix);
	kkb_json_num(ctx, k, r->max);
	snprintf(k, sizeof(k), "%s_allsamples_p50_us", prefix);
	kkb_json_num(ctx, k, r->all_p50);
	snprintf(k, sizeof(k), "%s_samples_reader_running", prefix);
	kkb_json_num(ctx, k, (double)r->n_running);
	if (r->ipis_per_sync >= 0)
		kkb_json_num(ctx, ipikey, r->ipis_per_sync);
	else
		kkb_json_null(ctx, ipikey);
}

static int gp_bench(struct kkb_ctx *ctx, const struct shzb_method *m, int mode, bool skip,
		    long n, const char *prefix, const char *ipikey, double *p50)
{
	struct gp_result r;
	char k[128];
	int err;

	struct kk_shazptr_stats st0, st1;

	kk_shazptr_set_skip_synchronize_self_scan(skip);
	kk_shazptr_get_stats(&st0);
	err = gp_run(m, mode, n, 250, &r);
	kk_shazptr_get_stats(&st1);
	kk_shazptr_set_skip_synchronize_self_scan(false);
	if (err) {
		kkb_note(ctx, "%s: could not run (%s)", prefix, strerror(-err));
		return err;
	}
	gp_report(ctx, prefix, ipikey, &r);
	if (m == &shzb_shazptr && st1.sync_calls > st0.sync_calls) {
		snprintf(k, sizeof(k), "%s_handoff_fraction", prefix);
		kkb_json_num(ctx, k, (double)(st1.sync_scan_thread - st0.sync_scan_thread) /
				     (double)(st1.sync_calls - st0.sync_calls));
	}
	snprintf(k, sizeof(k), "%s_reader_cpu_share", prefix);
	kkb_json_num(ctx, k, r.reader_share);
	kkb_note(ctx, "%s: %ld synchronize calls, %ld with the reader seen running; the "
		 "reader did %lu read sections and was on its CPU %.0f%% of the time",
		 prefix, r.n, r.n_running, r.reads, 100 * r.reader_share);
	if (p50)
		*p50 = r.p50;
	return 0;
}

/* ---- the key registry ----------------------------------------------------- */

struct kr_ops {
	int (*reg)(const void *);
	int (*lookup)(const void *);
	int (*unreg)(const void *);
	void (*online)(void);
	void (*offline)(void);
};

static const struct kr_ops kr_shazptr = {
	keyreg_shazptr_register, keyreg_shazptr_lookup, keyreg_shazptr_unregister,
	keyreg_shazptr_reader_online, keyreg_shazptr_reader_offline,
};
static const struct kr_ops kr_rcu = {
	keyreg_rcu_register, keyreg_rcu_lookup, keyreg_rcu_unregister,
	keyreg_rcu_reader_online, keyreg_rcu_reader_offline,
};

#define KR_TIMED	100
#define KR_KEYS		400
static char kr_keys[KR_KEYS];

struct kr_reader {
	const struct kr_ops *ops;
	int stop;
	unsigned long count, found;
};

static void *kr_reader_thread(void *arg)
{
	struct kr_reader *r = arg;
	unsigned long n = 0, found = 0;

	pin_self(1);
	r->ops->online();
	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < KR_KEYS; i++)
			found += r->ops->lookup(&kr_keys[(i * 13) % KR_KEYS]) == 1;
		n += KR_KEYS;
		__atomic_store_n(&r->count, n, __ATOMIC_RELAXED);
	}
	r->found = found;
	r->ops->offline();
	return NULL;
}

/* Time KR_TIMED unregisters with a reader running; median of KR_ROUNDS, ms. */
#define KR_ROUNDS 7
static double kr_run(const struct kr_ops *ops, double *ipis, char *rounds, size_t len)
{
	double ms[KR_ROUNDS];
	long long ipi_sum = 0;

	pin_self(0);
	for (int round = 0; round < KR_ROUNDS; round++) {
		struct kr_reader rd = { .ops = ops };
		pthread_t t;
		long long i0, i1;

		for (int i = 0; i < KR_KEYS; i++)
			ops->reg(&kr_keys[i]);
		if (pthread_create(&t, NULL, kr_reader_thread, &rd))
			return -1;
		for (int i = 0; i < 2000 && !__atomic_load_n(&rd.count, __ATOMIC_RELAXED); i++)
			sleep_us(500);
		i0 = kkb_ipi_count();
		uint64_t t0 = kkb_now_ns();

		for (int i = 0; i < KR_TIMED; i++)
			ops->unreg(&kr_keys[i * (KR_KEYS / KR_TIMED)]);
		ms[round] = (double)(kkb_now_ns() - t0) / 1e6;
		i1 = kkb_ipi_count();
		ipi_sum += i1 - i0;
		__atomic_store_n(&rd.stop, 1, __ATOMIC_RELAXED);
		pthread_join(t, NULL);
		for (int i = 0; i < KR_KEYS; i++)
			ops->unreg(&kr_keys[i]);	/* the rest, untimed */
	}
	*ipis = (double)ipi_sum / KR_ROUNDS / KR_TIMED;
	for (int r = 0, off = 0; r < KR_ROUNDS && off < (int)len; r++)
		off += snprintf(rounds + off, len - (size_t)off, "%s%.3f", r ? " " : "", ms[r]);
	return median(ms, KR_ROUNDS);
}

/* ---- slot layout: self-scan cost against the number of threads ----------- */

static int park_release;

static void *parked_thread(void *arg)
{
	int *ready = arg;
	struct shazptr_guard g = shazptr_acquire(&objs[2]);	/* registers */

	shazptr_clear(g);
	__atomic_fetch_add(ready, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < 20000 && !__atomic_load_n(&park_release, __ATOMIC_ACQUIRE); i++)
		sleep_us(1000);
	return NULL;
}

static double scan_ns(void)
{
	double v[5];

	for (int r = 0; r < 5; r++) {
		uint64_t t0 = kkb_now_ns();

		for (int i = 0; i < 10000; i++)
			(void)kk_shazptr_scan(&objs[3]);
		v[r] = (double)(kkb_now_ns() - t0) / 10000;
	}
	return median(v, 5);
}

/* ---- the benchmark -------------------------------------------------------- */

static int run(struct kkb_ctx *ctx)
{
	cpu_set_t saved;
	double v, memb_p50 = 0, shazptr_p50 = 0, kr_ipis;
	struct kk_shazptr_stats st;

	pthread_getaffinity_np(pthread_self(), sizeof(saved), &saved);
	kk_shazptr_reset_stats();
	/* Start the scan thread before this thread pins itself (it inherits). */
	kk_shazptr_set_skip_synchronize_self_scan(true);
	synchronize_shazptr(&objs[0]);
	kk_shazptr_set_skip_synchronize_self_scan(false);
	if (ncpus() < 2)
		kkb_note(ctx, "only one CPU: readers do not run on another core");

	/* 1. reader cost */
	pin_self(0);
	kkb_json_num(ctx, "shazptr_read_ns", read_cost(shazptr_read_ns, 2000000));
	kkb_json_num(ctx, "shazptr_wildcard_read_ns", read_cost(shazptr_wildcard_read_ns, 2000000));
	kkb_json_num(ctx, "urcu_memb_read_ns", read_cost(shzb_urcu_memb.read_ns, 2000000));
	kkb_json_num(ctx, "urcu_mb_read_ns", read_cost(shzb_urcu_mb.read_ns, 2000000));
	kkb_json_num(ctx, "ckhp_read_ns", read_cost(ckhp_read_ns, 2000000));
	kkb_json_num(ctx, "percpu_cas_read_ns", read_cost(pcpu_read_ns, 2000000));

	/* 2+3. grace periods with a reader on the other CPU */
	gp_bench(ctx, &shzb_shazptr, SHZ_ROTATE, false, 20000, "shazptr_sync",
		 "shazptr_ipis_per_sync", &shazptr_p50);
	gp_bench(ctx, &shzb_shazptr, SHZ_ROTATE, true, 2000, "shazptr_scanthread",
		 "shazptr_scanthread_ipis_per_sync", NULL);
	gp_bench(ctx, &shzb_shazptr, SHZ_SAMEKEY, false, 2000, "shazptr_samekey_sync",
		 "shazptr_samekey_ipis_per_sync", NULL);
	gp_bench(ctx, &shzb_shazptr, SHZ_WILDCARD, false, 2000, "shazptr_wildcard_sync",
		 "shazptr_wildcard_ipis_per_sync", NULL);
	gp_bench(ctx, &shzb_urcu_memb, 0, false, 2000, "urcu_memb_sync",
		 "urcu_memb_ipis_per_sync", &memb_p50);
	gp_bench(ctx, &shzb_urcu_mb, 0, false, 2000, "urcu_mb_sync",
		 "urcu_mb_ipis_per_sync", NULL);
	if (memb_p50 > 0)
		kkb_json_num(ctx, "shazptr_sync_p50_vs_urcu_memb", shazptr_p50 / memb_p50);
	/* The CAL noise floor of this machine, for reading the IPI figures. */
	long long i0 = kkb_ipi_count();

	sleep_us(100000);
	if (i0 >= 0)
		kkb_json_num(ctx, "idle_ipis_per_ms", (double)(kkb_ipi_count() - i0) / 100);

	/* 4. the key registry */
	char rounds_hp[256], rounds_rcu[256];
	double hp_ms = kr_run(&kr_shazptr, &kr_ipis, rounds_hp, sizeof(rounds_hp));

	kkb_json_num(ctx, "registry_unregister_ms_shazptr", hp_ms);
	kkb_json_num(ctx, "registry_ipis_per_unregister_shazptr", kr_ipis);
	double rcu_ms = kr_run(&kr_rcu, &kr_ipis, rounds_rcu, sizeof(rounds_rcu));

	kkb_json_num(ctx, "registry_unregister_ms_rcu", rcu_ms);
	kkb_json_num(ctx, "registry_ipis_per_unregister_rcu", kr_ipis);
	if (hp_ms > 0)
		kkb_json_num(ctx, "registry_speedup", rcu_ms / hp_ms);
	kkb_note(ctx, "registry: ms per %d unregisters, each round: shazptr %s; rcu %s",
		 KR_TIMED, rounds_hp, rounds_rcu);

	/* 5. slot layout: scan cost with 64 more registered threads */
	enum { NPARK = 64 };
	pthread_t pt[NPARK];
	int ready = 0, np = 0;

	kkb_json_num(ctx, "shazptr_selfscan_ns", scan_ns());
	__atomic_store_n(&park_release, 0, __ATOMIC_RELAXED);
	for (; np < NPARK; np++)
		if (pthread_create(&pt[np], NULL, parked_thread, &ready))
			break;
	for (int i = 0; i < 2000 && __atomic_load_n(&ready, __ATOMIC_ACQUIRE) < np; i++)
		sleep_us(500);
	kk_shazptr_get_stats(&st);
	v = scan_ns();
	kkb_json_num(ctx, "shazptr_selfscan_64threads_ns", v);
	kkb_note(ctx, "self-scan with %llu slots (%llu in use): %.0f ns",
		 (unsigned long long)st.slots, (unsigned long long)st.slots_in_use, v);
	__atomic_store_n(&park_release, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < np; i++)
		pthread_join(pt[i], NULL);

	kk_shazptr_get_stats(&st);
	kkb_note(ctx, "shazptr totals: %llu synchronize calls, %llu via the scan thread, "
		 "%llu scan rounds, longest %.1f us",
		 (unsigned long long)st.sync_calls, (unsigned long long)st.sync_scan_thread,
		 (unsigned long long)st.scan_rounds, (double)st.longest_wait_ns / 1e3);
	pthread_setaffinity_np(pthread_self(), sizeof(saved), &saved);
	return 0;
}

KKB_REGISTER("shazptr", "simple hazard pointers vs liburcu (memb, mb) and ck_hp: "
	     "reader ns, grace-period us, IPIs, key registry", run);
