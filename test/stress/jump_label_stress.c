// SPDX-License-Identifier: MIT
/*
 * Two reader threads run 1000 sites (two keys, all four branch forms) while
 * a third thread toggles the keys 100000 times.  Every value a reader sees
 * must be one the key held during the call: when no toggle overlapped the
 * call (an unchanged, even sequence number around it), exactly the key's value.
 *
 * Environment: KK_STRESS_TOGGLES overrides the toggle count.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include <kernelkit/jump_label.h>

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

/* sites[i] is site_N with N % 2 == i % 2 (N runs 100..999, 1000..1099): even uses key_a. */
static atomic_uint seq;			/* odd while a toggle is in progress */
static atomic_int val_a, val_b;		/* the keys' values when seq is even */
static atomic_int done;
static atomic_long checked, mismatches, calls;

static void *reader(void *arg)
{
	(void)arg;
	while (!atomic_load(&done)) {
		for (int i = 0; i < NSITES; i++) {
			unsigned s1 = atomic_load(&seq);
			int want = (i % 2 == 0) ? atomic_load(&val_a) : atomic_load(&val_b);
			int got = sites[i]();
			unsigned s2 = atomic_load(&seq);

			atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed);
			if (got != 0 && got != 1) {
				atomic_fetch_add(&mismatches, 1);
			} else if (s1 == s2 && !(s1 & 1)) {
				atomic_fetch_add_explicit(&checked, 1, memory_order_relaxed);
				if (got != want) {
					fprintf(stderr, "site %d: got %d, key held %d\n", i, got, want);
					atomic_fetch_add(&mismatches, 1);
				}
			}
		}
	}
	return NULL;
}

int main(void)
{
	long toggles = getenv("KK_STRESS_TOGGLES") ? atol(getenv("KK_STRESS_TOGGLES")) : 100000;
	struct kk_jump_label_stats st;
	pthread_t r[2];
	int errors = 0;

	if (NSITES != 1000) {
		fprintf(stderr, "expected 1000 sites, have %d\n", NSITES);
		return 1;
	}
	atomic_store(&val_a, 0);
	atomic_store(&val_b, 1);
	for (int i = 0; i < 2; i++)
		pthread_create(&r[i], NULL, reader, NULL);
	for (long t = 0; t < toggles; t++) {
		/* Keep the readers in the race: in the fallback build a toggle
		 * is a store, and 100k of them would be over before they start. */
		if (t % 64 == 0) {
			long target = atomic_load(&calls) + NSITES;

			while (atomic_load(&calls) < target)
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
	for (int i = 0; i < 2; i++)
		pthread_join(r[i], NULL);
	kk_jump_label_get_stats(&st);
	printf("toggles %ld, site calls %ld, checked %ld, mismatches %ld, errors %d, "
	       "syncs %llu, traps emulated %llu, method %s\n",
	       toggles, atomic_load(&calls), atomic_load(&checked), atomic_load(&mismatches),
	       errors, st.syncs, st.traps, kk_jump_label_method());
	/* The check must have had something to check. */
	if (atomic_load(&checked) < 1000) {
		fprintf(stderr, "too few stable observations\n");
		return 1;
	}
	return errors || atomic_load(&mismatches) ? 1 : 0;
}
