// SPDX-License-Identifier: MIT
/*
 * 16154 sites, 16154 keys, over the 8 benchmark modules (bench-mods/,
 * bench/gen-sites.sh: one key per site, as dynamic debug has), switched on
 * and off in one queued batch each while two threads run every site.
 *
 * Checked, each round:
 *  - a batch costs at most KK_STRESS_MAX_SYNCS syncs (3; the arch's
 *    protocol: 3 on x86_64, 2 on aarch64), however many sites it holds;
 *  - a reader that ran all 16154 sites entirely inside a settled phase
 *    (after static_key_apply_queued() returned and before the next batch
 *    began) saw every site take the branch of its key: all of them after
 *    the enable, none after the disable.  A wrong branch, a torn
 *    instruction (SIGILL) or a crash fails the test.
 *
 * Environment: KK_STRESS_ROUNDS (default 8) on/off rounds (about 60 s in the
 * arm64 guest under TCG, under a second on x86_64).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"

#define NMOD		8
#define NSITES		16154
#define MAX_SYNCS	3

struct mod {
	long (*run)(void);
	struct static_key_false *keys;
	size_t n;
};

static struct mod mods[NMOD];
/* Even: settled (phase/2 odd = on); odd: a batch is being applied. */
static atomic_uint phase;
static atomic_int stop;
static atomic_ulong wrong, settled_runs, runs;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop)) {
		unsigned p1 = atomic_load(&phase), p2;
		long hit = 0;

		for (int m = 0; m < NMOD; m++)
			hit += mods[m].run();
		p2 = atomic_load(&phase);
		atomic_fetch_add(&runs, 1);
		if (p1 != p2 || (p1 & 1))
			continue;
		atomic_fetch_add(&settled_runs, 1);
		if (hit != ((p1 / 2) & 1 ? NSITES : 0)) {
			atomic_fetch_add(&wrong, 1);
			fprintf(stderr, "settled phase %u: %ld of %d sites enabled\n", p1, hit, NSITES);
		}
	}
	return NULL;
}

static unsigned long long syncs(void)
{
	struct kk_jump_label_stats st;

	kk_jump_label_get_stats(&st);
	return st.syncs + st.stopped;
}

/* Switch every key on or off in one batch; returns its syncs, or -1. */
static long flip(int on)
{
	unsigned long long s0 = syncs();

	atomic_fetch_add(&phase, 1);			/* a batch begins */
	for (int m = 0; m < NMOD; m++)
		for (size_t i = 0; i < mods[m].n; i++)
			if ((on ? static_key_enable_queued : static_key_disable_queued)
			    (&mods[m].keys[i].key)) {
				fprintf(stderr, "queueing: %s\n", kk_jump_label_strerror());
				return -1;
			}
	if (static_key_apply_queued()) {
		fprintf(stderr, "apply: %s\n", kk_jump_label_strerror());
		return -1;
	}
	atomic_fetch_add(&phase, 1);			/* settled */
	return (long)(syncs() - s0);
}

/* Wait until a reader has run every site inside the settled phase. */
static void await_settled_run(void)
{
	unsigned long base = atomic_load(&settled_runs);

	while (atomic_load(&settled_runs) < base + 2 && !atomic_load(&wrong))
		sched_yield();
}

int main(void)
{
	const char *e = getenv("KK_STRESS_ROUNDS");
	int rounds = e ? atoi(e) : 8, fail = 0;
	size_t total = 0;
	pthread_t t[2];
	long max_on = 0, max_off = 0;

	for (int m = 0; m < NMOD; m++) {
		char rel[64];
		void *h;
		struct static_key_false *(*keys)(size_t *);

		snprintf(rel, sizeof(rel), "bench-mods/libjump_label_mod%d.so", m);
		if (!(h = dlopen(kkt_build_path(rel), RTLD_NOW))) {
			fprintf(stderr, "%s\n", dlerror());
			return 1;
		}
		mods[m].run = (long (*)(void))dlsym(h, "jump_label_mod_run");
		keys = (struct static_key_false *(*)(size_t *))dlsym(h, "jump_label_mod_keys");
		if (!mods[m].run || !keys)
			return 1;
		mods[m].keys = keys(&mods[m].n);
		total += mods[m].n;
	}
	if (total != NSITES) {
		fprintf(stderr, "%zu sites, want %d\n", total, NSITES);
		return 1;
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, reader, NULL);
	for (int r = 0; r < rounds && !fail; r++) {
		long on = flip(1), off;

		await_settled_run();
		off = flip(0);
		await_settled_run();
		if (on < 0 || off < 0 || on > MAX_SYNCS || off > MAX_SYNCS) {
			fprintf(stderr, "round %d: on in %ld syncs, off in %ld (at most %d)\n", r, on,
				off, MAX_SYNCS);
			fail = 1;
		}
		if (on > max_on)
			max_on = on;
		if (off > max_off)
			max_off = off;
		if (atomic_load(&wrong))
			fail = 1;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d sites: on in %ld syncs, off in %ld syncs (the most in %d rounds); method %s, "
	       "sync %s\n", NSITES, max_on, max_off, rounds, kk_jump_label_method(),
	       kk_jump_label_sync_method());
	printf("readers: %lu runs of every site, %lu inside a settled phase, %lu wrong\n",
	       atomic_load(&runs), atomic_load(&settled_runs), atomic_load(&wrong));
	return fail || atomic_load(&wrong) ? 1 : 0;
}
