// SPDX-License-Identifier: MIT
/* shazptr slots and thread lifetime: exit while holding, slot reuse, and a
 * guard taken from another TLS destructor after ours already ran. */
#include <criterion/criterion.h>
#include <errno.h>

#include "shazptr_util.h"

static int a, b;

static void *exit_holding(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(arg);

	(void)g;	/* never cleared */
	return NULL;
}

static void *exit_holding_wildcard(void *arg)
{
	struct shazptr_guard g1 = shazptr_acquire(arg);
	struct shazptr_guard g2 = shazptr_acquire(&b);

	(void)g1;
	(void)g2;
	pthread_exit(NULL);
}

static void check_exit_releases(void *(*fn)(void *))
{
	pthread_t t;
	struct shzt_syncer s;
	struct kk_shazptr_stats before, after;

	kk_shazptr_get_stats(&before);
	cr_assert_eq(pthread_create(&t, NULL, fn, &a), 0);
	pthread_join(t, NULL);
	cr_assert_eq(kk_shazptr_scan(&a), 0, "the exited thread's slot was emptied");
	for (int skip = 0; skip < 2; skip++) {
		kk_shazptr_set_skip_synchronize_self_scan(skip);
		cr_assert_eq(shzt_syncer_start(&s, &a), 0);
		cr_assert(shzt_syncer_finish(&s), "synchronize does not wait for a dead thread");
	}
	kk_shazptr_get_stats(&after);
	cr_assert_eq(after.slots_in_use, before.slots_in_use);
}

Test(shazptr_thread, exit_while_holding)
{
	check_exit_releases(exit_holding);
}

Test(shazptr_thread, exit_while_holding_wildcard)
{
	check_exit_releases(exit_holding_wildcard);
}

static void *acquire_once(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(arg);

	shazptr_clear(g);
	return NULL;
}

Test(shazptr_thread, slots_are_reused)
{
	struct kk_shazptr_stats st0, st;
	struct shazptr_guard g = shazptr_acquire(&a);	/* register main */

	shazptr_clear(g);
	kk_shazptr_get_stats(&st0);
	for (int i = 0; i < 300; i++) {
		pthread_t t;

		cr_assert_eq(pthread_create(&t, NULL, acquire_once, &b), 0);
		pthread_join(t, NULL);
	}
	kk_shazptr_get_stats(&st);
	cr_assert_eq(st.slots_in_use, st0.slots_in_use);
	cr_assert_eq(st.slots, st0.slots, "300 short-lived threads reused one slot");
}

Test(shazptr_thread, many_live_threads)
{
	enum { N = 40 };
	pthread_t t[N];
	struct kk_shazptr_stats st0, st;

	kk_shazptr_get_stats(&st0);
	for (int i = 0; i < N; i++)
		cr_assert_eq(pthread_create(&t[i], NULL, exit_holding, &b), 0);
	for (int i = 0; i < N; i++)
		pthread_join(t[i], NULL);
	kk_shazptr_get_stats(&st);
	cr_assert_eq(st.slots_in_use, st0.slots_in_use);
	cr_assert_eq(kk_shazptr_scan(&b), 0);
}

/*
 * TLS destructor order: a key created after the library's runs its destructor
 * after ours; if it takes a guard there (and even keeps it), the thread must
 * re-register and be released again, not leak a slot that blocks forever.
 */
static pthread_key_t late_key;

static void late_dtor(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(arg);

	(void)g;	/* held at exit */
}

static void *with_late_dtor(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(&b);	/* registers first */

	shazptr_clear(g);
	pthread_setspecific(late_key, arg);
	return NULL;
}

Test(shazptr_thread, guard_taken_in_a_later_tls_destructor)
{
	pthread_t t;
	struct shzt_syncer s;
	struct kk_shazptr_stats st0, st;

	cr_assert_eq(pthread_key_create(&late_key, late_dtor), 0);
	kk_shazptr_get_stats(&st0);
	cr_assert_eq(pthread_create(&t, NULL, with_late_dtor, &a), 0);
	pthread_join(t, NULL);
	kk_shazptr_get_stats(&st);
	cr_assert_eq(st.slots_in_use, st0.slots_in_use, "no slot leaked");
	cr_assert_eq(kk_shazptr_scan(&a), 0);
	cr_assert_eq(shzt_syncer_start(&s, &a), 0);
	cr_assert(shzt_syncer_finish(&s));
}
