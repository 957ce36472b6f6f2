// SPDX-License-Identifier: MIT
/*
 * A deterministic workload of every packed type, for trace_pipe_raw and
 * kkctl record's raw path (test/scripts/dynamic_debug_trace_raw.sh,
 * kkctl_record_raw.sh): record_raw THREADS N.  It prints "ready" once its
 * threads wait; each line "go" on stdin makes every thread write N rounds of
 * raw_*() events (one of each shape a round) and is answered "done"; "quit"
 * (or EOF) exits.  The shapes: ints of every width and sign, %hhd and %hd
 * (narrowed), %c, %p, %x, doubles, a long double, strings (one NULL; none
 * empty: babeltrace2 2.0 can print an empty string of the json path's ctf as an
 * earlier record's, docs/tracing.md), %m,
 * a '*' width and precision, %% and a conversion that is not recorded (%ls:
 * the record stops there, TR_INCOMPLETE).
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

enum { MAX_THREADS = 16 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int round_no, finished, nthreads;
static long per_thread;

void raw_ints(int t, long i)
{
	pr_debug("ints t=%d i=%ld u=%u ll=%lld x=%x zu=%zu hh=%hhd h=%hd c=%c\n", t, i,
		 (unsigned int)(3000000000u + (unsigned int)i), -1234567890123ll * (i + 1),
		 0xbeefu, (size_t)i * 7, 300 + (int)i, 70000 + (int)i, 'A' + (int)(i % 26));
}

void raw_floats(int t, long i)
{
	pr_debug("floats t=%d d=%f g=%g ld=%Lf\n", t, 1.5 * (double)i, -0.25, 2.5L + (long double)i);
}

void raw_strings(int t, long i)
{
	static const char *const names[] = { "alpha", "beta \"quoted\"", "-", NULL };

	errno = (int)(i % 3) ? ENOENT : EINTR;
	pr_debug("strings t=%d name=%s width=%*d prec=%.*s err=%m pct=100%% p=%p\n", t,
		 names[i % 4], 6, (int)i, 3, "abcdef", (void *)(uintptr_t)0x1000);
}

void raw_cut(int t, long i)
{
	pr_debug("cut t=%d i=%ld wide=%ls after=%d\n", t, i, L"wide", 5);
}

static void *writer(void *arg)
{
	int seen = 0, t = (int)(intptr_t)arg;

	for (;;) {
		pthread_mutex_lock(&lock);
		while (round_no == seen)
			pthread_cond_wait(&cond, &lock);
		seen = round_no;
		pthread_mutex_unlock(&lock);
		if (seen < 0)
			return NULL;
		for (long i = 0; i < per_thread; i++) {
			raw_ints(t, i);
			raw_floats(t, i);
			raw_strings(t, i);
			raw_cut(t, i);
		}
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
		fprintf(stderr, "usage: record_raw THREADS N\n");
		return 2;
	}
	for (int i = 0; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i)) {
			perror("record_raw");
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
