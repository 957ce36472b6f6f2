// SPDX-License-Identifier: MIT
/*
 * kk-bench text_sync: what it costs to make the other threads see new code.
 *
 *  - one sync round with 8 spinning threads: membarrier SYNC_CORE vs the
 *    signal fallback (park signal + cpuid in every thread), and one
 *    stop_machine with an empty function;
 *  - a batched flip of the 16154 bench sites (bench-mods/libjump_label_mod*.so) with
 *    KK_TEXT_SYNC forced to membarrier, signal, stop-machine and swap: ms and sync
 *    rounds per flip (the target: <= 3 rounds with the signal fallback);
 *  - the same with KK_TEXT_SYNC unset (auto), and with spinners that block
 *    every signal (the sigwait() daemon's shape, written by page swaps);
 *  - the same with a tracer attached (a child that PTRACE_SEIZEs every
 *    thread and passes every signal on): the traced path next to the normal.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "bench.h"
#include "text_sync.h"

#define NSPIN		8
#define NMODS		8
#define ROUNDS		200

static atomic_int stop_spin;
static pthread_t spinners[NSPIN];
static atomic_ulong spun;

static void *spin(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop_spin, memory_order_relaxed))
		atomic_fetch_add_explicit(&spun, 1, memory_order_relaxed);
	return NULL;
}

/* An idle thread: asleep in a blocking read (the signal interrupts it). */
static int idle_pipe[2];

static void *idle(void *arg)
{
	char c;

	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0)
		;
	return NULL;
}

static void start_spinners(void *(*fn)(void *))
{
	atomic_store(&stop_spin, 0);
	for (int i = 0; i < NSPIN; i++)
		pthread_create(&spinners[i], NULL, fn, NULL);
}

/* The sigwait() daemon's shape: workers that inherit a mask blocking every
 * signal, so no trap and no park signal can reach them. */
static void start_deaf_spinners(void)
{
	sigset_t all, old;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	start_spinners(spin);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void stop_spinners(void)
{
	atomic_store(&stop_spin, 1);
	for (int i = 0; i < NSPIN; i++)
		if (write(idle_pipe[1], "x", 1) != 1)
			break;
	for (int i = 0; i < NSPIN; i++)
		pthread_join(spinners[i], NULL);
}

static unsigned long long rounds_of(const struct kk_sync_stats *s)
{
	return s->membarrier_rounds + s->signal_rounds + s->stop_machines;
}

/* Plan with KK_TEXT_SYNC=@how: the method, or NULL (reason on stderr).
 * @traps as for a batch of x86 sites; a bare round needs none. */
static const char *plan(const char *how, bool traps)
{
	char err[256];
	int ret;

	setenv("KK_TEXT_SYNC", how, 1);
	ret = kk_sync_plan(traps, NULL, NULL, err, sizeof(err));
	kk_sync_done();		/* no batch follows: a round writes nothing */
	if (ret < 0) {
		fprintf(stderr, "kk-bench: KK_TEXT_SYNC=%s: %s\n", how, err);
		return NULL;
	}
	return kk_sync_method();
}

/* ms per kk_sync_round() with KK_TEXT_SYNC=@how, or -1. */
static double round_ms(const char *how)
{
	const char *m = plan(how, false);
	uint64_t t0;

	if (!m || strcmp(m, how))
		return -1;
	t0 = kkb_now_ns();
	for (int i = 0; i < ROUNDS; i++)
		if (kk_sync_round())
			return -1;
	return (double)(kkb_now_ns() - t0) / 1e6 / ROUNDS;
}

static int nothing(void *arg)
{
	(void)arg;
	return 0;
}

static double stop_ms(void)
{
	char err[256];
	uint64_t t0;

	if (!plan("stop-machine", false))
		return -1;
	t0 = kkb_now_ns();
	for (int i = 0; i < ROUNDS; i++)
		if (kk_stop_machine(nothing, NULL, err, sizeof(err))) {
			fprintf(stderr, "kk-bench: stop_machine: %s\n", err);
			return -1;
		}
	return (double)(kkb_now_ns() - t0) / 1e6 / ROUNDS;
}

/* ---- the 16154 bench sites ------------------------------------------------------------- */

struct mod {
	void *h;
	struct static_key_false *keys;
	size_t nkeys;
};

static struct mod mods[NMODS];

static int load_mods(void)
{
	for (int i = 0; i < NMODS; i++) {
		char path[4200];
		struct static_key_false *(*keys)(size_t *);

		snprintf(path, sizeof(path), "%s/bench-mods/libjump_label_mod%d.so", kkb_self_dir(), i);
		mods[i].h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!mods[i].h) {
			fprintf(stderr, "kk-bench: %s\n", dlerror());
			return -1;
		}
		keys = (struct static_key_false *(*)(size_t *))dlsym(mods[i].h, "jump_label_mod_keys");
		if (!keys)
			return -1;
		mods[i].keys = keys(&mods[i].nkeys);
	}
	return 0;
}

struct flip {
	double ms;
	double rounds;		/* text_sync rounds (membarrier, signal, stops) per flip */
	double old_syncs;	/* the patcher's sync steps per flip */
};

/* Flip every key on then off, queued with one apply each, KK_TEXT_SYNC=@how. */
static int flip_all(const char *how, struct flip *f)
{
	struct kk_sync_stats a, b;
	struct kk_jump_label_stats ja, jb;
	uint64_t t0;
	int ret = 0;

	setenv("KK_TEXT_SYNC", how, 1);
	kk_sync_get_stats(&a);
	kk_jump_label_get_stats(&ja);
	t0 = kkb_now_ns();
	for (int on = 1; on >= 0 && !ret; on--) {
		for (int m = 0; m < NMODS && !ret; m++)
			for (size_t k = 0; k < mods[m].nkeys && !ret; k++) {
				struct static_key *key = &mods[m].keys[k].key;

				ret = on ? static_key_enable_queued(key) :
					static_key_disable_queued(key);
			}
		if (!ret)
			ret = static_key_apply_queued();
	}
	f->ms = (double)(kkb_now_ns() - t0) / 1e6 / 2;
	kk_sync_get_stats(&b);
	kk_jump_label_get_stats(&jb);
	f->rounds = (double)(rounds_of(&b) - rounds_of(&a)) / 2;
	f->old_syncs = (double)(jb.syncs - ja.syncs) / 2;
	if (ret)
		fprintf(stderr, "kk-bench: KK_TEXT_SYNC=%s: %s\n", how, kk_jump_label_strerror());
	return ret;
}

/* ---- a tracer that passes everything on ------------------------------------------------ */

static pid_t start_tracer(void)
{
	pid_t self = getpid(), t;
	int p[2];
	char c = 0;

	if (pipe(p))
		return -1;
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
	t = fork();
	if (t < 0)
		return -1;
	if (t == 0) {
		char path[64];
		struct dirent *de;
		DIR *d;
		int st;

		snprintf(path, sizeof(path), "/proc/%d/task", (int)self);
		d = opendir(path);
		c = d != NULL;
		while (d && (de = readdir(d)))
			if (de->d_name[0] != '.' &&
			    ptrace(PTRACE_SEIZE, atoi(de->d_name), 0, PTRACE_O_TRACECLONE))
				c = 0;
		if (write(p[1], &c, 1) != 1 || !c)
			_exit(1);
		for (;;) {
			pid_t w = waitpid(-1, &st, __WALL);

			if (w < 0)
				_exit(0);
			if (WIFSTOPPED(st))
				ptrace(PTRACE_CONT, w, 0, (st >> 16) ? 0 : WSTOPSIG(st));
		}
	}
	close(p[1]);
	if (read(p[0], &c, 1) != 1)
		c = 0;
	close(p[0]);
	if (!c) {
		waitpid(t, NULL, 0);
		return -1;
	}
	return t;
}

static void stop_tracer(pid_t t)
{
	kill(t, SIGKILL);
	waitpid(t, NULL, 0);
}

/* ---- the bench --------------------------------------------------------------------------- */

static void put(struct kkb_ctx *ctx, const char *key, double v)
{
	if (v < 0)
		kkb_json_null(ctx, key);
	else
		kkb_json_num(ctx, key, v);
}

static const char *const hows[] = { "membarrier", "signal", "stop-machine", "swap" };

static void flips(struct kkb_ctx *ctx, const char *prefix)
{
	for (size_t i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
		struct flip f;
		char key[64];
		int bad = flip_all(hows[i], &f);

		snprintf(key, sizeof(key), "%sflip_ms_%s", prefix, hows[i]);
		put(ctx, key, bad ? -1 : f.ms);
		snprintf(key, sizeof(key), "%sflip_rounds_%s", prefix, hows[i]);
		put(ctx, key, bad ? -1 : f.rounds);
		snprintf(key, sizeof(key), "%sflip_patch_syncs_%s", prefix, hows[i]);
		put(ctx, key, bad ? -1 : f.old_syncs);
	}
}

/*
 * What the trap window costs a program that changes its mask often (a
 * daemon that blocks every signal around a critical section): ns per
 * pthread_sigmask() pair (block every signal, restore), through
 * kernelkit's, and by the raw system calls, interleaved, medians.
 */
#define MASK_PAIRS	20000
#define MASK_RUNS	9

/* @some: a set with SIGTRAP but not every signal (SIGTRAP and SIGUSR1): the
 * calls that block SIGTRAP so take two system calls (text_sync_sigmask.c). */
static double mask_pair_ns(bool raw, bool some)
{
	sigset_t all, old;
	uint64_t t0;

	sigfillset(&all);
	if (some) {
		sigemptyset(&all);
		sigaddset(&all, SIGTRAP);
		sigaddset(&all, SIGUSR1);
	}
	t0 = kkb_now_ns();
	for (int i = 0; i < MASK_PAIRS; i++) {
		if (raw) {
			syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, (size_t)8);
			syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, (size_t)8);
		} else {
			pthread_sigmask(SIG_SETMASK, &all, &old);
			pthread_sigmask(SIG_SETMASK, &old, NULL);
		}
	}
	return (double)(kkb_now_ns() - t0) / MASK_PAIRS;
}

static void mask_cost(struct kkb_ctx *ctx)
{
	double kk[MASK_RUNS], raw[MASK_RUNS], r[MASK_RUNS];
	double tkk[MASK_RUNS], traw[MASK_RUNS], tr[MASK_RUNS];

	for (int i = 0; i < MASK_RUNS; i++) {
		raw[i] = mask_pair_ns(true, false);
		kk[i] = mask_pair_ns(false, false);
		r[i] = kk[i] / raw[i];
		traw[i] = mask_pair_ns(true, true);
		tkk[i] = mask_pair_ns(false, true);
		tr[i] = tkk[i] / traw[i];
	}
	kkb_json_num(ctx, "sigmask_pair_ns", kkb_median(kk, MASK_RUNS));
	kkb_json_num(ctx, "sigmask_pair_ns_raw", kkb_median(raw, MASK_RUNS));
	kkb_json_num(ctx, "sigmask_vs_raw", kkb_median(r, MASK_RUNS));
	kkb_json_num(ctx, "sigmask_trap_pair_ns", kkb_median(tkk, MASK_RUNS));
	kkb_json_num(ctx, "sigmask_trap_pair_ns_raw", kkb_median(traw, MASK_RUNS));
	kkb_json_num(ctx, "sigmask_trap_vs_raw", kkb_median(tr, MASK_RUNS));
}

static int run(struct kkb_ctx *ctx)
{
	double mb, sig, stop;
	pid_t tracer;

	kk_sync_arm();
	mask_cost(ctx);
	if (pipe(idle_pipe))
		return 1;
	start_spinners(idle);
	put(ctx, "idle_round_ms_membarrier", round_ms("membarrier"));
	put(ctx, "idle_round_ms_signal", round_ms("signal"));
	put(ctx, "idle_stop_machine_ms", stop_ms());
	stop_spinners();
	start_spinners(spin);
	mb = round_ms("membarrier");
	sig = round_ms("signal");
	stop = stop_ms();
	put(ctx, "round_ms_membarrier", mb);
	put(ctx, "round_ms_signal", sig);
	put(ctx, "stop_machine_ms", stop);
	if (mb > 0 && sig > 0)
		kkb_json_num(ctx, "signal_vs_membarrier", sig / mb);

	if (load_mods() == 0) {
		struct flip f;

		flips(ctx, "");
		/* auto, as a program gets it: the default path, then the same
		 * with spinners that block every signal (the page swap) */
		if (!flip_all("auto", &f)) {
			kkb_json_num(ctx, "flip_ms_auto", f.ms);
			kkb_json_num(ctx, "flip_rounds_auto", f.rounds);
			kkb_json_str(ctx, "flip_method_auto", kk_sync_method());
		}
		stop_spinners();
		start_deaf_spinners();
		if (!flip_all("auto", &f)) {
			kkb_json_num(ctx, "sigwait_flip_ms_auto", f.ms);
			kkb_json_num(ctx, "sigwait_flip_rounds_auto", f.rounds);
			kkb_json_str(ctx, "sigwait_flip_method_auto", kk_sync_method());
		}
		stop_spinners();
		start_spinners(spin);
	} else {
		kkb_note(ctx, "bench-mods missing: no flip figures");
	}

	tracer = start_tracer();
	if (tracer > 0) {
		double tsig = round_ms("signal"), tstop = stop_ms();

		put(ctx, "traced_round_ms_signal", tsig);
		put(ctx, "traced_stop_machine_ms", tstop);
		setenv("KK_TEXT_SYNC", "auto", 1);
		kkb_json_str(ctx, "traced_auto_method", plan("auto", true) ? kk_sync_method() : "refused");
		if (mods[0].h)
			flips(ctx, "traced_");
		stop_tracer(tracer);
	} else {
		kkb_note(ctx, "ptrace not permitted: no traced figures");
	}
	stop_spinners();
	setenv("KK_TEXT_SYNC", "auto", 1);

	kkb_note(ctx, "round_*: ms per kk_sync_round() with %d spinning threads; stop_machine_ms: "
		 "one kk_stop_machine() with an empty function; idle_*: the same with %d threads "
		 "asleep in read()", NSPIN, NSPIN);
	kkb_note(ctx, "a signal round waits until every thread has run: with more runnable "
		 "threads than CPUs that is a scheduling period, which membarrier does not wait for");
	kkb_note(ctx, "flip_*: one batched flip of every bench site (mean of on and off) with "
		 "KK_TEXT_SYNC forced; *_rounds: text_sync rounds per flip (target <= 3 for signal)");
	kkb_note(ctx, "flip_patch_syncs_*: the patcher's sync steps per flip (3 for the int3 "
		 "protocol; a stop_machine batch needs none, its stop is the round)");
	kkb_note(ctx, "flip_*_auto: no KK_TEXT_SYNC, as a program runs; sigwait_flip_*_auto: the "
		 "same with %d spinners that block every signal (a sigwait() daemon's workers)", NSPIN);
	kkb_note(ctx, "traced_*: the same while a tracer (PTRACE_SEIZE, passes every signal) "
		 "is attached");
	kkb_note(ctx, "sigmask_pair_ns: one pthread_sigmask() pair (block every signal, restore) "
		 "through kernelkit's (the trap window's check); _raw: the two rt_sigprocmask "
		 "system calls; medians of %d interleaved runs of %d pairs; sigmask_trap_*: the same "
		 "with SIGTRAP and SIGUSR1 only (a call that blocks SIGTRAP but not every signal "
		 "makes two system calls)", MASK_RUNS, MASK_PAIRS);
	for (int i = 0; i < NMODS; i++)
		if (mods[i].h)
			dlclose(mods[i].h);
	close(idle_pipe[0]);
	close(idle_pipe[1]);
	return 0;
}
KKB_REGISTER("text_sync", "sync rounds: membarrier vs signal fallback vs stop_machine, "
	     "16154-site flips, traced and not", run)
