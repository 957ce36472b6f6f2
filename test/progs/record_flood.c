// SPDX-License-Identifier: MIT
/*
 * Writers flat out, for kkctl record's flood test
 * (test/scripts/kkctl_record_flood.sh): record_flood THREADS N.  It prints
 * "ready" once its threads wait; each line "go" on stdin makes every thread
 * run flood_tick() N times as fast as it can (no pause between events), and
 * is answered "done" once all have; "quit" (or EOF) exits.  Each event says
 * which round and index it is, so that the script can tell a record read
 * twice, or one missing, from the counts.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

enum { MAX_THREADS = 16 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int round_no, finished, nthreads;
static long per_thread;

void flood_tick(int round, long i)
{
	pr_debug("flood round=%d i=%ld pad=%s\n", round, i, "0123456789abcdef0123456789abcdef");
}

static void *writer(void *arg)
{
	int seen = 0;

	(void)arg;
	for (;;) {
		pthread_mutex_lock(&lock);
		while (round_no == seen)
			pthread_cond_wait(&cond, &lock);
		seen = round_no;
		pthread_mutex_unlock(&lock);
		if (seen < 0)
			return NULL;
		for (long i = 0; i < per_thread; i++)
			flood_tick(seen, i);
		pthread_mutex_lock(&lock);
		finished++;
		pthread_cond_broadcast(&cond);
		pthread_mutex_unlock(&lock);
	}
}

/* Start a round (or the end, @r < 0) and wait for every thread to finish it. */
static void run_round(int r)
{
	pthread_mutex_lock(&lock);
	finished = 0;
	round_no = r;
	pthread_cond_broadcast(&cond);
	while (r > 0 && finished < nthreads)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

int main(int argc, char **argv)
{
	pthread_t th[MAX_THREADS];
	char line[64];
	int rounds = 0;

	if (argc != 3 || sscanf(argv[1], "%d", &nthreads) != 1 || nthreads < 1 ||
	    nthreads > MAX_THREADS || sscanf(argv[2], "%ld", &per_thread) != 1) {
		fprintf(stderr, "usage: record_flood THREADS N\n");
		return 2;
	}
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, writer, NULL)) {
			perror("record_flood");
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "quit\n")) {
		if (strcmp(line, "go\n"))
			continue;
		run_round(++rounds);
		printf("done\n");
		fflush(stdout);
	}
	run_round(-1);
	for (int i = 0; i < nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
