// SPDX-License-Identifier: MIT
/*
 * The key registry of keyreg.h, built once per flavour:
 *   -DKEYREG_FLAVOR_SHAZPTR  (kernelkit shazptr)
 *   -DKEYREG_FLAVOR_RCU      (liburcu-memb; only this object needs -lurcu-memb)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

#include "keyreg.h"

#if defined(KEYREG_FLAVOR_SHAZPTR)
#include <kernelkit/shazptr.h>
#define KR(name) keyreg_shazptr_##name
#define READ_BEGIN(bucket) struct shazptr_guard g_ = shazptr_acquire(bucket)
#define READ_END() shazptr_clear(g_)
#define WAIT_READERS(bucket) synchronize_shazptr(bucket)
#define READER_ONLINE() do { } while (0)
#define READER_OFFLINE() do { } while (0)
#elif defined(KEYREG_FLAVOR_RCU)
#include <urcu/urcu-memb.h>
#define KR(name) keyreg_rcu_##name
#define READ_BEGIN(bucket) urcu_memb_read_lock(); (void)(bucket)
#define READ_END() urcu_memb_read_unlock()
#define WAIT_READERS(bucket) ((void)(bucket), urcu_memb_synchronize_rcu())
#define READER_ONLINE() urcu_memb_register_thread()
#define READER_OFFLINE() urcu_memb_unregister_thread()
#else
#error "define KEYREG_FLAVOR_SHAZPTR or KEYREG_FLAVOR_RCU"
#endif

#define KEYREG_BITS	8
#define KEYREG_SIZE	(1u << KEYREG_BITS)
#define KEY_MAGIC	0x6b65796b65796b65ull	/* "keykeyke" */
#define KEY_DEAD	0xdeaddeaddeaddeadull

struct kr_elem {
	uint64_t magic;
	const void *key;
	struct kr_elem *next;		/* read by lock-free readers */
};

struct kr_bucket {
	struct kr_elem *first;		/* read by lock-free readers */
} __attribute__((aligned(64)));

static struct kr_bucket table[KEYREG_SIZE];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long nkeys;

static struct kr_bucket *bucket_of(const void *key)
{
	uint64_t h = (uint64_t)(uintptr_t)key * 0x9e3779b97f4a7c15ull;

	return &table[h >> (64 - KEYREG_BITS)];
}

int KR(register)(const void *key)
{
	struct kr_bucket *b;
	struct kr_elem *e, *it;

	if (!key)
		return -EINVAL;
	e = malloc(sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->magic = KEY_MAGIC;
	e->key = key;
	b = bucket_of(key);
	pthread_mutex_lock(&table_lock);
	for (it = b->first; it; it = it->next) {
		if (it->key == key) {
			pthread_mutex_unlock(&table_lock);
			free(e);
			return -EEXIST;
		}
	}
	e->next = b->first;
	__atomic_store_n(&b->first, e, __ATOMIC_RELEASE);	/* publish */
	nkeys++;
	pthread_mutex_unlock(&table_lock);
	return 0;
}

int KR(lookup)(const void *key)
{
	struct kr_bucket *b;
	int found = 0;

	if (!key)
		return -EINVAL;
	b = bucket_of(key);
	READ_BEGIN(b);
	for (struct kr_elem *e = __atomic_load_n(&b->first, __ATOMIC_ACQUIRE); e;
	     e = __atomic_load_n(&e->next, __ATOMIC_ACQUIRE)) {
		if (e->magic != KEY_MAGIC) {
			found = -EIO;	/* a freed element: the wait was broken */
			break;
		}
		if (e->key == key) {
			found = 1;
			break;
		}
	}
	READ_END();
	return found;
}

int KR(unregister)(const void *key)
{
	struct kr_bucket *b;
	struct kr_elem **pp, *e;

	if (!key)
		return -EINVAL;
	b = bucket_of(key);
	pthread_mutex_lock(&table_lock);
	for (pp = &b->first; (e = *pp); pp = &e->next)
		if (e->key == key)
			break;
	if (!e) {
		pthread_mutex_unlock(&table_lock);
		return -ENOENT;
	}
	__atomic_store_n(pp, e->next, __ATOMIC_RELEASE);	/* unpublish */
	nkeys--;
	pthread_mutex_unlock(&table_lock);

	WAIT_READERS(b);	/* readers of this bucket may still see e */
	__atomic_store_n(&e->magic, KEY_DEAD, __ATOMIC_RELAXED);
	free(e);
	return 0;
}

unsigned long KR(count)(void)
{
	unsigned long n;

	pthread_mutex_lock(&table_lock);
	n = nkeys;
	pthread_mutex_unlock(&table_lock);
	return n;
}

void KR(reader_online)(void)
{
	READER_ONLINE();
}

void KR(reader_offline)(void)
{
	READER_OFFLINE();
}
