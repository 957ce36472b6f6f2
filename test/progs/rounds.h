/* SPDX-License-Identifier: MIT */
/*
 * The harness of the record test programs (record_flood, record_raw):
 * PROG THREADS N starts THREADS writer threads and prints "ready" once they
 * wait; each line "go" on stdin makes every thread run work(thread, round, N)
 * and is answered "done" once all have; "name I NAME" names thread I (from 0)
 * NAME and is answered "named"; "quit" (or EOF) exits.
 */
#ifndef KK_TEST_ROUNDS_H
#define KK_TEST_ROUNDS_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

enum { ROUNDS_MAX_THREADS = 16 };

static pthread_mutex_t rounds_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rounds_cond = PTHREAD_COND_INITIALIZER;
static int rounds_no, rounds_finished, rounds_nthreads;
static long rounds_n;
static void (*rounds_work)(int thread, int round, long n);

static void *rounds_writer(void *arg)
{
	int seen = 0, t = (int)(intptr_t)arg;

	for (;;) {
		pthread_mutex_lock(&rounds_lock);
		while (rounds_no == seen)
			pthread_cond_wait(&rounds_cond, &rounds_lock);
		seen = rounds_no;
		pthread_mutex_unlock(&rounds_lock);
		if (seen < 0)
			return NULL;
		rounds_work(t, seen, rounds_n);
		pthread_mutex_lock(&rounds_lock);
		rounds_finished++;
		pthread_cond_broadcast(&rounds_cond);
		pthread_mutex_unlock(&rounds_lock);
	}
}

/* Start a round (or the end, @r < 0) and wait for every thread to finish it. */
static void rounds_run(int r)
{
	pthread_mutex_lock(&rounds_lock);
	rounds_finished = 0;
	rounds_no = r;
	pthread_cond_broadcast(&rounds_cond);
	while (r > 0 && rounds_finished < rounds_nthreads)
		pthread_cond_wait(&rounds_cond, &rounds_lock);
	pthread_mutex_unlock(&rounds_lock);
}

static int rounds_main(int argc, char **argv, const char *name,
		       void (*work)(int thread, int round, long n))
{
	pthread_t th[ROUNDS_MAX_THREADS];
	char line[64], tname[16];
	int rounds = 0, i;

	rounds_work = work;
	if (argc != 3 || sscanf(argv[1], "%d", &rounds_nthreads) != 1 || rounds_nthreads < 1 ||
	    rounds_nthreads > ROUNDS_MAX_THREADS || sscanf(argv[2], "%ld", &rounds_n) != 1) {
		fprintf(stderr, "usage: %s THREADS N\n", name);
		return 2;
	}
	for (int i = 0; i < rounds_nthreads; i++)
		if (pthread_create(&th[i], NULL, rounds_writer, (void *)(intptr_t)i)) {
			perror(name);
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin) && strcmp(line, "quit\n")) {
		if (sscanf(line, "name %d %15s", &i, tname) == 2 && i >= 0 && i < rounds_nthreads) {
			printf("%s\n", pthread_setname_np(th[i], tname) ? "not named" : "named");
			fflush(stdout);
			continue;
		}
		if (strcmp(line, "go\n"))
			continue;
		rounds_run(++rounds);
		printf("done\n");
		fflush(stdout);
	}
	rounds_run(-1);
	for (int i = 0; i < rounds_nthreads; i++)
		pthread_join(th[i], NULL);
	return 0;
}

#endif
