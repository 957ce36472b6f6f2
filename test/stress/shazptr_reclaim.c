// SPDX-License-Identifier: MIT
/*
 * Reclamation stress for shazptr.  Readers dereference objects that updaters
 * unpublish, synchronize_shazptr() on and free; any broken wait shows up as a
 * use-after-free (ASan / TSan builds) or as a reader seeing a poisoned object.
 *
 *  - Slots of objects: classic hazard-pointer use (load, acquire, re-check).
 *  - The key registry (examples/shazptr/keyreg.c): the lockdep pattern, where
 *    readers protect the immortal bucket and updaters free list elements.
 *  - Some readers nest a second acquire (wildcard), half of the updaters run
 *    with skip_synchronize_self_scan toggled on, so every path is exercised.
 *
 * Exit 0 on success.  Runs for KK_STRESS_MS milliseconds (default 1500).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/shazptr.h>
#include "../../examples/shazptr/keyreg.h"

#define NSLOTS		16
#define NKEYS		64
#define NREADERS	2
#define NUPDATERS	2
#define LIVE		0x4c4956454c495645ull
#define DEAD		0xdeaddeaddeaddeadull

struct obj {
	uint64_t magic;
	uint64_t gen;
	uint64_t check;		/* gen ^ LIVE */
};

static struct obj *gp[NSLOTS];
static char keys[NKEYS];
static int stop;
static unsigned long errors, reads, frees, allocs, lookups;

static struct obj *obj_new(uint64_t gen)
{
	struct obj *o = malloc(sizeof(*o));

	if (!o) {
		perror("malloc");
		exit(2);
	}
	o->magic = LIVE;
	o->gen = gen;
	o->check = gen ^ LIVE;
	__atomic_fetch_add(&allocs, 1, __ATOMIC_RELAXED);
	return o;
}

static void obj_free(struct obj *o)
{
	o->magic = DEAD;
	o->check = 0;
	free(o);
	__atomic_fetch_add(&frees, 1, __ATOMIC_RELAXED);
}

static void check_obj(const struct obj *o)
{
	if (o->magic != LIVE || (o->gen ^ LIVE) != o->check) {
		__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
		fprintf(stderr, "reader saw a dead object %p (magic %llx)\n", (const void *)o,
			(unsigned long long)o->magic);
	}
}

static void *reader(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg * 7919u + 1;
	unsigned long n = 0, l = 0;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned int i = (unsigned int)rand_r(&seed) % NSLOTS;
		struct obj *p;
		struct shazptr_guard g;

		/* Load, protect, re-check: classic hazard pointer protocol. */
		for (;;) {
			p = __atomic_load_n(&gp[i], __ATOMIC_ACQUIRE);
			g = shazptr_acquire(p);
			if (__atomic_load_n(&gp[i], __ATOMIC_ACQUIRE) == p)
				break;
			shazptr_clear(g);
		}
		check_obj(p);
		if ((n & 15) == 0) {
			/* A nested acquire publishes the wildcard. */
			unsigned int j = (i + 1) % NSLOTS;
			struct obj *q = __atomic_load_n(&gp[j], __ATOMIC_ACQUIRE);
			struct shazptr_guard g2 = shazptr_acquire(q);

			if (!g2.use_wildcard) {
				fprintf(stderr, "nested acquire did not use the wildcard\n");
				__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
			}
			/* The wildcard protects q only if it is still published. */
			if (__atomic_load_n(&gp[j], __ATOMIC_ACQUIRE) == q)
				check_obj(q);
			shazptr_clear(g2);
		}
		check_obj(p);
		shazptr_clear(g);
		n++;

		/* The registry: lookups race with unregister + free. */
		int r = keyreg_shazptr_lookup(&keys[rand_r(&seed) % NKEYS]);

		if (r < 0) {
			fprintf(stderr, "registry lookup returned %d\n", r);
			__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
		}
		l++;
	}
	__atomic_fetch_add(&reads, n, __ATOMIC_RELAXED);
	__atomic_fetch_add(&lookups, l, __ATOMIC_RELAXED);
	return NULL;
}

static void *updater(void *arg)
{
	unsigned int id = (unsigned int)(uintptr_t)arg;
	unsigned int seed = id * 104729u + 3;
	uint64_t gen = (uint64_t)id << 40;

	while (!__atomic_load_n(&stop, __ATOMIC_RELAXED)) {
		unsigned int i = (unsigned int)rand_r(&seed) % NSLOTS;
		struct obj *old = __atomic_exchange_n(&gp[i], obj_new(++gen), __ATOMIC_ACQ_REL);

		synchronize_shazptr(old);
		obj_free(old);

		/* Registry churn on this updater's half of the keys. */
		unsigned int k = (unsigned int)rand_r(&seed) % (NKEYS / NUPDATERS) * NUPDATERS + id;
		int r = keyreg_shazptr_unregister(&keys[k]);

		if (r == -ENOENT)
			r = keyreg_shazptr_register(&keys[k]);
		if (r) {
			fprintf(stderr, "registry update returned %d\n", r);
			__atomic_fetch_add(&errors, 1, __ATOMIC_RELAXED);
		}
		if (id == 1 && (gen & 255) == 0)	/* flip the setting now and then */
			kk_shazptr_set_skip_synchronize_self_scan(!kk_shazptr_get_skip_synchronize_self_scan());
	}
	return NULL;
}

int main(void)
{
	pthread_t rt[NREADERS], ut[NUPDATERS];
	const char *e = getenv("KK_STRESS_MS");
	long ms = e ? atol(e) : 1500;
	struct kk_shazptr_stats st;

	if (ms <= 0)
		ms = 1500;
	for (int i = 0; i < NSLOTS; i++)
		gp[i] = obj_new((uint64_t)i);
	for (int i = 0; i < NKEYS; i += 2)
		if (keyreg_shazptr_register(&keys[i]))
			return 1;
	for (long i = 0; i < NREADERS; i++)
		if (pthread_create(&rt[i], NULL, reader, (void *)i))
			return 1;
	for (long i = 0; i < NUPDATERS; i++)
		if (pthread_create(&ut[i], NULL, updater, (void *)i))
			return 1;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
	__atomic_store_n(&stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < NREADERS; i++)
		pthread_join(rt[i], NULL);
	for (int i = 0; i < NUPDATERS; i++)
		pthread_join(ut[i], NULL);

	for (int i = 0; i < NSLOTS; i++)
		obj_free(gp[i]);
	for (int i = 0; i < NKEYS; i++)
		keyreg_shazptr_unregister(&keys[i]);
	kk_shazptr_get_stats(&st);
	printf("reads %lu lookups %lu allocs %lu frees %lu errors %lu\n", reads, lookups,
	       allocs, frees, errors);
	printf("synchronize %llu, via scan thread %llu, longest %llu ns\n",
	       (unsigned long long)st.sync_calls, (unsigned long long)st.sync_scan_thread,
	       (unsigned long long)st.longest_wait_ns);
	if (errors || allocs != frees || keyreg_shazptr_count() != 0)
		return 1;
	if (reads == 0 || st.sync_calls == 0 || st.sync_scan_thread == 0) {
		fprintf(stderr, "the stress did not exercise all paths\n");
		return 1;
	}
	return 0;
}
