// SPDX-License-Identifier: MIT
/*
 * Two reader threads run 1000 sites (two keys, all four branch forms) while
 * a third thread toggles the keys 100000 times.  Every value a reader sees
 * must be one the key held during the call: when no toggle overlapped the
 * call (an unchanged, even sequence number around it), exactly the key's value.
 *
 * With KK_STRESS_SIGNALS=1 (the default of jump_label_signal, which is this
 * file built again), a fourth thread sends SIGUSR1 to the readers as fast as
 * pthread_kill() goes, and the program's handler (sa_mask empty, the way
 * programs install them) runs sites and checks them the same way.  Such a
 * handler lands on top of the library's SIGTRAP handler when a reader traps
 * on a site in flight; the site it runs then traps again, with SIGTRAP
 * blocked (issue 10: the old handler had an empty sa_mask, and the kernel
 * killed the process in 8 runs of 8).
 *
 * The patching path follows the library's environment: KK_TEXT_POKE=remap,
 * KK_TEXT_SYNC=signal|stop-machine|membarrier (test/scripts/jump_label_stress_*.sh).
 * When one is forced, the program checks from the library's statistics that
 * the forced path is the one that ran, and prints what it found.
 *
 * With KK_STRESS_SIGMASK_FULL=1 the handler is installed with a full sa_mask
 * (sigfillset(), as many daemons do): its sites run with SIGTRAP blocked,
 * which the int3 protocol cannot survive; the library must see the handler
 * and patch by page swaps (test/scripts/jump_label_stress_handler_mask.sh).
 *
 * With KK_STRESS_SIGNAL_TRAP=1 the signal is SIGTRAP instead of SIGUSR1:
 * the program's own SIGTRAP handler, which the library's chains to with
 * every signal blocked, runs the sites (issue 37, held-out round: killed by
 * SIGTRAP; test/scripts/jump_label_stress_handler_mask.sh).
 *
 * Environment: KK_STRESS_TOGGLES overrides the toggle count; the toggling
 * also stops after KK_STRESS_SECONDS (150) of wall time, once 256 toggles
 * ran (stress_budget.h: a loaded machine does fewer, checks the same).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/jump_label.h>
#include "stress_budget.h"

#ifndef JL_STRESS_SIGNALS
#define JL_STRESS_SIGNALS 0		/* default of KK_STRESS_SIGNALS */
#endif
#ifndef JL_STRESS_TOGGLES
#define JL_STRESS_TOGGLES 100000	/* default of KK_STRESS_TOGGLES */
#endif

DEFINE_STATIC_KEY_FALSE(key_a);
DEFINE_STATIC_KEY_TRUE(key_b);

/* 1000 sites: site n uses key_a for even n, key_b for odd n, likely or
 * unlikely by n % 4.  Each returns the branch it took. */
#define SITE(n)									\
	__attribute__((noinline)) static int site_##n(void)			\
	{									\
		if ((n) % 4 == 0) return static_branch_unlikely(&key_a);	\
		if ((n) % 4 == 1) return static_branch_unlikely(&key_b);	\
		if ((n) % 4 == 2) return static_branch_likely(&key_a);		\
		return static_branch_likely(&key_b);				\
	}
#define S10(p)  SITE(p##0) SITE(p##1) SITE(p##2) SITE(p##3) SITE(p##4) \
		SITE(p##5) SITE(p##6) SITE(p##7) SITE(p##8) SITE(p##9)
#define S100(p) S10(p##0) S10(p##1) S10(p##2) S10(p##3) S10(p##4) \
		S10(p##5) S10(p##6) S10(p##7) S10(p##8) S10(p##9)
S100(1) S100(2) S100(3) S100(4) S100(5) S100(6) S100(7) S100(8) S100(9)
S10(100) S10(101) S10(102) S10(103) S10(104) S10(105) S10(106) S10(107) S10(108) S10(109)

#define P(n) site_##n,
#define P10(p)  P(p##0) P(p##1) P(p##2) P(p##3) P(p##4) P(p##5) P(p##6) P(p##7) P(p##8) P(p##9)
#define P100(p) P10(p##0) P10(p##1) P10(p##2) P10(p##3) P10(p##4) \
		P10(p##5) P10(p##6) P10(p##7) P10(p##8) P10(p##9)
static int (*const sites[])(void) = {
	P100(1) P100(2) P100(3) P100(4) P100(5) P100(6) P100(7) P100(8) P100(9)
	P10(100) P10(101) P10(102) P10(103) P10(104) P10(105) P10(106) P10(107) P10(108) P10(109)
};
#define NSITES ((int)(sizeof(sites) / sizeof(sites[0])))

/* Sites one SIGUSR1 runs: enough that a handler stacked on a trap meets a
 * site of the batch in flight, few enough that readers still make progress. */
#define SIG_SITES 64

/* sites[i] is site_N with N % 2 == i % 2 (N runs 100..999, 1000..1099): even uses key_a. */
static atomic_uint seq;			/* odd while a toggle is in progress */
static atomic_int val_a, val_b;		/* the keys' values when seq is even */
static atomic_int done;
static atomic_long checked, mismatches, calls;
/* What the SIGUSR1 handler did; it cannot print, so the first bad site goes here. */
static atomic_long sig_runs, sig_checked, sig_sent;
static atomic_uint sig_cursor;
static atomic_int sig_bad_site = -1, sig_bad_got, sig_bad_want;
static int flood_sig = SIGUSR1;		/* SIGTRAP with KK_STRESS_SIGNAL_TRAP=1 */

/*
 * Run site @i and check what it returned.  Returns 0, or 1 for a wrong
 * value (then *gotp and *wantp say which).  Async-signal-safe: atomics only.
 */
static int check_site(int i, atomic_long *nchecked, int *gotp, int *wantp)
{
	unsigned s1 = atomic_load(&seq);
	int want = (i % 2 == 0) ? atomic_load(&val_a) : atomic_load(&val_b);
	int got = sites[i]();
	unsigned s2 = atomic_load(&seq);

	atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
	*gotp = got;
	*wantp = want;
	if (got != 0 && got != 1)
		return 1;
	if (s1 != s2 || (s1 & 1))
		return 0;		/* a toggle overlapped: either value is right */
	atomic_fetch_add_explicit(nchecked, 1, memory_order_relaxed);
	return got != want;
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		for (int i = 0; i < NSITES; i++) {
			int got, want;

			if (check_site(i, &checked, &got, &want)) {
				fprintf(stderr, "site %d: got %d, key held %d\n", i, got, want);
				atomic_fetch_add(&mismatches, 1);
			}
		}
	}
	return NULL;
}

/* The program's own handler: nothing blocked, no SA_NODEFER. */
static void usr1_handler(int sig)
{
	int saved_errno = errno;
	unsigned start = atomic_fetch_add_explicit(&sig_cursor, SIG_SITES, memory_order_relaxed);

	(void)sig;
	for (int k = 0; k < SIG_SITES; k++) {
		int i = (int)((start + (unsigned)k) % (unsigned)NSITES), got, want;

		if (check_site(i, &sig_checked, &got, &want)) {
			int none = -1;

			if (atomic_compare_exchange_strong(&sig_bad_site, &none, i)) {
				atomic_store(&sig_bad_got, got);
				atomic_store(&sig_bad_want, want);
			}
			atomic_fetch_add(&mismatches, 1);
		}
	}
	atomic_fetch_add_explicit(&sig_runs, 1, memory_order_relaxed);
	errno = saved_errno;
}

struct sender {
	pthread_t *readers;
	int n;
};

/* Interrupt the readers as often as the kernel lets us. */
static void *sender(void *arg)
{
	struct sender *s = arg;

	while (!atomic_load(&done))
		for (int i = 0; i < s->n; i++)
			if (pthread_kill(s->readers[i], flood_sig) == 0)
				atomic_fetch_add_explicit(&sig_sent, 1, memory_order_relaxed);
	return NULL;
}

static int env_flag(const char *name, int dflt)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) != 0 : dflt;
}

/* Exit status of a run that forced a path no text write takes: a skip. */
#define FORCED_NOTHING	77

static bool forced(const char *v)
{
	return v && *v && strcmp(v, "auto");
}

/*
 * KK_TEXT_POKE / KK_TEXT_SYNC forced: did that path run?  Prints what it saw
 * either way; returns the number of failed checks, or -1 when a path was
 * forced and no text is patched at all (KK_NO_JUMP_LABEL): nothing tested.
 */
static int check_forced_path(const struct kk_jump_label_stats *st)
{
	const char *poke = getenv("KK_TEXT_POKE");
	const char *sync = getenv("KK_TEXT_SYNC");
	int bad = 0;

	if (!st->sites)
		return forced(poke) || forced(sync) ? -1 : 0;
	if (forced(poke)) {
		if (strcmp(kk_jump_label_method(), poke)) {
			fprintf(stderr, "KK_TEXT_POKE=%s, but text was written with %s\n", poke,
				kk_jump_label_method());
			bad++;
		} else {
			printf("write path: %s, as forced\n", poke);
		}
	}
	/* The public statistics (issue 13: the sync layer's own are internal):
	 * syncs counts every int3 round, signal_syncs those done by
	 * signalling threads, stopped the batches written under stop_machine. */
	printf("sync: method %s, rounds %llu (by signals %llu), batches under "
	       "stop_machine %llu\n", kk_jump_label_sync_method(), st->syncs, st->signal_syncs,
	       st->stopped);
	if (!sync || !*sync || !strcmp(sync, "auto"))
		return bad;
	if (!strcmp(sync, "signal")) {
		if (!st->signal_syncs || st->syncs != st->signal_syncs || st->stopped) {
			fprintf(stderr, "KK_TEXT_SYNC=signal, but the rounds were not all "
				"signal rounds\n");
			bad++;
		}
	} else if (!strcmp(sync, "membarrier")) {
		if (!st->syncs || st->signal_syncs || st->stopped) {
			fprintf(stderr, "KK_TEXT_SYNC=membarrier, but the rounds were not all "
				"membarrier rounds\n");
			bad++;
		}
	} else if (!strcmp(sync, "stop-machine")) {
		/* No int3 was ever in the path of a running thread. */
		if (!st->stopped || st->syncs || st->traps) {
			fprintf(stderr, "KK_TEXT_SYNC=stop-machine, but %llu batches under "
				"stop_machine, %llu int3 rounds, %llu traps emulated\n", st->stopped,
				st->syncs, st->traps);
			bad++;
		}
	}
	return bad;
}

int main(void)
{
	long toggles = getenv("KK_STRESS_TOGGLES") ? atol(getenv("KK_STRESS_TOGGLES"))
						   : JL_STRESS_TOGGLES;
	int signals = env_flag("KK_STRESS_SIGNALS", JL_STRESS_SIGNALS);
	struct kk_jump_label_stats st;
	struct sender snd;
	pthread_t r[2], s;
	int errors = 0, bad = 0, path;

	if (NSITES != 1000) {
		fprintf(stderr, "expected 1000 sites, have %d\n", NSITES);
		return 1;
	}
	if (signals) {
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = usr1_handler;
		sa.sa_flags = SA_RESTART;
		/* KK_STRESS_SIGMASK=full: the handler blocks every signal while
		 * it runs (sigfillset(), as many daemons install theirs), so its
		 * sites run with SIGTRAP blocked. */
		if (env_flag("KK_STRESS_SIGMASK_FULL", 0))
			sigfillset(&sa.sa_mask);
		else
			sigemptyset(&sa.sa_mask);
		if (env_flag("KK_STRESS_SIGNAL_TRAP", 0))
			flood_sig = SIGTRAP;
		if (sigaction(flood_sig, &sa, NULL)) {
			perror("sigaction");
			return 1;
		}
	}
	atomic_store(&val_a, 0);
	atomic_store(&val_b, 1);
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	snd.readers = r;
	snd.n = 2;
	if (signals)
		pthread_create(&s, NULL, sender, &snd);
	for (long t = 0; t < toggles; t++) {
		/* Keep the readers in the race: in the fallback build a toggle
		 * is a store, and 100k of them would be over before they start. */
		if (t % 64 == 0) {
			if (stress_budget_spent(t, 256, 150)) {
				toggles = t;
				break;
			}
			long target = atomic_load(&calls) + NSITES;

			while (atomic_load(&calls) < target)
				sched_yield();
			/* and the handler: it must run sites, not only be sent */
			target = atomic_load(&sig_runs) + 1;
			while (signals && atomic_load(&sig_runs) < target)
				sched_yield();
		}
		int on = !(t & 2);
		struct static_key *k = (t & 1) ? &key_b.key : &key_a.key;
		atomic_int *v = (t & 1) ? &val_b : &val_a;
		int ret;

		atomic_fetch_add(&seq, 1);			/* odd: changing */
		ret = on ? static_key_enable(k) : static_key_disable(k);
		if (ret) {
			fprintf(stderr, "toggle %ld: %s\n", t, kk_jump_label_strerror());
			errors++;
		}
		atomic_store(v, static_key_enabled(k));
		atomic_fetch_add(&seq, 1);			/* even: stable */
	}
	atomic_store(&done, 1);
	if (signals)
		pthread_join(s, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	kk_jump_label_get_stats(&st);
	printf("toggles %ld, site calls %ld, checked %ld, mismatches %ld, errors %d, "
	       "syncs %llu, traps emulated %llu, method %s\n",
	       toggles, atomic_load(&calls), atomic_load(&checked), atomic_load(&mismatches),
	       errors, st.syncs, st.traps, kk_jump_label_method());
	if (signals) {
		printf("SIGUSR1: %ld sent, %ld handled, %ld sites checked in the handler\n",
		       atomic_load(&sig_sent), atomic_load(&sig_runs), atomic_load(&sig_checked));
		if (atomic_load(&sig_bad_site) >= 0)
			fprintf(stderr, "in the SIGUSR1 handler: site %d: got %d, key held %d\n",
				atomic_load(&sig_bad_site), atomic_load(&sig_bad_got),
				atomic_load(&sig_bad_want));
		/* The handler must have run sites, or this tested nothing new. */
		if (atomic_load(&sig_checked) < 100) {
			fprintf(stderr, "too few stable observations in the signal handler\n");
			bad++;
		}
	}
	if ((path = check_forced_path(&st)) > 0)
		bad += path;
	/* The check must have had something to check. */
	if (atomic_load(&checked) < 1000) {
		fprintf(stderr, "too few stable observations\n");
		return 1;
	}
	if (errors || bad || atomic_load(&mismatches))
		return 1;
	if (path < 0) {
		/* (the last line: the runner's reason for the skip) */
		printf("skip: KK_NO_JUMP_LABEL: no text is patched, so the forced %s%s%s%s "
		       "never ran (the flips themselves checked out)\n",
		       forced(getenv("KK_TEXT_POKE")) ? "KK_TEXT_POKE=" : "",
		       forced(getenv("KK_TEXT_POKE")) ? getenv("KK_TEXT_POKE") : "",
		       forced(getenv("KK_TEXT_SYNC")) ? " KK_TEXT_SYNC=" : "",
		       forced(getenv("KK_TEXT_SYNC")) ? getenv("KK_TEXT_SYNC") : "");
		return FORCED_NOTHING;
	}
	return 0;
}
