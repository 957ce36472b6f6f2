/* SPDX-License-Identifier: MIT */
/*
 * Shared by the kk-bench peers programs (bench/peers/peer-*.c): the same
 * workloads around each tracer's site, so that bench/peers.c can compare them.
 *
 * A program defines, before including this file:
 *   PEER_HOT(i)      the hot site (one message with an int and a string)
 *   PEER_SITE(c, n)  distinct site number n of chunk c (PEER_NSITES of them, in
 *                    chunks: peer_rep.h), argument i
 *   peer_on(mode)    switch the hot site on from inside (0 ok, -1: not here)
 *   peer_fired       set by a site's sink when it sees an event (or unused)
 *
 * Modes (argv[1]):
 *   loop N / empty N   the hot loop with / without the site, disabled (callgrind)
 *   cold R             R rounds over the first PEER_NCOLD sites, disabled: ns per site
 *   on N MODE          switch on (peer_on, or wait for the tracer from outside:
 *                      a line on stdin), then ns per event of the hot site
 *   first              print "ready", run every distinct site until peer_fired,
 *                      print "fired", wait for the end of stdin
 *   rate N R           as "on" from outside, then N events of the hot site in
 *                      each of 2 threads, R events per second in all (paced
 *                      every 1000), print "done"
 *   cost N R           as "rate", paced by sleeping, then print "done CPU" (the
 *                      2 writer threads' CPU time in ns) and wait for a line
 */
#ifndef KK_PEER_H
#define KK_PEER_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>

#include "peer_rep.h"

static volatile long peer_out;
static volatile int peer_fired;

static unsigned long long peer_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* C linkage: callgrind --toggle-collect finds them by these names, C or C++. */
#ifdef __cplusplus
#define PEER_C extern "C"
#else
#define PEER_C
#endif

/* Both loops store the counter; the difference per iteration is the site. */
PEER_C __attribute__((noinline)) long peer_loop_empty(long n)
{
	for (long i = 0; i < n; i++)
		peer_out = i;
	return 0;
}

PEER_C __attribute__((noinline)) long peer_loop_site(long n)
{
	for (long i = 0; i < n; i++) {
		PEER_HOT((int)i);
		peer_out = i;
	}
	return 0;
}

/* The distinct sites: one function per chunk of 1000 (peer_rep.h). */
#define PEER_FN(c) __attribute__((noinline)) static void peer_sites_##c(int i) { PEER_C##c }
PEER_CHUNKS(PEER_FN)
#undef PEER_FN

/* The first PEER_NCOLD sites: the ones "cold" times. */
static void peer_cold_sites(int i)
{
	peer_sites_00(i); peer_sites_01(i); peer_sites_02(i); peer_sites_03(i); peer_sites_04(i);
	peer_sites_05(i); peer_sites_06(i); peer_sites_07(i); peer_sites_08(i); peer_sites_09(i);
}

static void peer_all_sites(int i)
{
	peer_cold_sites(i);
	peer_sites_10(i); peer_sites_11(i); peer_sites_12(i); peer_sites_13(i);
	peer_sites_14(i); peer_sites_15(i); peer_sites_16(i);
}

/* "rate": one thread's share, paced in bursts of 1000 events ("cost": by sleeping, and
 * the thread's CPU time taken). */
struct peer_rate { long n; double per_s; unsigned long long t0; int sleep; unsigned long long cpu; };

static void peer_until(const struct peer_rate *r, unsigned long long t)
{
	struct timespec ts;

	if (!r->sleep) {
		while (peer_now_ns() - r->t0 < t)
			;
		return;
	}
	t += r->t0;
	ts.tv_sec = (time_t)(t / 1000000000ull);
	ts.tv_nsec = (long)(t % 1000000000ull);
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
		;
}

static void *peer_rate_run(void *arg)
{
	struct peer_rate *r = (struct peer_rate *)arg;
	struct timespec ts;

	for (long i = 0; i < r->n; i++) {
		PEER_HOT((int)i);
		if (i % 1000 == 999)
			peer_until(r, (unsigned long long)((double)(i + 1) * 1e9 / r->per_s));
	}
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	r->cpu = (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
	return NULL;
}

static int peer_rate(long n, double per_s, int sleep)
{
	struct peer_rate r = { n, per_s / 2, 0, sleep, 0 }, r2;
	pthread_t t;

	r.t0 = peer_now_ns();
	r2 = r;
	if (pthread_create(&t, NULL, peer_rate_run, &r2))
		return 1;
	peer_rate_run(&r);
	pthread_join(t, NULL);
	if (!sleep) {
		printf("done\n");
		return 0;
	}
	/* the writers' CPU time, ns; then stay until told (the reader's CPU is measured here) */
	printf("done %llu\n", r.cpu + r2.cpu);
	fflush(stdout);
	{
		char line[64];

		if (!fgets(line, sizeof(line), stdin))
			return 0;
	}
	return 0;
}

static int peer_main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;
	unsigned long long t0;

	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "loop"))
		return (int)(peer_loop_site(n) & 1);
	if (!strcmp(argv[1], "empty"))
		return (int)(peer_loop_empty(n) & 1);
	if (!strcmp(argv[1], "cold")) {
		peer_cold_sites(0);
		t0 = peer_now_ns();
		for (long r = 0; r < n; r++)
			peer_cold_sites((int)r);
		printf("%.3f\n", (double)(peer_now_ns() - t0) / ((double)n * PEER_NCOLD));
		return 0;
	}
	if (!strcmp(argv[1], "on") || !strcmp(argv[1], "rate") || !strcmp(argv[1], "cost")) {
		char line[64];
		int cost = !strcmp(argv[1], "cost"), rate = cost || !strcmp(argv[1], "rate");
		int rc = rate ? -1 : peer_on(argc > 3 ? argv[3] : "");

		if (rc < -1)
			return 1;
		if (rc) {
			/* switched on from outside: wait until the tracer says so */
			printf("ready\n");
			fflush(stdout);
			if (!fgets(line, sizeof(line), stdin))
				return 1;
#ifdef PEER_WAIT_ON
			PEER_WAIT_ON();
#endif
		}
		if (rate)
			return peer_rate(n, argc > 3 ? atof(argv[3]) : 1e6, cost);
		PEER_HOT(-1);		/* first event: maps buffers, warms caches */
		t0 = peer_now_ns();
		for (long i = 0; i < n; i++)
			PEER_HOT((int)i);
		printf("%.3f\n", (double)(peer_now_ns() - t0) / (double)n);
		return 0;
	}
	if (!strcmp(argv[1], "first")) {
		unsigned long long deadline = peer_now_ns() + 900000000000ull;
		int r = 0;

		printf("ready\n");
		fflush(stdout);
		while (!peer_fired && peer_now_ns() < deadline)
			peer_all_sites(r++);
		printf("%s\n", peer_fired ? "fired" : "timeout");
		fflush(stdout);
		/* Stay until told (stdin closed): a process that exits as it
		 * fires leaves the switch that fired it without a reply. */
		while (getchar() != EOF)
			;
		return peer_fired ? 0 : 1;
	}
	return 2;
}
#endif
