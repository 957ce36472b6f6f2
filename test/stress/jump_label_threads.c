// SPDX-License-Identifier: MIT
/*
 * Issue 22: every thread shape at once, and many of them.  2000 threads run
 * the sites of one key: a third block nothing, a third block SIGTRAP, a
 * third block every signal (a sigwait() daemon's workers); one more thread
 * keeps creating and joining short-lived threads that each run the sites
 * (threads created and exiting during every batch).  main flips the key 40
 * times.  Every flip must succeed, the process must not die (a trap in a
 * thread that blocks SIGTRAP kills it), and after each flip main runs the
 * sites and sees the key's value.
 *
 *   jump_label_threads [THREADS [FLIPS]]     defaults: 2000 (KK_STRESS_THREADS), 40
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"

DEFINE_STATIC_KEY_FALSE(tkey);

static atomic_int stop, started;
static atomic_ulong runs;

static __attribute__((__noinline__)) int sites(void)
{
	return static_branch_unlikely(&tkey) + static_branch_unlikely(&tkey);
}

static void *runner(void *arg)
{
	(void)arg;
	atomic_fetch_add(&started, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 64; i++)
			atomic_fetch_add_explicit(&runs, (unsigned long)sites(), memory_order_relaxed);
		sched_yield();
	}
	return NULL;
}

static void *brief(void *arg)
{
	return (void *)(long)sites() + (long)arg;
}

static void *churn(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pthread_t t;

		if (!pthread_create(&t, NULL, brief, NULL))
			pthread_join(t, NULL);
	}
	return NULL;
}

/* Start a runner with @mask blocked (inherited: it never runs unblocked). */
static int start(pthread_t *t, const pthread_attr_t *a, const sigset_t *mask, void *(*fn)(void *))
{
	sigset_t old;
	int ret;

	pthread_sigmask(SIG_BLOCK, mask, &old);
	ret = pthread_create(t, a, fn, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return ret;
}

int main(int argc, char **argv)
{
	const char *env = getenv("KK_STRESS_THREADS");
	int n = argc > 1 ? atoi(argv[1]) : env ? atoi(env) : 2000, flips = argc > 2 ? atoi(argv[2]) : 40, bad = 0;
	pthread_t *t = calloc((size_t)n + 1, sizeof(*t));
	sigset_t none, trap, all;
	pthread_attr_t a;

	if (!t || n < 3)
		return 2;
	sigemptyset(&none);
	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	sigfillset(&all);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (int i = 0; i < n; i++) {
		const sigset_t *m = i % 3 == 0 ? &none : i % 3 == 1 ? &trap : &all;

		if (start(&t[i], &a, m, runner)) {
			fprintf(stderr, "jump_label_threads: thread %d of %d not created\n", i, n);
			return 2;
		}
	}
	if (start(&t[n], NULL, &none, churn))
		return 2;
	while (atomic_load(&started) < n)
		sched_yield();
	for (int f = 0; f < flips; f++)
		bad += kkt_flip_checked(&tkey.key, f, sites, 2);
	atomic_store(&stop, 1);
	for (int i = 0; i <= n; i++)
		pthread_join(t[i], NULL);
	printf("jump_label_threads: %d threads (a third blocking SIGTRAP, a third every signal) "
	       "and a churning creator, %d flips by %s, %d bad\n", n, flips,
	       kk_jump_label_sync_method(), bad);
	free(t);
	return bad ? 1 : 0;
}
