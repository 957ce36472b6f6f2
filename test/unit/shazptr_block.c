// SPDX-License-Identifier: MIT
/*
 * A reader that holds ptr holds back synchronize_shazptr(ptr) on every path:
 * the caller's self-scan, the scan thread after a blocked self-scan, and the
 * scan thread alone (skip_synchronize_self_scan).  The seed's kthread path
 * compared the slots against NULL (the waiter's ptr was never set), so only
 * wildcard readers held it back: the non-wildcard cases here catch that.
 */
#include <criterion/criterion.h>
#include <errno.h>

#include "shazptr_util.h"

static int obj, other, third;

/* Hold @held (from this thread) and check that synchronize(&obj) waits. */
static void check_blocks(void *held, bool skip_self_scan, bool expect_handoff)
{
	struct shzt_syncer s;
	unsigned long long before = shzt_handoffs();

	kk_shazptr_set_skip_synchronize_self_scan(skip_self_scan);
	struct shazptr_guard g = shazptr_acquire(held);

	cr_assert_not(g.use_wildcard);
	cr_assert_eq(kk_shazptr_scan(&obj), -EBUSY, "the self-scan sees the holder");
	cr_assert_eq(shzt_syncer_start(&s, &obj), 0);
	/* Wait for the handoff, not a fixed time: on a busy machine the syncer
	 * may not have scanned yet after SHZT_HOLD_MS. */
	if (expect_handoff)
		cr_assert(shzt_wait_handoffs(before + 1), "the wait went to the scan thread");
	shzt_sleep_ms(SHZT_HOLD_MS);
	cr_assert_not(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE),
		      "synchronize_shazptr returned while a reader held the pointer");
	if (expect_handoff)
		cr_assert_eq(shzt_handoffs(), before + 1, "one handoff, not more");
	shazptr_clear(g);
	cr_assert(shzt_syncer_finish(&s), "synchronize_shazptr returned after the clear");
	cr_assert_eq(kk_shazptr_scan(&obj), 0);
}

Test(shazptr_block, self_scan_then_scan_thread)
{
	check_blocks(&obj, false, true);
}

Test(shazptr_block, skip_self_scan)
{
	check_blocks(&obj, true, true);
}

Test(shazptr_block, wildcard_holder_blocks_any_pointer)
{
	/* A guard on SHAZPTR_WILDCARD itself is an outermost wildcard. */
	check_blocks(SHAZPTR_WILDCARD, false, true);
	check_blocks(SHAZPTR_WILDCARD, true, true);
}

Test(shazptr_block, nested_wildcard_blocks_until_outermost_clear)
{
	for (int skip = 0; skip < 2; skip++) {
		struct shzt_syncer s;
		unsigned long long before = shzt_handoffs();

		kk_shazptr_set_skip_synchronize_self_scan(skip);
		struct shazptr_guard g1 = shazptr_acquire(&other);
		struct shazptr_guard g2 = shazptr_acquire(&third);

		cr_assert(g2.use_wildcard);
		cr_assert_eq(shzt_syncer_start(&s, &obj), 0);
		/* It is waiting (its wait went to the scan thread), not yet started. */
		cr_assert(shzt_wait_handoffs(before + 1), "the wait went to the scan thread");
		shzt_sleep_ms(SHZT_HOLD_MS / 2);
		cr_assert_not(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE));
		shazptr_clear(g2);
		shzt_sleep_ms(SHZT_HOLD_MS / 2);
		cr_assert_not(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE),
			      "the wildcard stays until the outermost guard is cleared");
		shazptr_clear(g1);
		cr_assert(shzt_syncer_finish(&s));
	}
}

/* A holder in another thread, a waiter for a different pointer next to it. */
struct holder {
	void *ptr;
	int held, release;
	pthread_t thread;
};

static void *holder_fn(void *arg)
{
	struct holder *h = arg;
	struct shazptr_guard g = shazptr_acquire(h->ptr);

	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	shzt_wait_flag(&h->release, SHZT_BOUND_MS);
	shazptr_clear(g);
	return NULL;
}

static void batched(bool skip)
{
	struct holder h = { .ptr = &obj };
	struct shzt_syncer s_obj, s_other;
	unsigned long long before = shzt_handoffs();

	kk_shazptr_set_skip_synchronize_self_scan(skip);
	cr_assert_eq(pthread_create(&h.thread, NULL, holder_fn, &h), 0);
	cr_assert(shzt_wait_flag(&h.held, SHZT_BOUND_MS));
	cr_assert_eq(shzt_syncer_start(&s_obj, &obj), 0);
	/* The waiter for the held pointer waits before the other one comes. */
	cr_assert(shzt_wait_handoffs(before + 1), "the wait went to the scan thread");
	cr_assert_eq(shzt_syncer_start(&s_other, &other), 0);
	cr_assert(shzt_syncer_finish(&s_other),
		  "a waiter for an unheld pointer finishes while another waits");
	shzt_sleep_ms(SHZT_HOLD_MS);
	cr_assert_not(__atomic_load_n(&s_obj.done, __ATOMIC_ACQUIRE),
		      "the waiter for the held pointer is still blocked");
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	pthread_join(h.thread, NULL);
	cr_assert(shzt_syncer_finish(&s_obj));
}

Test(shazptr_block, holder_in_other_thread_scan_thread)
{
	batched(false);
}

Test(shazptr_block, holder_in_other_thread_skip_self_scan)
{
	batched(true);
}

/* Many waiters on the same held pointer are all released by one clear. */
Test(shazptr_block, many_waiters_one_holder)
{
	enum { N = 8 };
	struct shzt_syncer s[N];
	unsigned long long before = shzt_handoffs();
	struct shazptr_guard g = shazptr_acquire(&obj);

	for (int i = 0; i < N; i++) {
		kk_shazptr_set_skip_synchronize_self_scan(i & 1);
		cr_assert_eq(shzt_syncer_start(&s[i], &obj), 0);
	}
	/* Every one of them is waiting, not yet started. */
	cr_assert(shzt_wait_handoffs(before + N), "%llu of %d waits went to the scan thread",
		  shzt_handoffs() - before, N);
	shzt_sleep_ms(SHZT_HOLD_MS);
	for (int i = 0; i < N; i++)
		cr_assert_not(__atomic_load_n(&s[i].done, __ATOMIC_ACQUIRE));
	shazptr_clear(g);
	for (int i = 0; i < N; i++)
		cr_assert(shzt_syncer_finish(&s[i]));
}

/*
 * synchronize_shazptr(ptr) waits for the slots that held ptr when it started
 * (docs/shazptr.md): a reader that takes ptr after that, in another slot,
 * does not hold it back once the early reader has let go.  (A group once
 * seen clear is dropped from the waiter's set for good.)
 */
Test(shazptr_block, reader_that_came_after_the_call_does_not_hold_it)
{
	struct holder early = { .ptr = &obj }, late = { .ptr = &obj };
	struct shzt_syncer s;
	unsigned long long before = shzt_handoffs();

	cr_assert_eq(pthread_create(&early.thread, NULL, holder_fn, &early), 0);
	cr_assert(shzt_wait_flag(&early.held, SHZT_BOUND_MS));
	cr_assert_eq(shzt_syncer_start(&s, &obj), 0);
	cr_assert(shzt_wait_handoffs(before + 1), "the wait went to the scan thread");
	cr_assert_eq(pthread_create(&late.thread, NULL, holder_fn, &late), 0);
	cr_assert(shzt_wait_flag(&late.held, SHZT_BOUND_MS));
	__atomic_store_n(&early.release, 1, __ATOMIC_RELEASE);
	pthread_join(early.thread, NULL);
	cr_expect(shzt_syncer_finish(&s),
		  "a reader that took the pointer after synchronize_shazptr() started held it back");
	__atomic_store_n(&late.release, 1, __ATOMIC_RELEASE);
	pthread_join(late.thread, NULL);
	if (!__atomic_load_n(&s.done, __ATOMIC_ACQUIRE))
		cr_assert(shzt_syncer_finish(&s));
}
