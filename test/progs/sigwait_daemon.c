// SPDX-License-Identifier: MIT
/*
 * The classic POSIX daemon: main blocks every signal before it starts its
 * workers (so every worker inherits a full mask), and handles SIGTERM and
 * SIGHUP itself with sigwait().  No thread of the program can take a signal,
 * SIGTRAP included.  The workers run pr_debug sites in a loop.
 * Driven by test/scripts/sigwait_daemon.sh through kkctl.
 *
 *   sigwait_daemon [WORKERS]     default 4
 *
 * Prints "ready" once every worker runs; on SIGHUP prints "passes N" (the
 * workers' total passes so far); on SIGTERM stops the workers and exits 0.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelkit/dynamic_debug.h>

#define MAX_WORKERS 16

static atomic_int stop, running;
static atomic_ulong passes;

/* Three sites in one function, "func hot" in a query. */
static __attribute__((__noinline__)) void hot(int w, unsigned long i)
{
	pr_debug("worker %d pass %lu\n", w, i);
	pr_debug("worker %d half %lu\n", w, i / 2);
	if (i % 3 == 0)
		pr_debug("worker %d third\n", w);
}

static void *worker(void *arg)
{
	int w = (int)(long)arg;
	unsigned long i = 0;

	atomic_fetch_add(&running, 1);
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		hot(w, i++);
		atomic_fetch_add_explicit(&passes, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, sig = 0;
	pthread_t t[MAX_WORKERS];
	sigset_t all, wait;

	if (n < 1 || n > MAX_WORKERS)
		n = 4;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)(long)i)) {
			perror("pthread_create");
			return 2;
		}
	while (atomic_load(&running) < n)
		sched_yield();
	printf("ready\n");
	fflush(stdout);
	sigemptyset(&wait);
	sigaddset(&wait, SIGTERM);
	sigaddset(&wait, SIGHUP);
	while (sig != SIGTERM) {
		if (sigwait(&wait, &sig))
			return 2;
		if (sig == SIGHUP) {
			printf("passes %lu\n", atomic_load(&passes));
			fflush(stdout);
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("sigwait_daemon: %lu passes: ok\n", atomic_load(&passes));
	return 0;
}
