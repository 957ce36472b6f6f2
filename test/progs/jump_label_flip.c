// SPDX-License-Identifier: MIT
/*
 * Flip static keys while other threads run their sites, and check every value
 * anyone sees.  Driven by the gdb and valgrind script tests
 * (test/scripts/gdb_*.sh, valgrind_*.sh): exit 0 only if every check passed.
 *
 *   jump_label_flip [READERS [FLIPS]]      defaults: 4 readers, 200 flips
 *   jump_label_flip --membarrier-ok        exit 0 if membarrier SYNC_CORE is available
 *
 * 8 keys (4 FALSE, 4 TRUE), 64 sites each (half likely, half unlikely, in two
 * functions): 512 sites.  Each flip changes one key, or (every third) several
 * keys (all eight) in one batch through static_key_enable_queued()/apply_queued().
 *
 * Checks:
 *  - the flipper itself, after every successful flip, runs every site of
 *    every key and compares the branch taken with the key: this is what shows
 *    code that did not really change (valgrind keeping its translations);
 *  - every flip must succeed (a debugger or valgrind is no reason to fail);
 *  - reader threads run all sites in a loop; a pass over a key during which
 *    no flip was in progress (a sequence count, even and unchanged around the
 *    pass) must see exactly the key's value; during a flip either value is
 *    allowed.  After each flip the flipper waits until every reader has done
 *    two more passes, so the readers see every state; before each flip it
 *    waits until every reader spins on the sites of the key it flips.
 * Failures are printed (the first few of each kind) and make the exit status 1.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

/* Under helgrind: the variables below are C11-style atomics used as a
 * seqcount and flags, which helgrind does not model; tell it not to check
 * them (as test/valgrind/helgrind.supp does for the library).  Nothing
 * outside valgrind. */
#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#endif
#endif
#ifndef VALGRIND_HG_DISABLE_CHECKING
#define VALGRIND_HG_DISABLE_CHECKING(addr, len) ((void)(addr), (void)(len))
#endif

#define NKEYS		8
#define MAX_READERS	16
#define ALL		0xffffffffu
#define HOT_MAX		4096

DEFINE_STATIC_KEY_FALSE(fk0);
DEFINE_STATIC_KEY_FALSE(fk1);
DEFINE_STATIC_KEY_FALSE(fk2);
DEFINE_STATIC_KEY_FALSE(fk3);
DEFINE_STATIC_KEY_TRUE(tk0);
DEFINE_STATIC_KEY_TRUE(tk1);
DEFINE_STATIC_KEY_TRUE(tk2);
DEFINE_STATIC_KEY_TRUE(tk3);

/* 32 sites of one key in one function: bit i = the branch site i took. */
#define S(k, kind, i)	m |= (uint32_t)(kind(&k) ? 1u : 0u) << (i);
#define S4(k, i)	S(k, static_branch_likely, i) S(k, static_branch_unlikely, i + 1) \
			S(k, static_branch_unlikely, i + 2) S(k, static_branch_likely, i + 3)
#define S32(k)		S4(k, 0) S4(k, 4) S4(k, 8) S4(k, 12) S4(k, 16) S4(k, 20) S4(k, 24) S4(k, 28)
#define SITES(k)								\
static __attribute__((noinline)) uint32_t k##_a(void) { uint32_t m = 0; S32(k) return m; } \
static __attribute__((noinline)) uint32_t k##_b(void) { uint32_t m = 0; S32(k) return m; }

SITES(fk0) SITES(fk1) SITES(fk2) SITES(fk3)
SITES(tk0) SITES(tk1) SITES(tk2) SITES(tk3)

struct key_sites {
	const char *name;
	struct static_key *key;
	uint32_t (*a)(void), (*b)(void);
};

#define KS(k)	{ #k, &(k).key, k##_a, k##_b }
static const struct key_sites keys[NKEYS] = {
	KS(fk0), KS(fk1), KS(fk2), KS(fk3),
	KS(tk0), KS(tk1), KS(tk2), KS(tk3),
};

static int want[NKEYS];			/* the key's value; atomic accesses */
static unsigned long seq;		/* odd while a flip is in progress */
static int stop;
static int hot;				/* the key the flipper changes next */
static unsigned long armed, done;	/* flips announced, flips finished */
static unsigned long ack[MAX_READERS];	/* the flip each reader is spinning for */
static unsigned long passes[MAX_READERS];	/* full passes of each reader */
static unsigned long checked[MAX_READERS];	/* key passes checked exactly */
static unsigned long errors;

static void report(const char *who, int k, uint32_t got, uint32_t expect, unsigned long s)
{
	unsigned long n = __atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);

	if (n <= 10)
		fprintf(stderr, "jump_label_flip: %s: key %s: sites took 0x%08x, expected 0x%08x (seq %lu)\n",
			who, keys[k].name, got, expect, s);
}

/* Run both functions of key @k; check them exactly unless a flip overlapped. */
static void read_key(int id, int k)
{
	unsigned long s1 = __atomic_load_n(&seq, __ATOMIC_SEQ_CST);
	uint32_t expect = __atomic_load_n(&want[k], __ATOMIC_SEQ_CST) ? ALL : 0;
	uint32_t a = keys[k].a(), b = keys[k].b();

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (s1 & 1 || __atomic_load_n(&seq, __ATOMIC_SEQ_CST) != s1)
		return;		/* a flip overlapped: either value is fine */
	checked[id]++;
	if (a != expect)
		report("reader", k, a, expect, s1);
	if (b != expect)
		report("reader", k, b, expect, s1);
}

/*
 * A pass checks every key once.  Then, when the flipper has armed flip @a,
 * the reader says so (ack) and runs the sites of the key being flipped until
 * that flip is done (or HOT_MAX times, not to starve the flipper of a CPU):
 * flips happen while the readers that have a CPU are inside the very sites
 * being patched.
 */
static void *reader(void *arg)
{
	int id = (int)(intptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned long a;

		for (int k = 0; k < NKEYS; k++)
			read_key(id, k);
		__atomic_add_fetch(&passes[id], 1, __ATOMIC_RELEASE);
		a = __atomic_load_n(&armed, __ATOMIC_ACQUIRE);
		if (a == ack[id])
			continue;
		__atomic_store_n(&ack[id], a, __ATOMIC_RELEASE);
		for (int j = 0; j < HOT_MAX && __atomic_load_n(&done, __ATOMIC_ACQUIRE) < a; j++)
			read_key(id, __atomic_load_n(&hot, __ATOMIC_RELAXED));
	}
	return NULL;
}

/* The flipper's own check: every site of every key takes the key's branch. */
static void check_all(const char *when)
{
	for (int k = 0; k < NKEYS; k++) {
		uint32_t expect = __atomic_load_n(&want[k], __ATOMIC_RELAXED) ? ALL : 0;
		uint32_t a = keys[k].a(), b = keys[k].b();

		if (static_key_enabled(keys[k].key) != !!expect)
			report(when, k, static_key_enabled(keys[k].key) ? ALL : 0, expect, seq);
		if (a != expect)
			report(when, k, a, expect, seq);
		if (b != expect)
			report(when, k, b, expect, seq);
	}
}

static int flip_one(int k)
{
	int v = !__atomic_load_n(&want[k], __ATOMIC_RELAXED);
	int ret = v ? static_key_enable(keys[k].key) : static_key_disable(keys[k].key);

	if (ret) {
		fprintf(stderr, "jump_label_flip: %s %s: %d: %s\n", v ? "enable" : "disable",
			keys[k].name, ret, kk_jump_label_strerror());
		return ret;
	}
	__atomic_store_n(&want[k], v, __ATOMIC_SEQ_CST);
	return 0;
}

/* Flip every key (all 512 sites) in one batch, starting the queue at @k. */
static int flip_queued(int k)
{
	int v[NKEYS], ret;

	for (int j = 0; j < NKEYS; j++) {
		int kk = (k + j) % NKEYS;

		v[j] = !__atomic_load_n(&want[kk], __ATOMIC_RELAXED);
		ret = v[j] ? static_key_enable_queued(keys[kk].key)
			   : static_key_disable_queued(keys[kk].key);
		if (ret) {
			fprintf(stderr, "jump_label_flip: queue %s: %d\n", keys[kk].name, ret);
			kk_static_key_discard_queued();
			return ret;
		}
	}
	ret = static_key_apply_queued();
	if (ret) {
		fprintf(stderr, "jump_label_flip: apply_queued: %d: %s\n", ret, kk_jump_label_strerror());
		kk_static_key_discard_queued();
		return ret;
	}
	for (int j = 0; j < NKEYS; j++)
		__atomic_store_n(&want[(k + j) % NKEYS], v[j], __ATOMIC_SEQ_CST);
	return 0;
}

/* Announce flip @n on key @k; wait until every reader runs its sites. */
static void arm(int nr, unsigned long n, int k)
{
	__atomic_store_n(&hot, k, __ATOMIC_RELAXED);
	__atomic_store_n(&armed, n, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++)
		while (__atomic_load_n(&ack[i], __ATOMIC_ACQUIRE) != n)
			sched_yield();
}

/* Wait until every reader has finished two passes that began after now. */
static void wait_readers(int nr)
{
	unsigned long start[MAX_READERS];

	for (int i = 0; i < nr; i++)
		start[i] = __atomic_load_n(&passes[i], __ATOMIC_ACQUIRE);
	for (int i = 0; i < nr; i++)
		while (__atomic_load_n(&passes[i], __ATOMIC_ACQUIRE) < start[i] + 2)
			sched_yield();
}

static int membarrier_ok(void)
{
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0);

	return cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) ? 0 : 1;
}

int main(int argc, char **argv)
{
	int nr = argc > 1 ? atoi(argv[1]) : 4;
	int flips = argc > 2 ? atoi(argv[2]) : 200;
	pthread_t t[MAX_READERS];
	int failed_flips = 0;
	struct kk_jump_label_stats st;

	if (argc > 1 && !strcmp(argv[1], "--membarrier-ok"))
		return membarrier_ok();
	if (nr < 0 || nr > MAX_READERS || flips < 0) {
		fprintf(stderr, "usage: jump_label_flip [READERS (0..%d) [FLIPS]]\n", MAX_READERS);
		return 2;
	}
	VALGRIND_HG_DISABLE_CHECKING(want, sizeof(want));
	VALGRIND_HG_DISABLE_CHECKING(&seq, sizeof(seq));
	VALGRIND_HG_DISABLE_CHECKING(&stop, sizeof(stop));
	VALGRIND_HG_DISABLE_CHECKING(&hot, sizeof(hot));
	VALGRIND_HG_DISABLE_CHECKING(&armed, sizeof(armed));
	VALGRIND_HG_DISABLE_CHECKING(&done, sizeof(done));
	VALGRIND_HG_DISABLE_CHECKING(ack, sizeof(ack));
	VALGRIND_HG_DISABLE_CHECKING(passes, sizeof(passes));
	VALGRIND_HG_DISABLE_CHECKING(checked, sizeof(checked));
	VALGRIND_HG_DISABLE_CHECKING(&errors, sizeof(errors));
	for (int k = 0; k < NKEYS; k++)
		want[k] = static_key_enabled(keys[k].key);
	check_all("initial");
	for (int i = 0; i < nr; i++) {
		int ret = pthread_create(&t[i], NULL, reader, (void *)(intptr_t)i);

		if (ret) {
			fprintf(stderr, "jump_label_flip: pthread_create: %s\n", strerror(ret));
			return 2;
		}
	}
	wait_readers(nr);
	for (int i = 0; i < flips; i++) {
		int ret;

		arm(nr, i + 1, i % NKEYS);
		__atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
		ret = i % 3 == 2 ? flip_queued(i % NKEYS) : flip_one(i % NKEYS);
		__atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
		__atomic_store_n(&done, i + 1, __ATOMIC_RELEASE);
		failed_flips += ret != 0;
		check_all("flipper");
		wait_readers(nr);
		if (failed_flips > 10)
			break;
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nr; i++)
		pthread_join(t[i], NULL);
	check_all("final");
	for (int i = 0; i < nr; i++)
		if (!checked[i]) {
			fprintf(stderr, "jump_label_flip: reader %d checked nothing\n", i);
			errors++;
		}
	kk_jump_label_get_stats(&st);
	printf("jump_label_flip: %d readers, %d flips (%d failed), %lu wrong branches; "
	       "library: %llu batches, %llu syncs, %llu traps\n",
	       nr, flips, failed_flips, errors, st.batches, st.syncs, st.traps);
	if (failed_flips || errors)
		return 1;
	printf("jump_label_flip: ok\n");
	return 0;
}
