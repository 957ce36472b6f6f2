// SPDX-License-Identifier: MIT
/*
 * kk-bench dynamic_debug: the seed's experiment.  Loads the demo's 19 modules
 * (16154 pr_debug sites, build/dynamic_debug-mods/), runs every site on a worker
 * thread, and switches all sites on through kkctl and the control endpoint,
 * end to end: batched (the default) and one key at a time.  Then the cost of
 * a pr_debug site: disabled (instructions, callgrind) and enabled (ns, next to
 * fprintf of the same message to /dev/null).
 */
#define KK_MODNAME "kkbench"
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <kernelkit/dynamic_debug.h>
#include "bench.h"
#include "dd_ring_floor.h"

#define DD_MAX_MODS 64

static void (*dynamic_debug_run[DD_MAX_MODS])(int);
static void *dynamic_debug_handle[DD_MAX_MODS];
static int dynamic_debug_nmods;
static atomic_int dynamic_debug_stop;
static atomic_ulong dynamic_debug_rounds, dynamic_debug_msgs;

static void dynamic_debug_count_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)msg;
	(void)len;
	(void)arg;
	atomic_fetch_add_explicit(&dynamic_debug_msgs, 1, memory_order_relaxed);
}

static void *dynamic_debug_worker(void *arg)
{
	int v = 0;

	(void)arg;
	if (getenv("KKB_DD_NICE"))
		setpriority(PRIO_PROCESS, (id_t)gettid(), atoi(getenv("KKB_DD_NICE")));
	while (!atomic_load_explicit(&dynamic_debug_stop, memory_order_relaxed)) {
		for (int i = 0; i < dynamic_debug_nmods; i++)
			dynamic_debug_run[i](v);
		atomic_fetch_add_explicit(&dynamic_debug_rounds, 1, memory_order_relaxed);
		v++;
	}
	return NULL;
}

static int dynamic_debug_load(void)
{
	char path[4200], name[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/dynamic_debug-mods/modules.list", kkb_self_dir());
	f = fopen(path, "r");
	if (!f) {
		fprintf(stderr, "kk-bench: %s missing (make all builds it)\n", path);
		return -1;
	}
	while (dynamic_debug_nmods < DD_MAX_MODS && fgets(name, sizeof(name), f)) {
		name[strcspn(name, "\n")] = '\0';
		if (!name[0])
			continue;
		snprintf(path, sizeof(path), "%s/dynamic_debug-mods/lib%s.so", kkb_self_dir(), name);
		dynamic_debug_handle[dynamic_debug_nmods] = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!dynamic_debug_handle[dynamic_debug_nmods]) {
			fprintf(stderr, "kk-bench: %s\n", dlerror());
			fclose(f);
			return -1;
		}
		dynamic_debug_run[dynamic_debug_nmods] = (void (*)(int))dlsym(dynamic_debug_handle[dynamic_debug_nmods], "kkmod_run");
		if (!dynamic_debug_run[dynamic_debug_nmods]) {
			fclose(f);
			return -1;
		}
		dynamic_debug_nmods++;
	}
	fclose(f);
	return 0;
}

struct dynamic_debug_pass {
	unsigned long long syncs;
	long long ipis;
	double ms;
	unsigned long matched, changed;
};

/*
 * kkctl -p SELF write dynamic_debug/control QUERY, timed from spawn to exit.
 * posix_spawn, not fork: a fork write-protects every private page of this
 * process and flushes the TLB of the CPU that runs the worker, IPIs that a
 * kkctl started from a shell (the real use) does not cause.
 */
static int dynamic_debug_kkctl(const char *query, struct dynamic_debug_pass *p)
{
	char kkctl[4200], pidstr[32], reply[4096];
	struct kk_jump_label_stats a, b;
	int fds[2], st;
	long long i0;
	uint64_t t0;
	ssize_t n, got = 0;
	pid_t pid;

	snprintf(kkctl, sizeof(kkctl), "%s/kkctl", kkb_self_dir());
	snprintf(pidstr, sizeof(pidstr), "%d", (int)getpid());
	if (pipe(fds))
		return -1;
	kk_jump_label_get_stats(&a);
	i0 = kkb_ipi_count();
	t0 = kkb_now_ns();
	{
		char *const argv[] = { "kkctl", "-p", pidstr, "write", "dynamic_debug/control",
				       (char *)query, NULL };
		posix_spawn_file_actions_t fa;

		posix_spawn_file_actions_init(&fa);
		posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
		posix_spawn_file_actions_addclose(&fa, fds[0]);
		posix_spawn_file_actions_addclose(&fa, fds[1]);
		if (posix_spawn(&pid, kkctl, &fa, NULL, argv, environ))
			pid = -1;
		posix_spawn_file_actions_destroy(&fa);
	}
	close(fds[1]);
	while (pid > 0 && (n = read(fds[0], reply + got, sizeof(reply) - 1 - (size_t)got)) > 0)
		got += n;
	close(fds[0]);
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return -1;
	p->ms = (double)(kkb_now_ns() - t0) / 1e6;
	p->ipis = kkb_ipi_count() - i0;
	kk_jump_label_get_stats(&b);
	p->syncs = b.syncs - a.syncs;
	reply[got] = '\0';
	const char *tot = strstr(reply, "total: ");

	if (!tot || sscanf(tot, "total: queries %*u matched %lu changed %lu", &p->matched,
			   &p->changed) != 2)
		return -1;
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* ---- the cost of one site ---- */

/*
 * Both loops store the counter (the loop's "work"); the second also has a
 * pr_debug of it.  Per iteration the difference is the site: the NOP.
 */
static volatile long kkb_dynamic_debug_out;

__attribute__((noinline)) long kkb_dynamic_debug_loop_empty(long n)
{
	for (long i = 0; i < n; i++)
		kkb_dynamic_debug_out = i;
	return 0;
}

__attribute__((noinline)) long kkb_dynamic_debug_loop_site(long n)
{
	for (long i = 0; i < n; i++) {
		pr_debug("loop %ld\n", i);
		kkb_dynamic_debug_out = i;
	}
	return 0;
}

#define DD_INSN_ITERS 1000000

static int dynamic_debug_insns_main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "empty"))
		return (int)(kkb_dynamic_debug_loop_empty(DD_INSN_ITERS) & 1);
	if (!strcmp(argv[1], "site"))
		return (int)(kkb_dynamic_debug_loop_site(DD_INSN_ITERS) & 1);
	return 2;
}
KKB_REGISTER_INSNS("dynamic_debug", dynamic_debug_insns_main)

static double dynamic_debug_insns(const char *fn, const char *which)
{
	const char *args[] = { "dynamic_debug", which, NULL };
	long long ir = kkb_callgrind_ir(fn, args);

	return ir < 0 ? -1 : (double)ir / DD_INSN_ITERS;
}

#define DD_PRINT_ITERS 200000

__attribute__((noinline)) static void dynamic_debug_print_site(int i)
{
	pr_debug("bench message %d: %s\n", i, "some payload text");
}

#define DD_RING_ITERS 2000000
#define DD_ROUNDS 5

static double dd_loop_ns(void (*fn)(int), int iters)
{
	uint64_t t0 = kkb_now_ns();

	for (int i = 0; i < iters; i++)
		fn(i);
	return (double)(kkb_now_ns() - t0) / iters;
}

/*
 * ns per event of the same site to the trace ring (T), and of the floor,
 * in DD_ROUNDS interleaved rounds: the medians, and the median of the
 * rounds' ratios.
 */
struct dd_ring_cost {
	double ring, floor, ratio;	/* ns, ns, median of the rounds' ring/floor */
	double floor_rt, ratio_rt;	/* the same against the floor with a run-time string */
};

static int dynamic_debug_ring_cost(struct dd_ring_cost *c)
{
	double r[DD_ROUNDS], f[DD_ROUNDS], q[DD_ROUNDS], frt[DD_ROUNDS], qrt[DD_ROUNDS];

	if (dynamic_debug_exec_queries("func dynamic_debug_print_site =T", "kkbench") != 1)
		return -1;
	kkb_dd_floor_tid = (int32_t)gettid();
	dynamic_debug_print_site(0);		/* the thread's first event maps its ring */
	dd_loop_ns(kkb_dd_floor_site, DD_RING_ITERS);	/* and the floor's pages */
	for (int k = 0; k < DD_ROUNDS; k++) {
		f[k] = dd_loop_ns(kkb_dd_floor_site, DD_RING_ITERS);
		r[k] = dd_loop_ns(dynamic_debug_print_site, DD_RING_ITERS);
		frt[k] = dd_loop_ns(kkb_dd_floor_rt_site, DD_RING_ITERS);
		q[k] = r[k] / f[k];
		qrt[k] = r[k] / frt[k];
	}
	dynamic_debug_exec_queries("func dynamic_debug_print_site -T", "kkbench");
	kk_dyndbg_trace_clear();
	c->ring = kkb_median(r, DD_ROUNDS);
	c->floor = kkb_median(f, DD_ROUNDS);
	c->ratio = kkb_median(q, DD_ROUNDS);
	c->floor_rt = kkb_median(frt, DD_ROUNDS);
	c->ratio_rt = kkb_median(qrt, DD_ROUNDS);
	return 0;
}

/* The baseline of a printed line: the same text by snprintf() and one write(). */
__attribute__((noinline)) static void dynamic_debug_bare_site(int i)
{
	char b[512];
	int n = snprintf(b, sizeof(b), "bench message %d: %s\n", i, "some payload text");

	if (n > 0 && write(2, b, (size_t)n) < 0)
		kkb_dynamic_debug_out = i;
}

__attribute__((noinline)) static void dynamic_debug_fprintf_site(int i)
{
	fprintf(stderr, "bench message %d: %s\n", i, "some payload text");
}

struct dd_print_costs {
	double pr, fp, bare, fpbuf, dec;	/* ns per line, medians */
	double vs_fp, vs_bare;			/* medians of the rounds' ratios */
};

/*
 * ns per call, stderr (unbuffered) pointing at /dev/null: the printing site,
 * fprintf() and snprintf()+write() of the same line, in DD_ROUNDS
 * interleaved rounds after one to warm up.
 */
static int dynamic_debug_print_costs(struct dd_print_costs *c)
{
	int devnull = open("/dev/null", O_WRONLY), saved = dup(2);
	FILE *nul = fopen("/dev/null", "w");
	double pr[DD_ROUNDS], fp[DD_ROUNDS], bare[DD_ROUNDS], q1[DD_ROUNDS], q2[DD_ROUNDS];
	uint64_t t0;

	if (devnull < 0 || saved < 0 || !nul)
		return -1;
	fflush(stderr);
	dup2(devnull, 2);
	kk_dyndbg_set_sink(NULL, NULL);		/* the default: stderr */
	dynamic_debug_exec_queries("func dynamic_debug_print_site =p", "kkbench");
	for (int r = -1; r < DD_ROUNDS; r++) {	/* round -1 warms up */
		double a = dd_loop_ns(dynamic_debug_print_site, DD_PRINT_ITERS);
		double b = dd_loop_ns(dynamic_debug_fprintf_site, DD_PRINT_ITERS);
		double d = dd_loop_ns(dynamic_debug_bare_site, DD_PRINT_ITERS);

		if (r < 0)
			continue;
		pr[r] = a, fp[r] = b, bare[r] = d, q1[r] = a / b, q2[r] = a / d;
	}
	c->pr = kkb_median(pr, DD_ROUNDS);
	c->fp = kkb_median(fp, DD_ROUNDS);
	c->bare = kkb_median(bare, DD_ROUNDS);
	c->vs_fp = kkb_median(q1, DD_ROUNDS);
	c->vs_bare = kkb_median(q2, DD_ROUNDS);
	t0 = kkb_now_ns();
	for (int i = 0; i < DD_PRINT_ITERS; i++)
		fprintf(nul, "bench message %d: %s\n", i, "some payload text");
	fflush(nul);
	c->fpbuf = (double)(kkb_now_ns() - t0) / DD_PRINT_ITERS;
	dynamic_debug_exec_queries("func dynamic_debug_print_site =pmflt", "kkbench");
	c->dec = dd_loop_ns(dynamic_debug_print_site, DD_PRINT_ITERS);
	dynamic_debug_exec_queries("func dynamic_debug_print_site -pmflt", "kkbench");
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	close(devnull);
	fclose(nul);
	return 0;
}

#define DD_RUNS 5

static int dynamic_debug_bench(struct kkb_ctx *ctx)
{
	struct dynamic_debug_pass on[DD_RUNS], off, un_on, un_off;
	double ms[DD_RUNS];
	struct dd_ring_cost rc = { 0 };
	struct dd_print_costs pc = { 0 };
	long long ipis[DD_RUNS];
	unsigned long long max_syncs = 0;
	size_t sites;
	pthread_t th;
	int ret = 0;

	if (dynamic_debug_load())
		return 1;
	sites = kk_dyndbg_count_sites("*") - kk_dyndbg_count_sites("kkbench");
	kk_dyndbg_set_sink(dynamic_debug_count_sink, NULL);
	atomic_store(&dynamic_debug_stop, 0);
	pthread_create(&th, NULL, dynamic_debug_worker, NULL);
	while (atomic_load(&dynamic_debug_rounds) < 2)
		;

	for (int r = 0; r < DD_RUNS && !ret; r++) {
		ret |= dynamic_debug_kkctl("module !kkbench +p", &on[r]);
		ret |= dynamic_debug_kkctl("-p", &off);
		ms[r] = on[r].ms;
		ipis[r] = on[r].ipis;
		if (on[r].syncs > max_syncs)
			max_syncs = on[r].syncs;
		if (!ret && (on[r].changed != sites || off.changed != sites)) {
			fprintf(stderr, "kk-bench: +p changed %lu, -p %lu of %zu sites\n",
				on[r].changed, off.changed, sites);
			ret = 1;
		}
	}
	kk_dyndbg_set_batched(0);
	ret |= dynamic_debug_kkctl("module !kkbench +p", &un_on);
	ret |= dynamic_debug_kkctl("-p", &un_off);
	kk_dyndbg_set_batched(1);
	unsigned long msgs = atomic_load(&dynamic_debug_msgs);

	atomic_store(&dynamic_debug_stop, 1);
	pthread_join(th, NULL);
	if (ret) {
		fprintf(stderr, "kk-bench: a kkctl query failed\n");
		return 1;
	}
	qsort(ms, DD_RUNS, sizeof(ms[0]), cmp_double);
	qsort(ipis, DD_RUNS, sizeof(ipis[0]), cmp_ll);

	if (dynamic_debug_print_costs(&pc))
		ret = 1;
	if (dynamic_debug_ring_cost(&rc))
		ret = 1;

	kkb_json_num(ctx, "sites", (double)sites);
	kkb_json_num(ctx, "all_on_syncs", (double)max_syncs);
	kkb_json_num(ctx, "all_on_ipis", (double)ipis[DD_RUNS / 2]);
	kkb_json_num(ctx, "all_on_ms", ms[DD_RUNS / 2]);
	kkb_json_num(ctx, "all_on_ms_min", ms[0]);
	kkb_json_num(ctx, "unbatched_all_on_syncs", (double)un_on.syncs);
	kkb_json_num(ctx, "unbatched_all_on_ipis", (double)un_on.ipis);
	kkb_json_num(ctx, "unbatched_all_on_ms", un_on.ms);

	double e = dynamic_debug_insns("kkb_dynamic_debug_loop_empty", "empty");
	double s = dynamic_debug_insns("kkb_dynamic_debug_loop_site", "site");

	if (e < 0 || s < 0) {
		kkb_json_null(ctx, "disabled_pr_debug_insns");
		kkb_note(ctx, "valgrind not available: no instruction counts");
	} else {
		kkb_json_num(ctx, "disabled_pr_debug_insns", s - e);
		kkb_json_num(ctx, "loop_with_site_insns", s);
		kkb_json_num(ctx, "loop_empty_insns", e);
	}
	kkb_json_num(ctx, "enabled_pr_debug_ns", pc.pr);
	kkb_json_num(ctx, "fprintf_ns", pc.fp);
	kkb_json_num(ctx, "enabled_vs_fprintf", pc.vs_fp);
	kkb_json_num(ctx, "snprintf_write_ns", pc.bare);
	kkb_json_num(ctx, "enabled_vs_snprintf_write", pc.vs_bare);
	kkb_json_num(ctx, "enabled_decorated_pr_debug_ns", pc.dec);
	kkb_json_num(ctx, "fprintf_buffered_ns", pc.fpbuf);
	if (rc.ring > 0) {
		kkb_json_num(ctx, "ring_ns", rc.ring);
		kkb_json_num(ctx, "ring_floor_ns", rc.floor);
		kkb_json_num(ctx, "ring_vs_floor", rc.ratio);
		kkb_json_num(ctx, "ring_floor_rt_ns", rc.floor_rt);
		kkb_json_num(ctx, "ring_vs_floor_rt", rc.ratio_rt);
		kkb_json_num(ctx, "stderr_vs_ring", pc.pr / rc.ring);
	} else {
		kkb_json_null(ctx, "ring_ns");
		ret = 1;
	}
	kkb_note(ctx, "all_on_*: 'module !kkbench +p' (every demo site) by kkctl, spawn to exit; "
		 "median of %d (syncs: max)", DD_RUNS);
	kkb_note(ctx, "IPIs: CAL line of /proc/interrupts, whole machine, during the command");
	kkb_note(ctx, "disabled_pr_debug_insns: per iteration, loop with a disabled pr_debug "
		 "minus the empty loop");
	kkb_note(ctx, "enabled_pr_debug_ns (+p), fprintf_ns and snprintf_write_ns (snprintf, "
		 "one write): the same line to stderr = /dev/null, unbuffered, medians of %d "
		 "interleaved rounds of %d, ratios: medians of the rounds' ratios; "
		 "fprintf_buffered_ns: to a buffered FILE on /dev/null", DD_ROUNDS, DD_PRINT_ITERS);
	kkb_note(ctx, "ring_ns: the same site with T (its line recorded in binary into this "
		 "thread's trace ring, %%d and %%s); ring_floor_ns: a time stamp and the stores "
		 "of the same record, nothing else (the string's length and bytes folded by the "
		 "compiler); ring_floor_rt_ns: the same with the string unknown to the compiler "
		 "(strnlen, memcpy); medians of %d interleaved rounds of %d; "
		 "stderr_vs_ring: enabled_pr_debug_ns / ring_ns", DD_ROUNDS, DD_RING_ITERS);
	kkb_note(ctx, "worker rounds over all sites during the run: %lu; messages %lu",
		 (unsigned long)atomic_load(&dynamic_debug_rounds), msgs);
	for (int i = 0; i < dynamic_debug_nmods; i++)
		dlclose(dynamic_debug_handle[i]);
	return ret;
}
KKB_REGISTER("dynamic_debug", "16154 pr_debug sites: +p through kkctl batched vs per key; site costs",
	     dynamic_debug_bench)

/*
 * The ring's cases alone (issue 41 item 5): no modules, no kkctl, so that
 * they run where the whole benchmark cannot (a machine too loaded for
 * kkctl's replies), and take a second.
 */
static int dynamic_debug_ring_bench(struct kkb_ctx *ctx)
{
	struct dd_ring_cost rc = { 0 };

	if (dynamic_debug_ring_cost(&rc))
		return 1;
	kkb_json_num(ctx, "ring_ns", rc.ring);
	kkb_json_num(ctx, "ring_floor_ns", rc.floor);
	kkb_json_num(ctx, "ring_vs_floor", rc.ratio);
	kkb_json_num(ctx, "ring_floor_rt_ns", rc.floor_rt);
	kkb_json_num(ctx, "ring_vs_floor_rt", rc.ratio_rt);
	kkb_note(ctx, "as in dynamic_debug: medians of %d interleaved rounds of %d events; "
		 "ratios: medians of the rounds' ratios", DD_ROUNDS, DD_RING_ITERS);
	return 0;
}
KKB_REGISTER("dynamic_debug_ring", "the +T event against its floors (dynamic_debug's ring cases alone)",
	     dynamic_debug_ring_bench)
