// SPDX-License-Identifier: MIT
/*
 * Issue 22: workers that block every signal as they start, while the key
 * flips.  main's mask blocks nothing; two creators keep starting short
 * workers, one way each:
 *  - the worker blocks every signal itself, first thing (a pool that grows
 *    under load);
 *  - the creator blocks every signal around pthread_create() and restores
 *    its own mask (the worker inherits the full mask).
 * Each worker runs the sites and exits.  At any moment there may be no
 * such worker at all, so the plan may choose the int3 protocol, and a
 * worker may block SIGTRAP after the plan read the masks: it must not die
 * of a trap (the old library was killed by SIGTRAP within a few dozen
 * flips), and every flip must succeed and be seen by main.  main flips
 * until both counts are reached.
 *
 *   jump_label_blocking_workers [FLIPS [WORKERS]]      defaults: 400, 4000
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"

DEFINE_STATIC_KEY_FALSE(wkey);

static atomic_int stop;
static atomic_ulong workers, runs;

static __attribute__((__noinline__)) int sites(void)
{
	return static_branch_unlikely(&wkey) + static_branch_unlikely(&wkey);
}

static void work(void)
{
	for (int i = 0; i < 256; i++)
		atomic_fetch_add_explicit(&runs, (unsigned long)sites(), memory_order_relaxed);
	atomic_fetch_add_explicit(&workers, 1, memory_order_relaxed);
}

static void *blocks_first(void *arg)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	work();
	return arg;
}

static void *inherits(void *arg)
{
	work();
	return arg;
}

static void *create_blockers(void *arg)
{
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t;

		if (!pthread_create(&t, arg, blocks_first, NULL))
			pthread_join(t, NULL);
	}
	return NULL;
}

static void *create_blocked(void *arg)
{
	sigset_t all, old;

	sigfillset(&all);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t;
		int ret;

		pthread_sigmask(SIG_SETMASK, &all, &old);
		ret = pthread_create(&t, arg, inherits, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!ret)
			pthread_join(t, NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int flips = argc > 1 ? atoi(argv[1]) : 400, bad = 0, f;
	unsigned long want = argc > 2 ? strtoul(argv[2], NULL, 0) : 4000;
	pthread_t c1, c2;
	pthread_attr_t a;

	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	if (pthread_create(&c1, NULL, create_blockers, &a) ||
	    pthread_create(&c2, NULL, create_blocked, &a))
		return 2;
	while (atomic_load(&workers) < 2)
		sched_yield();
	for (f = 0; f < flips || atomic_load(&workers) < want || (f & 1); f++)
		bad += kkt_flip_checked(&wkey.key, f, sites, 2);
	atomic_store(&stop, 1);
	pthread_join(c1, NULL);
	pthread_join(c2, NULL);
	printf("jump_label_blocking_workers: %d flips while %lu workers started blocking every "
	       "signal, last by %s, %d bad\n", f, (unsigned long)atomic_load(&workers),
	       kk_jump_label_sync_method(), bad);
	return bad ? 1 : 0;
}
