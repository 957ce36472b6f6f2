// SPDX-License-Identifier: MIT
/* The key registry consumer (examples/shazptr/keyreg.c), both flavours. */
#include <criterion/criterion.h>
#include <errno.h>
#include <urcu/urcu-memb.h>

#include "shazptr_util.h"
#include "../../examples/shazptr/keyreg.h"

static char keys[16];

#define API_TEST(pfx)								\
	cr_assert_eq(pfx##_register(NULL), -EINVAL);				\
	cr_assert_eq(pfx##_lookup(NULL), -EINVAL);				\
	cr_assert_eq(pfx##_unregister(NULL), -EINVAL);				\
	for (int i = 0; i < 16; i++)						\
		cr_assert_eq(pfx##_lookup(&keys[i]), 0);			\
	for (int i = 0; i < 16; i += 2)						\
		cr_assert_eq(pfx##_register(&keys[i]), 0);			\
	cr_assert_eq(pfx##_register(&keys[4]), -EEXIST);			\
	cr_assert_eq(pfx##_count(), 8);						\
	for (int i = 0; i < 16; i++)						\
		cr_assert_eq(pfx##_lookup(&keys[i]), !(i & 1), "key %d", i);	\
	cr_assert_eq(pfx##_unregister(&keys[1]), -ENOENT);			\
	for (int i = 0; i < 16; i += 2)						\
		cr_assert_eq(pfx##_unregister(&keys[i]), 0);			\
	cr_assert_eq(pfx##_count(), 0);						\
	for (int i = 0; i < 16; i++)						\
		cr_assert_eq(pfx##_lookup(&keys[i]), 0);

Test(shazptr_keyreg, api_shazptr)
{
	API_TEST(keyreg_shazptr)
}

Test(shazptr_keyreg, api_rcu)
{
	keyreg_rcu_reader_online();
	API_TEST(keyreg_rcu)
	keyreg_rcu_reader_offline();
}

struct unreg {
	int (*fn)(const void *key);
	const void *key;
	int ret, done;
	pthread_t thread;
};

static void *unreg_fn(void *arg)
{
	struct unreg *u = arg;

	u->ret = u->fn(u->key);
	__atomic_store_n(&u->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

/* Unregister must wait for a reader inside its read section. */
Test(shazptr_keyreg, unregister_waits_for_shazptr_reader)
{
	struct unreg u = { keyreg_shazptr_unregister, &keys[3], -1, 0, 0 };

	cr_assert_eq(keyreg_shazptr_register(&keys[3]), 0);
	/* An outermost guard on the wildcard holds back every bucket. */
	struct shazptr_guard g = shazptr_acquire(SHAZPTR_WILDCARD);
	unsigned long long before = shzt_handoffs();

	cr_assert_eq(pthread_create(&u.thread, NULL, unreg_fn, &u), 0);
	/* Unlinked, then waiting for us: its synchronize handed off (polled,
	 * not a fixed sleep: on a busy machine the thread may not have run). */
	cr_assert(shzt_wait_handoffs(before + 1), "unregister never waited");
	shzt_sleep_ms(SHZT_HOLD_MS);
	cr_assert_not(__atomic_load_n(&u.done, __ATOMIC_ACQUIRE),
		      "unregister freed the key while a reader could see it");
	cr_assert_eq(keyreg_shazptr_lookup(&keys[3]), 0, "already unlinked");
	shazptr_clear(g);
	cr_assert(shzt_wait_flag(&u.done, SHZT_BOUND_MS));
	pthread_join(u.thread, NULL);
	cr_assert_eq(u.ret, 0);
}

Test(shazptr_keyreg, unregister_waits_for_rcu_reader)
{
	struct unreg u = { keyreg_rcu_unregister, &keys[3], -1, 0, 0 };

	keyreg_rcu_reader_online();
	cr_assert_eq(keyreg_rcu_register(&keys[3]), 0);
	urcu_memb_read_lock();
	cr_assert_eq(pthread_create(&u.thread, NULL, unreg_fn, &u), 0);
	shzt_sleep_ms(SHZT_HOLD_MS);
	cr_assert_not(__atomic_load_n(&u.done, __ATOMIC_ACQUIRE));
	urcu_memb_read_unlock();
	cr_assert(shzt_wait_flag(&u.done, SHZT_BOUND_MS));
	pthread_join(u.thread, NULL);
	cr_assert_eq(u.ret, 0);
	keyreg_rcu_reader_offline();
}
