// SPDX-License-Identifier: MIT
/*
 * kk-bench guest: what a process pays for hosting kernelkit (issue 9).
 *
 *  start-up  the same hello world linked with and without -lkernelkit
 *            (build/guest/hello-{kk,plain}), run alternately as pairs of
 *            posix_spawn+wait, median wall time of each and their ratio;
 *  fork      fork()+waitpid() of a child that exits at once, in a program
 *            with kernelkit and its endpoint running against the same
 *            program built without kernelkit (bench/progs/forkwait.c), and
 *            with KK_CONTROL=0: medians of interleaved runs, and the ratios;
 *  dlopen    an object with 16000 sites, one key each (bench/gen-sites.sh),
 *            against the same object built -DKK_NO_JUMP_LABEL: dlopen time
 *            and the anonymous memory it adds (smaps_rollup), each in a fresh
 *            process, alternately;
 *  sharing   two demo machines (examples/machine.c: 16154 pr_debug sites in
 *            19 objects, a worker thread running them all; the second one's
 *            worker at nice 19): PSS, private
 *            dirty and anonymous kB of the objects' text, before any key
 *            changed and after '+p' on one of them;
 *  first +p  syncs and IPIs of that first '+p' (the machine: its worker
 *            keeps running every site page), and of the first '+p' in a
 *            process whose other thread runs other code (site pages cold),
 *            with KK_JUMP_LABEL_COW=lazy (the default) and eager;
 *  mp_server the nginx-shaped server of test/progs/mp_server.c (a master and
 *            2 workers, every site off), linked with kernelkit against the
 *            same source built -DMP_PLAIN (build/guest/mp_server-{kk,plain}):
 *            start-up (posix_spawn to its "ready" line: listening, workers
 *            forked and ready, then SIGTERM and reaped; alternating pairs)
 *            and the cost of a request (request/reply exchanges on one
 *            loopback connection to each, interleaved), as medians and their
 *            ratios; the requests again pinned, so that both servers get the
 *            same placement: everything and a busy loop on one CPU (hog),
 *            and the servers on one CPU, the client on another (cross_cpu).
 *
 * IPIs are the machine-wide CAL delta of /proc/interrupts: other processes
 * add noise, hence medians.  The processes get KK_CONTROL=0 except the
 * machines (driven through kkctl) and the start-up runs of hello and
 * mp_server and the fork runs, which use the inherited environment (and once
 * more with KK_CONTROL=0); mp_server's request runs use the inherited
 * environment.
 */
#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include "bench.h"

extern char **environ;

#define HELLO_PAIRS	200
#define DLOPEN_PAIRS	9
#define MACHINE_RUNS	3
#define FLIP_RUNS	7
#define GUEST_SITES	16000
#define MP_PAIRS	40
#define MP_REQS		10000
#define FORK_RUNS	11
#define FORK_N		300

/*
 * The copy-on-write settings, spelled for this code (KK_JUMP_LABEL_COW) and
 * for e665119 (KK_JUMP_LABEL_LAZY_COW), so that one bench measures both.
 */
static const char *const cow_lazy[] = { "KK_JUMP_LABEL_COW=lazy", "KK_JUMP_LABEL_LAZY_COW=1", NULL };
static const char *const cow_eager[] = { "KK_JUMP_LABEL_COW=eager", NULL };
static const char *const control_off[] = { "KK_CONTROL=0", NULL };

/* ---- helpers ----------------------------------------------------------------------- */

/* environ with @a and @b (NAME=VALUE lists, may be NULL) put in front. */
static char **make_env(const char *const *a, const char *const *b)
{
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + 16, sizeof(*env));
	for (const char *const *l = a; l && *l; l++)
		env[k++] = (char *)*l;
	for (const char *const *l = b; l && *l; l++)
		env[k++] = (char *)*l;
	for (size_t i = 0; i < n; i++) {
		size_t len = strcspn(environ[i], "=");
		int dup = 0;

		for (size_t j = 0; j < k && !dup; j++)
			dup = !strncmp(env[j], environ[i], len) && env[j][len] == '=';
		if (!dup)
			env[k++] = environ[i];
	}
	return env;
}

/* Start @argv with stdout on @out (-1: /dev/null) and stderr on /dev/null. */
static pid_t spawn(char *const argv[], char **env, int out)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;

	posix_spawn_file_actions_init(&fa);
	if (out >= 0)
		posix_spawn_file_actions_adddup2(&fa, out, 1);
	else
		posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawn(&pid, argv[0], &fa, NULL, argv, env))
		pid = -1;
	posix_spawn_file_actions_destroy(&fa);
	return pid;
}

static int wait_ok(pid_t pid)
{
	int st;

	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st);
}

/* Run @argv; its stdout (up to @len bytes) into @buf.  0 or -1. */
static int run_capture(char *const argv[], char **env, char *buf, size_t len)
{
	int fds[2];
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	pid = spawn(argv, env, fds[1]);
	close(fds[1]);
	while (pid > 0 && got + 1 < len && (n = read(fds[0], buf + got, len - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fds[0]);
	return wait_ok(pid) ? 0 : -1;
}

static void path_in_build(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", kkb_self_dir(), rel);
}

/* ---- start-up ------------------------------------------------------------------------ */

static double run_wall_ns(char *path, char **env)
{
	char *argv[] = { path, NULL };
	uint64_t t0 = kkb_now_ns();
	pid_t pid = spawn(argv, env, -1);

	if (!wait_ok(pid))
		return -1;
	return (double)(kkb_now_ns() - t0);
}

/* Median ns of each program over @pairs alternating pairs, and the median of the pair ratios. */
static int hello_pairs(char **env, const char *other, double *plain, double *kk,
		       double *pair_ratio)
{
	char p[4200], k[4200];
	double *a = calloc(HELLO_PAIRS, sizeof(double)), *b = calloc(HELLO_PAIRS, sizeof(double));
	double *r = calloc(HELLO_PAIRS, sizeof(double));
	int ret = 0;

	path_in_build(p, sizeof(p), "guest/hello-plain");
	path_in_build(k, sizeof(k), other);
	for (int i = 0; i < HELLO_PAIRS && !ret; i++) {
		if (i % 2) {
			a[i] = run_wall_ns(p, env);
			b[i] = run_wall_ns(k, env);
		} else {
			b[i] = run_wall_ns(k, env);
			a[i] = run_wall_ns(p, env);
		}
		if (a[i] <= 0 || b[i] <= 0)
			ret = -1;
		r[i] = b[i] / a[i];
	}
	if (!ret) {
		*plain = kkb_median(a, HELLO_PAIRS);
		*kk = kkb_median(b, HELLO_PAIRS);
		*pair_ratio = kkb_median(r, HELLO_PAIRS);
	}
	free(a);
	free(b);
	free(r);
	return ret;
}

static int bench_startup(struct kkb_ctx *ctx)
{
	char **env = make_env(NULL, NULL), **env_off = make_env(control_off, NULL);
	double plain, kk, ratio;
	int ret = 0;

	if (hello_pairs(env, "guest/hello-kk", &plain, &kk, &ratio)) {
		fprintf(stderr, "kk-bench: guest/hello-* did not run (make all builds them)\n");
		ret = 1;
	} else {
		kkb_json_num(ctx, "hello_plain_us", plain / 1e3);
		kkb_json_num(ctx, "hello_kk_us", kk / 1e3);
		kkb_json_num(ctx, "hello_ratio", kk / plain);
		kkb_json_num(ctx, "hello_pair_ratio", ratio);
	}
	if (!ret && !hello_pairs(env_off, "guest/hello-kk", &plain, &kk, &ratio)) {
		kkb_json_num(ctx, "hello_control_off_ratio", kk / plain);
		kkb_json_num(ctx, "hello_control_off_kk_us", kk / 1e3);
	}
	/* The floor: what linking any shared library costs (an empty one, same rpath). */
	if (!ret && !hello_pairs(env, "guest/hello-empty", &plain, &kk, &ratio)) {
		kkb_json_num(ctx, "hello_empty_so_ratio", kk / plain);
		kkb_json_num(ctx, "hello_empty_so_pair_ratio", ratio);
	}
	free(env);
	free(env_off);
	return ret;
}

/* ---- fork ---------------------------------------------------------------------------- */

/*
 * build/guest/forkwait-{plain,kk} N: fork()+waitpid() of a child that
 * _exit(0)s at once, N times; "median_ns threads".  The same source without
 * kernelkit is the baseline: the difference is all that the library adds to
 * a fork (its fork handlers, and in the child a new endpoint: a socket and a
 * thread).  KK_CONTROL=0 takes the endpoint out, leaving the rest.
 */
struct fork_case {
	const char *rel;
	const char *const *extra;	/* environment in front of ours */
	int threads;			/* what the process must have: 2 with its endpoint */
};

static const struct fork_case fork_cases[] = {
	{ "guest/forkwait-plain", NULL, 1 },
	{ "guest/forkwait-kk", NULL, 2 },
	{ "guest/forkwait-kk", control_off, 1 },
};

#define FORK_CASES	(sizeof(fork_cases) / sizeof(fork_cases[0]))

static int fork_run(const struct fork_case *c, double *ns)
{
	char bin[4200], n[16], out[128];
	char *argv[] = { bin, n, NULL };
	char **env = make_env(c->extra, NULL);
	int threads = 0, ret;

	path_in_build(bin, sizeof(bin), c->rel);
	snprintf(n, sizeof(n), "%d", FORK_N);
	ret = run_capture(argv, env, out, sizeof(out));
	free(env);
	if (ret || sscanf(out, "%lf %d", ns, &threads) != 2) {
		fprintf(stderr, "kk-bench: %s did not run (make all builds it)\n", c->rel);
		return -1;
	}
	if (threads != c->threads) {
		fprintf(stderr, "kk-bench: %s%s had %d threads, not %d: %s\n", c->rel,
			c->extra ? " with KK_CONTROL=0" : "", threads, c->threads,
			c->threads > 1 ? "no endpoint (KK_CONTROL=0 in the environment?)"
				       : "a thread it should not have");
		return -1;
	}
	return 0;
}

/* FORK_RUNS rounds of the three cases, interleaved (the first of a round rotates). */
static int bench_fork(struct kkb_ctx *ctx)
{
	double t[FORK_CASES][FORK_RUNS], med[FORK_CASES];

	for (int i = 0; i < FORK_RUNS; i++)
		for (size_t j = 0; j < FORK_CASES; j++) {
			size_t c = (i + j) % FORK_CASES;

			if (fork_run(&fork_cases[c], &t[c][i]))
				return 1;
		}
	for (size_t c = 0; c < FORK_CASES; c++)
		med[c] = kkb_median(t[c], FORK_RUNS);
	kkb_json_num(ctx, "fork_wait_plain_us", med[0] / 1e3);
	kkb_json_num(ctx, "fork_wait_kk_us", med[1] / 1e3);
	kkb_json_num(ctx, "fork_wait_ratio", med[1] / med[0]);
	kkb_json_num(ctx, "fork_wait_control_off_kk_us", med[2] / 1e3);
	kkb_json_num(ctx, "fork_wait_control_off_ratio", med[2] / med[0]);
	return 0;
}

/* ---- dlopen ------------------------------------------------------------------------- */

static long anon_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "re");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Anonymous: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

/* kk-bench __insns guest dlopen PATH: "ns anon_bytes malloc_bytes" of one dlopen. */
static int child_dlopen(const char *path)
{
	struct mallinfo2 m0, m1;
	long a0, a1;
	uint64_t t0, t1;
	void *h;

	a0 = anon_kb();
	m0 = mallinfo2();
	t0 = kkb_now_ns();
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	t1 = kkb_now_ns();
	m1 = mallinfo2();
	a1 = anon_kb();
	if (!h || a0 < 0)
		return 1;
	printf("%llu %ld %lld\n", (unsigned long long)(t1 - t0), (a1 - a0) * 1024,
	       (long long)(m1.uordblks + m1.hblkhd) - (long long)(m0.uordblks + m0.hblkhd));
	return 0;
}

static int one_dlopen(const char *rel, double *ns, double *anon, double *mall)
{
	char self[4200], path[4200], out[256];
	char *argv[] = { self, "__insns", "guest", "dlopen", path, NULL };
	char **env = make_env(control_off, NULL);
	int ret;

	path_in_build(self, sizeof(self), "kk-bench");
	path_in_build(path, sizeof(path), rel);
	ret = run_capture(argv, env, out, sizeof(out));
	free(env);
	if (ret || sscanf(out, "%lf %lf %lf", ns, anon, mall) != 3)
		return -1;
	return 0;
}

static int bench_dlopen(struct kkb_ctx *ctx)
{
	double t_jl[DLOPEN_PAIRS], t_no[DLOPEN_PAIRS], a_jl[DLOPEN_PAIRS], a_no[DLOPEN_PAIRS];
	double m_jl[DLOPEN_PAIRS], m_no[DLOPEN_PAIRS];

	for (int i = 0; i < DLOPEN_PAIRS; i++) {
		int bad = i % 2 ?
			one_dlopen("guest/libkkguest.so", &t_jl[i], &a_jl[i], &m_jl[i]) ||
			one_dlopen("guest/libkkguest-nojl.so", &t_no[i], &a_no[i], &m_no[i]) :
			one_dlopen("guest/libkkguest-nojl.so", &t_no[i], &a_no[i], &m_no[i]) ||
			one_dlopen("guest/libkkguest.so", &t_jl[i], &a_jl[i], &m_jl[i]);

		if (bad) {
			fprintf(stderr, "kk-bench: dlopen of guest/libkkguest*.so failed\n");
			return 1;
		}
	}
	double tj = kkb_median(t_jl, DLOPEN_PAIRS), tn = kkb_median(t_no, DLOPEN_PAIRS);
	double aj = kkb_median(a_jl, DLOPEN_PAIRS), an = kkb_median(a_no, DLOPEN_PAIRS);
	double mj = kkb_median(m_jl, DLOPEN_PAIRS), mn = kkb_median(m_no, DLOPEN_PAIRS);

	kkb_json_num(ctx, "dlopen_sites", GUEST_SITES);
	kkb_json_num(ctx, "dlopen_us", tj / 1e3);
	kkb_json_num(ctx, "dlopen_nojl_us", tn / 1e3);
	kkb_json_num(ctx, "dlopen_ratio", tj / tn);
	kkb_json_num(ctx, "dlopen_anon_bytes_per_site", (aj - an) / GUEST_SITES);
	kkb_json_num(ctx, "dlopen_malloc_bytes_per_site", (mj - mn) / GUEST_SITES);
	kkb_json_num(ctx, "dlopen_anon_kb", aj / 1024);
	kkb_json_num(ctx, "dlopen_nojl_anon_kb", an / 1024);
	return 0;
}

/* ---- the demo machines ------------------------------------------------------------- */

struct machine {
	pid_t pid;
	int out;		/* its stdout */
};

struct text_kb {
	double pss, private_dirty, anon, rss;
};

/* @nice: the second machine runs its worker at nice 19, so that it does not
 * take the CPU from the first one's worker while that one is measured. */
static int machine_start(struct machine *m, const char *const *extra, int nice)
{
	char bin[4200], mods[4200], buf[4096];
	char *argv[] = { bin, mods, NULL, NULL, NULL };
	char **env;
	size_t got = 0;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC))
		return -1;
	path_in_build(bin, sizeof(bin), "dynamic_debug-machine");
	path_in_build(mods, sizeof(mods), "dynamic_debug-mods");
	if (nice) {
		argv[1] = "-n";
		argv[2] = "19";
		argv[3] = mods;
	}
	env = make_env(extra, NULL);
	m->pid = spawn(argv, env, fds[1]);
	free(env);
	close(fds[1]);
	m->out = fds[0];
	/* "machine: pid N ..." once loaded.  The endpoint listens by then: it
	 * binds its socket when the first object with sites registers. */
	while (m->pid > 0 && got + 1 < sizeof(buf)) {
		ssize_t n = read(m->out, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "machine: pid"))
			return 0;
	}
	return -1;
}

static void machine_stop(struct machine *m)
{
	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		waitpid(m->pid, NULL, 0);
	}
	close(m->out);
}

/* The r-x mappings of the demo's objects in /proc/PID/smaps. */
static int text_kb(pid_t pid, struct text_kb *t)
{
	char path[64], line[512];
	int in = 0;
	double v;
	FILE *f;

	memset(t, 0, sizeof(*t));
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perm[5];

		if (sscanf(line, "%lx-%lx %4s ", &lo, &hi, perm) == 3 && strchr(line, '-') <
		    strchr(line, ' ')) {
			in = !strcmp(perm, "r-xp") && strstr(line, "/dynamic_debug-mods/");
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "Pss: %lf", &v) == 1)
			t->pss += v;
		else if (sscanf(line, "Private_Dirty: %lf", &v) == 1)
			t->private_dirty += v;
		else if (sscanf(line, "Anonymous: %lf", &v) == 1)
			t->anon += v;
		else if (sscanf(line, "Rss: %lf", &v) == 1)
			t->rss += v;
	}
	fclose(f);
	return 0;
}

/*
 * Nanoseconds the machine's worker threads have spent on a CPU
 * (/proc/PID/task/TID/schedstat; the workers are the threads other than the
 * main one that keep the program's name), or -1.
 */
static double machine_worker_ns(struct machine *m)
{
	char path[128], comm[64];
	struct dirent *d;
	double total = -1;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)m->pid);
	if (!(dir = opendir(path)))
		return -1;
	while ((d = readdir(dir))) {
		int tid = atoi(d->d_name);
		double run;
		FILE *f;

		if (tid <= 0 || tid == m->pid)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)m->pid, tid);
		if (!(f = fopen(path, "re")))
			continue;
		comm[0] = '\0';
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = '\0';
		fclose(f);
		if (strncmp(comm, "dynamic_debug-machine", 14))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%d/schedstat", (int)m->pid, tid);
		if (!(f = fopen(path, "re")))
			continue;
		if (fscanf(f, "%lf", &run) == 1)
			total = (total < 0 ? 0 : total) + run;
		fclose(f);
	}
	closedir(dir);
	return total;
}

/* kkctl -p PID write dynamic_debug/control QUERY: syncs from the reply, IPIs around it. */
static int machine_query(struct machine *m, const char *query, double *syncs, double *ipis)
{
	char kkctl[4200], pidstr[32], reply[4096];
	char *argv[] = { kkctl, "-p", pidstr, "write", "dynamic_debug/control", (char *)query, NULL };
	char **env;
	long long i0;
	const char *tot;
	int ret;

	path_in_build(kkctl, sizeof(kkctl), "kkctl");
	snprintf(pidstr, sizeof(pidstr), "%d", (int)m->pid);
	env = make_env(NULL, NULL);
	i0 = kkb_ipi_count();
	ret = run_capture(argv, env, reply, sizeof(reply));
	*ipis = (double)(kkb_ipi_count() - i0);
	free(env);
	if (ret || !(tot = strstr(reply, "syncs ")) || sscanf(tot, "syncs %lf", syncs) != 1)
		return -1;
	return 0;
}

struct sharing {
	struct text_kb a0, b0, a1, b1;	/* before and after +p on a */
	double syncs, ipis;
	double share;			/* share of the +p that a's worker spent on a CPU */
};


static int sharing_run(const char *const *cow, struct sharing *s)
{
	struct machine a = { 0 }, b = { 0 };
	int ret = -1;

	a.out = b.out = -1;
	if (machine_start(&a, cow, 0) || machine_start(&b, cow, 1))
		goto out;
	if (text_kb(a.pid, &s->a0) || text_kb(b.pid, &s->b0))
		goto out;
	{
		double w0 = machine_worker_ns(&a), w1;
		uint64_t t0 = kkb_now_ns(), t1;

		if (machine_query(&a, "+p", &s->syncs, &s->ipis))
			goto out;
		t1 = kkb_now_ns();
		w1 = machine_worker_ns(&a);
		s->share = w0 >= 0 && w1 >= w0 ? (w1 - w0) / (double)(t1 - t0) : 0;
	}
	if (text_kb(a.pid, &s->a1) || text_kb(b.pid, &s->b1))
		goto out;
	ret = 0;
out:
	machine_stop(&a);
	machine_stop(&b);
	return ret;
}

static int bench_sharing(struct kkb_ctx *ctx, const char *tag, const char *const *cow)
{
	double pss0[MACHINE_RUNS], dirty0[MACHINE_RUNS], pss1[MACHINE_RUNS], dirty1[MACHINE_RUNS];
	double pssb1[MACHINE_RUNS], rss[MACHINE_RUNS], syncs[MACHINE_RUNS], ipis[MACHINE_RUNS];
	double dirtyb1[MACHINE_RUNS], share[MACHINE_RUNS];
	char key[64];
	int tries = 0;

	for (int r = 0; r < MACHINE_RUNS; r++) {
		struct sharing s;

		if (sharing_run(cow, &s)) {
			fprintf(stderr, "kk-bench: the demo machines did not run (make all)\n");
			return 1;
		}
		/* IPIs only count while the worker ran: retry runs where it mostly did not */
		if (s.share < 0.5 && ++tries < 3 * MACHINE_RUNS) {
			r--;
			continue;
		}
		share[r] = s.share;
		pss0[r] = (s.a0.pss + s.b0.pss) / 2;
		dirty0[r] = (s.a0.private_dirty + s.b0.private_dirty) / 2;
		rss[r] = s.a0.rss;
		pss1[r] = s.a1.pss;
		dirty1[r] = s.a1.private_dirty;
		pssb1[r] = s.b1.pss;
		dirtyb1[r] = s.b1.private_dirty;
		syncs[r] = s.syncs;
		ipis[r] = s.ipis;
	}
#define PUT(name, v) do { snprintf(key, sizeof(key), "%s_" name, tag); \
			  kkb_json_num(ctx, key, kkb_median(v, MACHINE_RUNS)); } while (0)
	PUT("text_rss_kb", rss);
	PUT("text_pss_kb_before", pss0);
	PUT("text_private_dirty_kb_before", dirty0);
	PUT("text_pss_kb_after_flipped", pss1);
	PUT("text_private_dirty_kb_after_flipped", dirty1);
	PUT("text_pss_kb_after_other", pssb1);
	PUT("text_private_dirty_kb_after_other", dirtyb1);
	PUT("first_p_syncs", syncs);
	PUT("first_p_ipis", ipis);
	PUT("first_p_worker_on_cpu", share);
#undef PUT
	return 0;
}

/* ---- the first +p in a process of our own ------------------------------------------- */

#define MAX_MODS 64

static void (*mod_run[MAX_MODS])(int);
static int nmods;
static atomic_int stop, hot;
static atomic_ulong rounds;
static volatile unsigned long spin;

static void *runner(void *arg)
{
	int v = 0;

	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		if (atomic_load_explicit(&hot, memory_order_relaxed))
			for (int i = 0; i < nmods; i++)
				mod_run[i](v);
		else
			for (int i = 0; i < 1000; i++)
				spin++;		/* other code: the site pages stay cold */
		atomic_fetch_add_explicit(&rounds, 1, memory_order_relaxed);
		v++;
	}
	return NULL;
}

static void null_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)msg;
	(void)len;
	(void)arg;
}

/* kk-bench __insns guest flip hot|cold: "syncs ipis ms" of the first +p. */
static int child_flip(const char *mode)
{
	char path[4200], name[128];
	struct kk_jump_label_stats a, b;
	long long i0;
	struct timespec c0, c1;
	uint64_t t0, t1;
	clockid_t cid;
	pthread_t th;
	FILE *f;
	int ret;

	path_in_build(path, sizeof(path), "dynamic_debug-mods/modules.list");
	if (!(f = fopen(path, "re")))
		return 1;
	while (nmods < MAX_MODS && fgets(name, sizeof(name), f)) {
		void *h;

		name[strcspn(name, "\n")] = '\0';
		snprintf(path, sizeof(path), "%s/dynamic_debug-mods/lib%s.so", kkb_self_dir(), name);
		if (!name[0] || !(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) ||
		    !(mod_run[nmods++] = (void (*)(int))dlsym(h, "kkmod_run")))
			return 2;
	}
	fclose(f);
	kk_dyndbg_set_sink(null_sink, NULL);
	atomic_store(&hot, !strcmp(mode, "hot"));
	for (int i = 0; i < nmods; i++)		/* the pages are mapped, as in a running program */
		mod_run[i](0);
	pthread_create(&th, NULL, runner, NULL);
	while (atomic_load(&rounds) < 100)
		;
	/* how much of the query the runner spent on a CPU */
	pthread_getcpuclockid(th, &cid);
	kk_jump_label_get_stats(&a);
	i0 = kkb_ipi_count();
	clock_gettime(cid, &c0);
	t0 = kkb_now_ns();
	ret = dynamic_debug_exec_queries("module !kkbench +p", NULL);
	t1 = kkb_now_ns();
	clock_gettime(cid, &c1);
	i0 = kkb_ipi_count() - i0;
	kk_jump_label_get_stats(&b);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	if (ret < 0)
		return 3;
	printf("%llu %lld %.3f %.3f\n", b.syncs - a.syncs, i0, (double)(t1 - t0) / 1e6,
	       ((double)(c1.tv_sec - c0.tv_sec) * 1e9 + (double)(c1.tv_nsec - c0.tv_nsec)) /
		       (double)(t1 - t0));
	return 0;
}

static int bench_flip(struct kkb_ctx *ctx, const char *mode, const char *const *cow,
		      const char *tag)
{
	char self[4200], out[256], key[64], m[16];
	char *argv[] = { self, "__insns", "guest", "flip", m, NULL };
	char **env = make_env(control_off, cow);
	double syncs[FLIP_RUNS], ipis[FLIP_RUNS], ms[FLIP_RUNS], pace[FLIP_RUNS];
	int tries = 0;

	snprintf(m, sizeof(m), "%s", mode);
	path_in_build(self, sizeof(self), "kk-bench");
	for (int r = 0; r < FLIP_RUNS; r++) {
		if (run_capture(argv, env, out, sizeof(out)) ||
		    sscanf(out, "%lf %lf %lf %lf", &syncs[r], &ipis[r], &ms[r], &pace[r]) != 4) {
			free(env);
			fprintf(stderr, "kk-bench: guest flip %s failed\n", mode);
			return 1;
		}
		/* IPIs only count while the other thread ran: retry when it mostly did not */
		if (pace[r] < 0.5 && ++tries < 3 * FLIP_RUNS)
			r--;
	}
	free(env);
	snprintf(key, sizeof(key), "%s_first_p_syncs", tag);
	kkb_json_num(ctx, key, kkb_median(syncs, FLIP_RUNS));
	snprintf(key, sizeof(key), "%s_first_p_ipis", tag);
	kkb_json_num(ctx, key, kkb_median(ipis, FLIP_RUNS));
	snprintf(key, sizeof(key), "%s_first_p_ms", tag);
	kkb_json_num(ctx, key, kkb_median(ms, FLIP_RUNS));
	snprintf(key, sizeof(key), "%s_first_p_thread_on_cpu", tag);
	kkb_json_num(ctx, key, kkb_median(pace, FLIP_RUNS));
	return 0;
}

static int insns_guest(int argc, char **argv)
{
	if (argc >= 3 && !strcmp(argv[1], "dlopen"))
		return child_dlopen(argv[2]);
	if (argc >= 3 && !strcmp(argv[1], "flip"))
		return child_flip(argv[2]);
	return 2;
}
KKB_REGISTER_INSNS("guest", insns_guest)

/* ---- mp_server: an nginx-shaped server ------------------------------------------------ */

struct mp {
	pid_t pid;
	int out;		/* its stdout */
	int port;
};

/*
 * Start build/@rel and wait for its "ready PID PORT ..." line; @ns: the wall
 * time from posix_spawn to that line.  -n: the master does not wait for its
 * other threads to sleep before its dup2 (that is for the fd-2 test).
 */
static int mp_start(struct mp *s, const char *rel, const char *const *extra, double *ns)
{
	char bin[4200], buf[512];
	char *argv[] = { bin, "-n", "-w", "2", "-l", "/dev/null", NULL };
	char **env = make_env(extra, NULL);
	size_t got = 0;
	uint64_t t0;
	int fds[2];

	s->pid = -1;
	s->out = -1;
	if (pipe2(fds, O_CLOEXEC)) {
		free(env);
		return -1;
	}
	path_in_build(bin, sizeof(bin), rel);
	t0 = kkb_now_ns();
	s->pid = spawn(argv, env, fds[1]);
	free(env);
	close(fds[1]);
	s->out = fds[0];
	while (s->pid > 0 && got + 1 < sizeof(buf)) {
		ssize_t n = read(s->out, buf + got, sizeof(buf) - 1 - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
		buf[got] = '\0';
		if (strchr(buf, '\n')) {
			*ns = (double)(kkb_now_ns() - t0);
			return sscanf(buf, "ready %*d %d", &s->port) == 1 ? 0 : -1;
		}
	}
	return -1;
}

/* SIGTERM: the master tells its workers to exit, reaps them, exits 0. */
static int mp_stop(struct mp *s)
{
	int ok = 1;

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		ok = wait_ok(s->pid);
	}
	if (s->out >= 0)
		close(s->out);
	s->pid = -1;
	s->out = -1;
	return ok ? 0 : -1;
}

static int mp_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* ns of one request/reply exchange on @fd; -1 on error. */
static double mp_request(int fd)
{
	static const char req[] = "GET /index.html\n";
	static const char want[] = "OK /index.html\n";
	char buf[64];
	size_t got = 0;
	uint64_t t0 = kkb_now_ns();

	if (send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(req) - 1)
		return -1;
	while (got < sizeof(want) - 1) {
		ssize_t n = recv(fd, buf + got, sizeof(buf) - got, 0);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	if (got != sizeof(want) - 1 || memcmp(buf, want, got))
		return -1;
	return (double)(kkb_now_ns() - t0);
}

static const char *const mp_bin[2] = { "guest/mp_server-plain", "guest/mp_server-kk" };

static int mp_startup(const char *const *extra, double *plain, double *kk, double *pair_ratio)
{
	double *t[2] = { calloc(MP_PAIRS, sizeof(double)), calloc(MP_PAIRS, sizeof(double)) };
	double *r = calloc(MP_PAIRS, sizeof(double));
	int ret = 0;

	for (int i = 0; i < MP_PAIRS && !ret; i++) {
		for (int j = 0; j < 2 && !ret; j++) {
			int w = (i + j) % 2;	/* alternate which goes first */
			struct mp s;

			if (mp_start(&s, mp_bin[w], extra, &t[w][i]))
				ret = -1;
			if (mp_stop(&s))
				ret = -1;
		}
		r[i] = t[1][i] / t[0][i];
	}
	if (!ret) {
		*plain = kkb_median(t[0], MP_PAIRS);
		*kk = kkb_median(t[1], MP_PAIRS);
		*pair_ratio = kkb_median(r, MP_PAIRS);
	}
	free(t[0]);
	free(t[1]);
	free(r);
	return ret;
}

/*
 * Where the exchanges run.  Unpinned (cpu -1), the scheduler decides on
 * which CPU each server's worker wakes, and that decides the time of an
 * exchange far more than anything in the servers: a worker woken on the
 * client's CPU answers in ~14 us, one woken on another CPU in 30-70 us (two
 * cross-CPU wake-ups per exchange, each an IPI and often a vCPU leaving
 * halt, which in a VM usually exit to the hypervisor).  Under load either
 * server's worker may end up across, for a whole run: a 3x ratio either way
 * that says nothing about the library (docs/results.md, "Under load").
 * Pinned, both servers get the same placement, and the ratio is the
 * servers' own cost again.
 */
struct mp_place {
	int srv_cpu;		/* the servers (their master, workers, threads); -1: anywhere */
	int cli_cpu;		/* the client (this thread) while it measures; -1: anywhere */
	int hog_cpu;		/* a busy loop at nice 0 during the exchanges; -1: none */
};

/* The calling thread (and what it spawns from now on) onto @cpu, or back to @all. */
static void mp_pin(int cpu, const cpu_set_t *all)
{
	cpu_set_t one;

	if (cpu < 0) {
		sched_setaffinity(0, sizeof(*all), all);
		return;
	}
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof(one), &one);
}

/* A child that spins on @cpu until killed: load that competes for that CPU. */
static pid_t mp_hog(int cpu, const cpu_set_t *all)
{
	pid_t pid;

	mp_pin(cpu, all);
	pid = fork();
	if (pid == 0)
		for (volatile unsigned long n = 0;; n++)
			;
	mp_pin(-1, all);
	return pid;
}

/*
 * Each server's median exchange over MP_REQS exchanges with each, one at a
 * time and interleaved (which goes first alternates): load from elsewhere on
 * the machine hits both alike, and the median ignores its bursts.
 */
static int mp_request_cost(const struct mp_place *at, double *plain, double *kk)
{
	double *t[2] = { calloc(MP_REQS, sizeof(double)), calloc(MP_REQS, sizeof(double)) };
	struct mp s[2] = { { -1, -1, 0 }, { -1, -1, 0 } };
	int fd[2] = { -1, -1 }, ret = -1;
	pid_t hog = -1;
	cpu_set_t all;
	double dummy;

	if (sched_getaffinity(0, sizeof(all), &all))
		goto out;
	mp_pin(at->srv_cpu, &all);
	for (int j = 0; j < 2; j++)
		if (mp_start(&s[j], mp_bin[j], NULL, &dummy) || (fd[j] = mp_connect(s[j].port)) < 0)
			goto out;
	mp_pin(at->cli_cpu, &all);
	if (at->hog_cpu >= 0 && (hog = mp_hog(at->hog_cpu, &all)) < 0)
		goto out;
	for (int j = 0; j < 2; j++)
		for (int i = 0; i < MP_REQS / 10; i++)	/* warm: pages, caches */
			if (mp_request(fd[j]) < 0)
				goto out;
	for (int i = 0; i < MP_REQS; i++)
		for (int j = 0; j < 2; j++) {
			int w = (i + j) % 2;

			if ((t[w][i] = mp_request(fd[w])) < 0)
				goto out;
		}
	*plain = kkb_median(t[0], MP_REQS);
	*kk = kkb_median(t[1], MP_REQS);
	ret = 0;
out:
	if (hog > 0) {
		kill(hog, SIGKILL);
		waitpid(hog, NULL, 0);
	}
	mp_pin(-1, &all);
	for (int j = 0; j < 2; j++) {
		if (fd[j] >= 0)
			close(fd[j]);
		if (mp_stop(&s[j]))
			ret = -1;
	}
	free(t[0]);
	free(t[1]);
	return ret;
}

/* The first two CPUs this process may run on; false if there is only one. */
static bool two_cpus(int cpu[2])
{
	cpu_set_t all;
	int n = 0;

	if (sched_getaffinity(0, sizeof(all), &all))
		return false;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &all))
			cpu[n++] = c;
	return n == 2;
}

/* One placement's exchanges: @name_plain_request_us, _kk_, _ratio. */
static int mp_request_case(struct kkb_ctx *ctx, const char *name, const struct mp_place *at)
{
	char key[96];
	double plain = 0, kk = 0;	/* set when it returns 0 */

	if (mp_request_cost(at, &plain, &kk)) {
		fprintf(stderr, "kk-bench: guest/mp_server-* did not answer\n");
		return 1;
	}
	snprintf(key, sizeof(key), "%s_plain_request_us", name);
	kkb_json_num(ctx, key, plain / 1e3);
	snprintf(key, sizeof(key), "%s_kk_request_us", name);
	kkb_json_num(ctx, key, kk / 1e3);
	snprintf(key, sizeof(key), "%s_request_ratio", name);
	kkb_json_num(ctx, key, kk / plain);
	return 0;
}

static int bench_mp_ready(struct kkb_ctx *ctx)
{
	double plain, kk, ratio;

	if (mp_startup(NULL, &plain, &kk, &ratio)) {
		fprintf(stderr, "kk-bench: guest/mp_server-* did not start or stop (make all builds "
			"them)\n");
		return 1;
	}
	kkb_json_num(ctx, "mp_server_plain_ready_us", plain / 1e3);
	kkb_json_num(ctx, "mp_server_kk_ready_us", kk / 1e3);
	kkb_json_num(ctx, "mp_server_ready_ratio", kk / plain);
	kkb_json_num(ctx, "mp_server_ready_pair_ratio", ratio);
	/* without the three endpoints (master, 2 workers): what the rest costs */
	if (!mp_startup(control_off, &plain, &kk, &ratio)) {
		kkb_json_num(ctx, "mp_server_control_off_ready_ratio", kk / plain);
		kkb_json_num(ctx, "mp_server_control_off_kk_ready_us", kk / 1e3);
	}
	return 0;
}

static int bench_mp_server(struct kkb_ctx *ctx)
{
	const struct mp_place anywhere = { -1, -1, -1 };
	int cpu[2], ret;

	if (bench_mp_ready(ctx))
		return 1;
	ret = mp_request_case(ctx, "mp_server", &anywhere);
	if (two_cpus(cpu)) {
		/* under load: the client, both servers and a busy loop on one CPU */
		const struct mp_place hog = { cpu[0], cpu[0], cpu[0] };
		/* the servers on one CPU, the client on another: the slow mode, for both */
		const struct mp_place cross = { cpu[0], cpu[1], -1 };

		ret |= mp_request_case(ctx, "mp_server_hog", &hog);
		ret |= mp_request_case(ctx, "mp_server_cross_cpu", &cross);
	}
	return ret;
}

/* ---- the benchmark ------------------------------------------------------------------ */

static int guest_bench(struct kkb_ctx *ctx)
{
	int ret = 0;

	ret |= bench_startup(ctx);
	ret |= bench_fork(ctx);
	ret |= bench_mp_server(ctx);
	ret |= bench_dlopen(ctx);
	ret |= bench_sharing(ctx, "machine_lazy", cow_lazy);
	ret |= bench_sharing(ctx, "machine_eager", cow_eager);
	ret |= bench_flip(ctx, "cold", cow_lazy, "cold_lazy");
	ret |= bench_flip(ctx, "cold", cow_eager, "cold_eager");
	ret |= bench_flip(ctx, "hot", cow_lazy, "hot_lazy");
	ret |= bench_flip(ctx, "hot", cow_eager, "hot_eager");
	kkb_note(ctx, "hello_*: median of %d alternating pairs, wall time of posix_spawn to exit; "
		 "hello_pair_ratio: median of the per-pair ratios; hello_empty_so_*: the same hello "
		 "world linked to an empty shared library instead (the floor)", HELLO_PAIRS);
	kkb_note(ctx, "fork_wait_*: fork()+waitpid() of a child that _exit(0)s at once, median "
		 "of %d in one process (bench/progs/forkwait.c), with kernelkit and its endpoint "
		 "running (kk; the child starts its own) vs the same source built without it "
		 "(plain); control_off: kk with KK_CONTROL=0; median of %d interleaved runs of each",
		 FORK_N, FORK_RUNS);
	kkb_note(ctx, "mp_server_*: test/progs/mp_server.c (master + 2 workers, sites off) linked "
		 "with kernelkit vs built -DMP_PLAIN; ready: posix_spawn to its ready line, median of "
		 "%d alternating pairs (control_off: KK_CONTROL=0 for both); request: one request/reply exchange on a loopback connection "
		 "held open, median of %d to each, interleaved; hog: client, both servers and a busy "
		 "loop (nice 0) pinned to one CPU; cross_cpu: servers pinned to one CPU, the client to "
		 "another (the slow mode unpinned runs fall into under load, docs/results.md)",
		 MP_PAIRS, MP_REQS);
	kkb_note(ctx, "dlopen_*: %d sites, one key each, vs the same object built "
		 "-DKK_NO_JUMP_LABEL; one fresh process per dlopen, median of %d", GUEST_SITES,
		 DLOPEN_PAIRS);
	kkb_note(ctx, "machine_*: two demo machines (16154 sites, a worker running all of them): "
		 "kB of the objects' r-x mappings; before = mean of both, after_flipped = the one "
		 "that took '+p', after_other = the other (whose PSS doubles because it is now the "
		 "only one mapping the file's pages); median of %d", MACHINE_RUNS);
	kkb_note(ctx, "cold_*/hot_*: the first 'module !kkbench +p' in a process whose other "
		 "thread runs other code / every site; median of %d", FLIP_RUNS);
	kkb_note(ctx, "IPIs: CAL line of /proc/interrupts, whole machine; *_on_cpu: the share of "
		 "the +p that the other thread spent on a CPU (runs below 0.5, where it mostly "
		 "did not run and so could not be sent IPIs, are retried)");
	return ret;
}
/* The start-up figures alone (issue 41): quicker than all of guest. */
static int startup_bench(struct kkb_ctx *ctx)
{
	int ret = bench_startup(ctx);

	ret |= bench_mp_ready(ctx);
	kkb_note(ctx, "the start-up cases of kk-bench guest (hello_*, mp_server_*ready*); "
		 "registration instructions a site: scripts/register-insns.sh");
	return ret;
}
KKB_REGISTER("startup", "start-up alone: hello world pairs, the nginx-shaped server's ready time",
	     startup_bench)

KKB_REGISTER("guest", "hosting cost: start-up, fork, an nginx-shaped server, dlopen time+memory, "
	     "shared text, first +p IPIs", guest_bench)
