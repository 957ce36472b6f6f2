// SPDX-License-Identifier: MIT
/*
 * kk-bench jump_label: flip 16154 sites in 8 shared objects, one key per
 * site, while a worker thread runs every site in a loop.  Once one key at a
 * time, once queued with a single apply.  Then the cost of a disabled site in
 * instructions, from callgrind, next to an empty loop and a flag check.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/jump_label.h>
#include "bench.h"

#define NMODS 8

struct mod {
	void *h;
	long (*run)(void);
	struct static_key_false *keys;
	size_t nkeys;
};

static struct mod mods[NMODS];
static atomic_int stop_worker;
static atomic_long worker_rounds;

static void *worker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop_worker)) {
		for (int i = 0; i < NMODS; i++)
			mods[i].run();
		atomic_fetch_add(&worker_rounds, 1);
	}
	return NULL;
}

static int load_mods(size_t *total)
{
	*total = 0;
	for (int i = 0; i < NMODS; i++) {
		char path[4200];
		struct static_key_false *(*keys)(size_t *);

		snprintf(path, sizeof(path), "%s/bench-mods/libjump_label_mod%d.so", kkb_self_dir(), i);
		mods[i].h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
		if (!mods[i].h) {
			fprintf(stderr, "kk-bench: %s\n", dlerror());
			return -1;
		}
		mods[i].run = (long (*)(void))dlsym(mods[i].h, "jump_label_mod_run");
		keys = (struct static_key_false *(*)(size_t *))dlsym(mods[i].h, "jump_label_mod_keys");
		if (!mods[i].run || !keys)
			return -1;
		mods[i].keys = keys(&mods[i].nkeys);
		*total += mods[i].nkeys;
	}
	return 0;
}

static long hits_now(void)
{
	long h = 0;

	for (int i = 0; i < NMODS; i++)
		h += mods[i].run();
	return h;
}

struct pass {
	unsigned long long syncs;
	long long ipis;
	double ms;
};

/* Switch every key on or off, one call per key or queued with one apply. */
static int flip_all(bool on, bool queued, struct pass *p)
{
	struct kk_jump_label_stats a, b;
	long long i0 = kkb_ipi_count();
	uint64_t t0 = kkb_now_ns();
	int ret = 0;

	kk_jump_label_get_stats(&a);
	for (int m = 0; m < NMODS && !ret; m++) {
		for (size_t k = 0; k < mods[m].nkeys && !ret; k++) {
			struct static_key *key = &mods[m].keys[k].key;

			if (queued)
				ret = on ? static_key_enable_queued(key) : static_key_disable_queued(key);
			else
				ret = on ? static_key_enable(key) : static_key_disable(key);
		}
	}
	if (!ret && queued)
		ret = static_key_apply_queued();
	p->ms = (double)(kkb_now_ns() - t0) / 1e6;
	p->ipis = kkb_ipi_count() - i0;
	kk_jump_label_get_stats(&b);
	p->syncs = b.syncs - a.syncs;
	if (ret)
		fprintf(stderr, "kk-bench: %s\n", kk_jump_label_strerror());
	return ret;
}

/* ---- instructions per site, under callgrind ---- */

DEFINE_STATIC_KEY_FALSE(kkb_off_key);
static volatile int kkb_flag;

__attribute__((noinline)) long kkb_loop_empty(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		__asm__ volatile("" : "+r"(s));
	return s;
}

__attribute__((noinline)) long kkb_loop_site(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++) {
		if (static_branch_unlikely(&kkb_off_key))
			s += 3;
		__asm__ volatile("" : "+r"(s));
	}
	return s;
}

__attribute__((noinline)) long kkb_loop_flag(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++) {
		if (__builtin_expect(kkb_flag, 0))
			s += 3;
		__asm__ volatile("" : "+r"(s));
	}
	return s;
}

#define INSN_ITERS 1000000

static int insns_main(int argc, char **argv)
{
	long n = INSN_ITERS;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "empty"))
		return (int)(kkb_loop_empty(n) & 1);
	if (!strcmp(argv[1], "site"))
		return (int)(kkb_loop_site(n) & 1);
	if (!strcmp(argv[1], "flag"))
		return (int)(kkb_loop_flag(n) & 1);
	if (!strncmp(argv[1], "kkb_cxx_", 8)) {
		char path[4200];
		void *h;
		long (*fn)(long);

		snprintf(path, sizeof(path), "%s/bench-mods/libkkbcxx.so", kkb_self_dir());
		if (!(h = dlopen(path, RTLD_NOW | RTLD_LOCAL)) ||
		    !(fn = (long (*)(long))dlsym(h, argv[1])))
			return 2;
		return (int)(fn(n) & 1);
	}
	return 2;
}
KKB_REGISTER_INSNS("jump_label", insns_main)

static double insns_per_iter(const char *fn, const char *which)
{
	const char *args[] = { "jump_label", which, NULL };
	long long ir = kkb_callgrind_ir(fn, args);

	return ir < 0 ? -1 : (double)ir / INSN_ITERS;
}

static int run(struct kkb_ctx *ctx)
{
	struct pass un_on, un_off, b_on, b_off;
	pthread_t th;
	size_t total;
	long on_hits, off_hits;
	int ret = 0;

	if (load_mods(&total))
		return 1;
	atomic_store(&stop_worker, 0);
	pthread_create(&th, NULL, worker, NULL);
	while (atomic_load(&worker_rounds) < 2)
		;

	ret |= flip_all(true, false, &un_on);
	on_hits = hits_now();
	ret |= flip_all(false, false, &un_off);
	ret |= flip_all(true, true, &b_on);
	on_hits += hits_now();
	ret |= flip_all(false, true, &b_off);
	off_hits = hits_now();

	atomic_store(&stop_worker, 1);
	pthread_join(th, NULL);

	kkb_json_num(ctx, "sites", (double)total);
	kkb_json_num(ctx, "objects", NMODS);
	kkb_json_num(ctx, "unbatched_syncs", (double)un_on.syncs);
	kkb_json_num(ctx, "batched_syncs", (double)b_on.syncs);
	kkb_json_num(ctx, "unbatched_ipis", (double)un_on.ipis);
	kkb_json_num(ctx, "batched_ipis", (double)b_on.ipis);
	kkb_json_num(ctx, "unbatched_ms", un_on.ms);
	kkb_json_num(ctx, "batched_ms", b_on.ms);
	kkb_json_num(ctx, "unbatched_off_syncs", (double)un_off.syncs);
	kkb_json_num(ctx, "batched_off_syncs", (double)b_off.syncs);
	kkb_json_num(ctx, "unbatched_off_ms", un_off.ms);
	kkb_json_num(ctx, "batched_off_ms", b_off.ms);
	kkb_json_num(ctx, "batched_speedup", un_on.ms / b_on.ms);

	double e = insns_per_iter("kkb_loop_empty", "empty");
	double s = insns_per_iter("kkb_loop_site", "site");
	double f = insns_per_iter("kkb_loop_flag", "flag");

	/* The same loop in C++, a class template's member reached through an
	 * inline function, in a -fPIC shared object (bench/cxx/kkb_cxx.cc). */
	double ck = insns_per_iter("kkb_cxx_template_key", "kkb_cxx_template_key");
	double cd = insns_per_iter("kkb_cxx_template_debug", "kkb_cxx_template_debug");

	if (ck < 0 || cd < 0) {
		kkb_json_null(ctx, "cxx_template_site_insns");
		kkb_json_null(ctx, "cxx_template_pr_debug_insns");
	} else {
		kkb_json_num(ctx, "cxx_template_site_insns", ck);
		kkb_json_num(ctx, "cxx_template_pr_debug_insns", cd);
	}
	if (e < 0 || s < 0 || f < 0) {
		kkb_json_null(ctx, "disabled_site_insns");
		kkb_json_null(ctx, "flag_check_insns");
		kkb_json_null(ctx, "empty_loop_insns");
		kkb_note(ctx, "valgrind not available: no instruction counts");
	} else {
		kkb_json_num(ctx, "disabled_site_insns", s);
		kkb_json_num(ctx, "flag_check_insns", f);
		kkb_json_num(ctx, "empty_loop_insns", e);
	}
	kkb_note(ctx, "the *_syncs/_ipis/_ms keys are for switching every site on; *_off_* for off");
	kkb_note(ctx, "insns are per loop iteration: empty loop, + a disabled site, + a volatile flag test");
	kkb_note(ctx, "cxx_template_*: the site loop as a C++ class template member in a -fPIC "
		 "shared object (a static key, a pr_debug), the same run");
	kkb_note(ctx, "write method: %s", kk_jump_label_method());
	if (on_hits != 2 * (long)total || off_hits != 0) {
		fprintf(stderr, "kk-bench: sites disagree with their keys (on %ld, off %ld)\n",
			on_hits, off_hits);
		ret = 1;
	}
	for (int i = 0; i < NMODS; i++)
		dlclose(mods[i].h);
	return ret;
}
KKB_REGISTER("jump_label", "16154 sites in 8 objects: per-key vs queued flips; disabled-site cost", run)
