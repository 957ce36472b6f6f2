// SPDX-License-Identifier: MIT
/*
 * Issue 10, "failed enables" and "write failures": an enable whose text
 * writes fail and that reports failure must never be observed as enabled,
 * and must leave every site matching its key, ready for a retry.
 *
 * Two reader threads run 500 sites of one key while the main thread enables
 * it again and again with a write made to fail:
 *   phase 1: only the n-th write of the enable fails (a transient error);
 *   phase 2: the n-th write and every later one of that call fail (the
 *            text became unwritable partway: the undo cannot write either).
 * n cycles over every write an enable makes (counted first), so each step of
 * the protocol fails in turn.  After each injected attempt comes a clean one,
 * which must succeed (old code: -EILSEQ after a half-applied batch), then a
 * disable.
 *
 * Sequence protocol: seq = 4i before attempt i (key disabled), 4i+1 while
 * enable i runs, 4i+2 after it (key = its outcome), 4i+3 while it is
 * disabled again.  A reader that saw the enabled branch during [s1, s2] must
 * find in that range an enable that succeeded (or one still in flight, which
 * is then checked when it ends).  A reader that saw the disabled branch
 * during a stable 4i+2 of a successful enable is wrong too.
 *
 * Writes are failed through the library's test hook kk_text_write_hook
 * (called before each text write; non-zero fails it) when the library
 * exports it: the white-box build ($(B)/internal/libkernelkit.so) does,
 * libkernelkit.so does not (it is not API, docs/abi.md).  Without the hook
 * the library writes text with pwrite() on /proc/self/mem: this program's
 * own pwrite() (found before libc's) fails the same writes.  With neither
 * (the remap write path), it exits 77.
 *
 * Environment: KK_FAILED_ENABLE_ATTEMPTS (per phase, default 1200).
 *
 * Architectures differ in what a failed batch may show while the call runs
 * (docs/jump_label.md, "Architectures"):
 *  - x86_64 (int3 protocol): nothing, ever: until the commit point a thread
 *    at a site traps and runs the old instruction, and a batch that cannot
 *    be repaired has its sites emulated;
 *  - aarch64 (one word per site, no trap): a failed enable may be seen
 *    while the call runs, until its repair puts the old words back; once the
 *    call has returned it is seen no more, unless the batch could not be
 *    repaired (phase 2: "stuck"), whose sites then hold either word until
 *    the next change repairs them.  That is what is checked there.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"

extern int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len)
	__attribute__((__weak__));

DEFINE_STATIC_KEY_FALSE(fkey);

/* 500 sites of fkey, likely and unlikely; each returns the branch it took. */
#define SITE(n)									\
	__attribute__((noinline)) static int site_##n(void)			\
	{									\
		if ((n) % 2) return static_branch_unlikely(&fkey);		\
		return static_branch_likely(&fkey);				\
	}
#define S10(p)  SITE(p##0) SITE(p##1) SITE(p##2) SITE(p##3) SITE(p##4) \
		SITE(p##5) SITE(p##6) SITE(p##7) SITE(p##8) SITE(p##9)
#define S100(p) S10(p##0) S10(p##1) S10(p##2) S10(p##3) S10(p##4) \
		S10(p##5) S10(p##6) S10(p##7) S10(p##8) S10(p##9)
S100(1) S100(2) S100(3) S100(4) S100(5)

#define P(n) site_##n,
#define P10(p)  P(p##0) P(p##1) P(p##2) P(p##3) P(p##4) P(p##5) P(p##6) P(p##7) P(p##8) P(p##9)
#define P100(p) P10(p##0) P10(p##1) P10(p##2) P10(p##3) P10(p##4) \
		P10(p##5) P10(p##6) P10(p##7) P10(p##8) P10(p##9)
static int (*const sites[])(void) = { P100(1) P100(2) P100(3) P100(4) P100(5) };
#define NSITES ((int)(sizeof(sites) / sizeof(sites[0])))

/* ---- failing writes ------------------------------------------------------------ */

enum inj_mode {
	INJ_OFF,
	INJ_COUNT,	/* count the writes, fail none */
	INJ_ONE,	/* fail the inj_at-th write only */
	INJ_FROM,	/* fail the inj_at-th write and every later one */
};

static atomic_int inj_mode, inj_at, inj_calls, inj_failed;
static atomic_long failed_steps[9];	/* by the hook's step argument; [8]: other */
static int via_pwrite;			/* no hook: failing pwrite() on /proc/self/mem */

static int inject(int step, unsigned long addr, unsigned long len)
{
	int mode = atomic_load(&inj_mode), n;

	(void)addr;
	(void)len;
	if (mode == INJ_OFF)
		return 0;
	n = atomic_fetch_add(&inj_calls, 1) + 1;
	if ((mode == INJ_ONE && n == atomic_load(&inj_at)) ||
	    (mode == INJ_FROM && n >= atomic_load(&inj_at))) {
		atomic_fetch_add(&inj_failed, 1);
		atomic_fetch_add(&failed_steps[step >= 0 && step < 8 ? step : 8], 1);
		return -EIO;
	}
	return 0;
}

static int is_proc_mem(int fd)
{
	char path[64], target[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return 0;
	target[n] = 0;
	return !strncmp(target, "/proc/", 6) && n > 4 && !strcmp(target + n - 4, "/mem");
}

/* Seen before libc's by the library (it calls pwrite through its PLT). */
ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	if (via_pwrite && atomic_load(&inj_mode) != INJ_OFF && is_proc_mem(fd)) {
		int ret = inject(0, (unsigned long)off, n);

		if (ret) {
			errno = -ret;
			return -1;
		}
	}
	return syscall(SYS_pwrite64, fd, buf, n, off);
}

/* ---- readers --------------------------------------------------------------------- */

enum outcome { UNKNOWN, OK, FAILED, STUCK };

#if defined(__x86_64__)
#define HIDES_FAILED_BATCH 1
#else
#define HIDES_FAILED_BATCH 0
#endif

static atomic_uint seq;
static atomic_int done;
static atomic_long calls, stable_checked, enabled_seen;
static atomic_long bad_enabled, bad_disabled;
static _Atomic unsigned char *outcome;	/* per attempt */
static _Atomic unsigned char *seen_on;	/* enabled branch seen while attempt was in flight */
static long nattempts;

static void saw_enabled(unsigned s1, unsigned s2, int i)
{
	/* Attempts that may have shown the enabled branch inside [s1, s2]:
	 * attempt j can from 4j+1 (enable starts) to 4j+3 (disable ends). */
	long jlo = s1 / 4, jhi = s2 >= 1 ? (long)(s2 - 1) / 4 : -1;

	int unknown = 0;

	/* Any attempt in the window that succeeded explains what was seen:
	 * the window may span its disable and the next attempt's start. */
	for (long j = jlo; j <= jhi && j < nattempts; j++) {
		int o = atomic_load(&outcome[j]);

		if (o == OK)
			return;
		/* Without traps: enable j was in flight inside the window, or
		 * its batch is stuck (until the next change repairs it). */
		if (!HIDES_FAILED_BATCH && (o == STUCK || (s1 <= 4 * j + 1 && 4 * j + 1 <= s2)))
			return;
		unknown |= o == UNKNOWN;
	}
	/* Without traps, a stuck batch's sites keep their words until the
	 * next change: also through the stable seq after its attempt. */
	for (long j = s1 >= 1 ? (long)(s1 - 1) / 4 : 0; !HIDES_FAILED_BATCH && j <= jhi &&
	     j < nattempts; j++)
		if (atomic_load(&outcome[j]) == STUCK)
			return;
	if (unknown) {
		/* Attempts still in flight: blame them if they end failed. */
		for (long j = jlo; j <= jhi && j < nattempts; j++)
			if (atomic_load(&outcome[j]) == UNKNOWN)
				atomic_store(&seen_on[j], 1);
		return;
	}
	if (atomic_fetch_add(&bad_enabled, 1) < 5)
		fprintf(stderr, "site %d took the enabled branch during seq %u..%u: "
			"no enable succeeded there\n", i, s1, s2);
}

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		for (int i = 0; i < NSITES; i++) {
			unsigned s1 = atomic_load(&seq);
			int got = sites[i]();
			unsigned s2 = atomic_load(&seq);

			atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
			if (got) {
				atomic_fetch_add_explicit(&enabled_seen, 1, memory_order_relaxed);
				saw_enabled(s1, s2, i);
			} else if (s1 == s2 && s1 % 4 == 2 && atomic_load(&outcome[s1 / 4]) == OK) {
				if (atomic_fetch_add(&bad_disabled, 1) < 5)
					fprintf(stderr, "site %d took the disabled branch while "
						"the key was enabled (seq %u)\n", i, s1);
			}
			if (s1 == s2 && !(s1 & 1))
				atomic_fetch_add_explicit(&stable_checked, 1, memory_order_relaxed);
		}
	}
	return NULL;
}

/* ---- the writer ------------------------------------------------------------------ */

static int errors;

static void fail(const char *what, long i)
{
	if (errors++ < 10)
		fprintf(stderr, "attempt %ld: %s\n", i, what);
}

/* Every site, from this thread: all must say @want (a site left holding int3
 * with no batch behind it kills the process here). */
static void run_all_sites(int want, long i)
{
	for (int s = 0; s < NSITES; s++)
		if (sites[s]() != want) {
			fail(want ? "a site says disabled after a successful enable"
				  : "a site says enabled after a failed enable", i);
			return;
		}
}

static void wait_readers(void)
{
	long target = atomic_load(&calls) + NSITES;

	while (atomic_load(&calls) < target)
		sched_yield();
}

struct phase_stats {
	long injected, failed, ok;
};

/*
 * Attempt @i (even @i injected with @mode, odd @i the clean retry), then
 * disable again if it succeeded.
 */
static void attempt(long i, enum inj_mode mode, int at, struct phase_stats *ps)
{
	int injected = !(i & 1), ret, en;

	atomic_store(&seq, (unsigned)(4 * i + 1));		/* enable in flight */
	atomic_store(&inj_calls, 0);
	atomic_store(&inj_at, at);
	atomic_store(&inj_mode, injected ? mode : INJ_OFF);
	ret = static_branch_enable(&fkey);
	atomic_store(&inj_mode, INJ_OFF);
	en = static_key_enabled(&fkey);
	if (ret && en)
		fail("enable failed but the key says enabled", i);
	if (!ret && !en)
		fail("enable succeeded but the key says disabled", i);
	if (!injected && ret) {
		char msg[300];

		snprintf(msg, sizeof(msg), "retry without failing writes: %s (%s)",
			 strerror(-ret), kk_jump_label_strerror());
		fail(msg, i);
	}
	ps->injected += injected;
	ps->failed += ret != 0;
	ps->ok += !ret;
	if (ret && !HIDES_FAILED_BATCH) {
		struct kk_jump_label_stats st;

		kk_jump_label_get_stats(&st);
		atomic_store(&outcome[i], st.stuck ? STUCK : FAILED);
	} else {
		atomic_store(&outcome[i], ret ? FAILED : OK);
	}
	atomic_store(&seq, (unsigned)(4 * i + 2));		/* stable: key = outcome */
	if (atomic_load(&outcome[i]) != STUCK)
		run_all_sites(!ret, i);
	if (!ret) {
		atomic_store(&seq, (unsigned)(4 * i + 3));	/* disable in flight */
		if (static_branch_disable(&fkey) || static_key_enabled(&fkey))
			fail("disable failed", i);
	}
	atomic_store(&seq, (unsigned)(4 * i + 4));		/* stable: disabled */
	if (atomic_load(&outcome[i]) != STUCK)
		run_all_sites(0, i);
}

static long phase_violations(long from, long to)
{
	long n = 0;

	for (long j = from; j < to; j++)
		n += atomic_load(&seen_on[j]) && atomic_load(&outcome[j]) != OK &&
		     atomic_load(&outcome[j]) != STUCK;
	return n;
}

int main(void)
{
	long per_phase = getenv("KK_FAILED_ENABLE_ATTEMPTS") ?
			 atol(getenv("KK_FAILED_ENABLE_ATTEMPTS")) : 1200;
	struct phase_stats ps[2];
	struct kk_jump_label_stats st;
	pthread_t r[2];
	int writes;
	long ret;

	kk_jump_label_get_stats(&st);
	if (!st.sites) {
		printf("no sites (KK_NO_JUMP_LABEL build): no text is written\n");
		return 77;
	}
	/* The steps of the live protocol fail in turn: left to itself, the
	 * library writes the first change of pages that the readers run by
	 * page swap, whose copy falls back to another way of writing when
	 * /proc/self/mem fails (docs/jump_label.md, "Shared pages"). */
	if (!getenv("KK_TEXT_SYNC"))
		kkt_live_protocol();
	if (&kk_text_write_hook) {
		kk_text_write_hook = inject;
	} else {
		via_pwrite = 1;
		printf("no kk_text_write_hook in the library: failing its pwrite() "
		       "on /proc/self/mem instead\n");
	}
	/* Warm up (trap handler, write method), then count an enable's writes. */
	if (static_branch_enable(&fkey) || static_branch_disable(&fkey)) {
		fprintf(stderr, "plain enable/disable: %s\n", kk_jump_label_strerror());
		return 1;
	}
	atomic_store(&inj_mode, INJ_COUNT);
	ret = static_branch_enable(&fkey);
	atomic_store(&inj_mode, INJ_OFF);
	writes = atomic_load(&inj_calls);
	if (ret || static_branch_disable(&fkey)) {
		fprintf(stderr, "counted enable/disable: %s\n", kk_jump_label_strerror());
		return 1;
	}
	printf("method %s: an enable of %d sites makes %d text writes\n",
	       kk_jump_label_method(), NSITES, writes);
	if (!writes) {
		printf("cannot fail this library's writes (write path %s): skipped\n",
		       kk_jump_label_method());
		return 77;
	}

	nattempts = 4 * per_phase;		/* two phases, injected + retry each */
	outcome = calloc((size_t)nattempts, 1);
	seen_on = calloc((size_t)nattempts, 1);
	if (!outcome || !seen_on)
		return 1;
	for (int k = 0; k < 2; k++)
		pthread_create(&r[k], NULL, reader, NULL);

	memset(ps, 0, sizeof(ps));
	for (long i = 0; i < nattempts; i++) {
		int phase = i >= nattempts / 2;
		long k = (i % (nattempts / 2)) / 2;	/* injected attempt in the phase */

		if (i % 16 == 0)
			wait_readers();
		attempt(i, phase ? INJ_FROM : INJ_ONE, 1 + (int)(k % writes), &ps[phase]);
		if (i + 1 == nattempts / 2) {
			/* Phase 1's verdict before phase 2 can crash the old code. */
			printf("phase 1 (one write fails): %ld injected, %ld enables failed, "
			       "%ld observed enabled\n", ps[0].injected, ps[0].failed,
			       phase_violations(0, i + 1));
			fflush(stdout);
		}
	}
	atomic_store(&done, 1);
	for (int k = 0; k < 2; k++)
		pthread_join(r[k], NULL);

	/* The hook removed, the key still works. */
	atomic_store(&inj_mode, INJ_OFF);
	if (static_branch_enable(&fkey))
		fail(kk_jump_label_strerror(), -1);
	run_all_sites(1, -1);
	if (static_branch_disable(&fkey))
		fail(kk_jump_label_strerror(), -1);
	run_all_sites(0, -1);

	long v1 = phase_violations(0, nattempts / 2), v2 = phase_violations(nattempts / 2, nattempts);
	long nfailed = ps[0].failed + ps[1].failed;

	kk_jump_label_get_stats(&st);
	printf("phase 1 (one write fails):   %ld injected, %ld failed, %ld failed enables "
	       "observed enabled\n", ps[0].injected, ps[0].failed, v1);
	printf("phase 2 (writes fail on):    %ld injected, %ld failed, %ld failed enables "
	       "observed enabled\n", ps[1].injected, ps[1].failed, v2);
	printf("writes failed %d; by step:", atomic_load(&inj_failed));
	for (int s = 0; s < 9; s++)
		if (atomic_load(&failed_steps[s]))
			printf(" %s%d=%ld", s == 8 ? ">=" : "", s, atomic_load(&failed_steps[s]));
	printf("\nreaders: %ld calls, %ld stable, %ld enabled seen, %ld enabled without an "
	       "enable, %ld disabled while enabled; traps emulated %llu, batches %llu\n",
	       atomic_load(&calls), atomic_load(&stable_checked), atomic_load(&enabled_seen),
	       atomic_load(&bad_enabled), atomic_load(&bad_disabled), st.traps, st.batches);
	if (nfailed == 0) {
		fprintf(stderr, "no enable failed: the injection did not work\n");
		return 1;
	}
	if (v1 || v2)
		fprintf(stderr, "%ld of %ld failed enables were observed enabled "
			"(%.1f per 1000)\n", v1 + v2, nfailed, 1000.0 * (double)(v1 + v2) / (double)nfailed);
	return errors || v1 || v2 || atomic_load(&bad_enabled) || atomic_load(&bad_disabled) ? 1 : 0;
}
