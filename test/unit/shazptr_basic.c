// SPDX-License-Identifier: MIT
/* shazptr: slot contents, wildcard nesting, the non-blocking scan, bad input. */
#include <criterion/criterion.h>
#include <errno.h>

#include "shazptr_util.h"

static int a, b, c;

Test(shazptr_basic, acquire_publishes_and_clear_empties)
{
	struct shazptr_guard g = shazptr_acquire(&a);

	cr_assert_not_null(__kk_shazptr_slot, "the thread registered on first use");
	cr_assert_eq(g.slot, __kk_shazptr_slot);
	cr_assert_not(g.use_wildcard);
	cr_assert_eq(shzt_slot_value(), &a);
	shazptr_clear(g);
	cr_assert_null(shzt_slot_value());
}

Test(shazptr_basic, nested_acquire_uses_wildcard_until_outermost_clear)
{
	struct shazptr_guard g1 = shazptr_acquire(&a);
	struct shazptr_guard g2 = shazptr_acquire(&b);

	cr_assert_not(g1.use_wildcard);
	cr_assert(g2.use_wildcard, "nested acquire falls back to the wildcard");
	cr_assert_eq(shzt_slot_value(), SHAZPTR_WILDCARD);

	struct shazptr_guard g3 = shazptr_acquire(&c);

	cr_assert(g3.use_wildcard);
	shazptr_clear(g3);
	cr_assert_eq(shzt_slot_value(), SHAZPTR_WILDCARD, "inner clear keeps the wildcard");
	shazptr_clear(g2);
	cr_assert_eq(shzt_slot_value(), SHAZPTR_WILDCARD, "still inside the outer guard");
	cr_assert_eq(kk_shazptr_scan(&c), -EBUSY, "the wildcard blocks every pointer");
	shazptr_clear(g1);
	cr_assert_null(shzt_slot_value());
	cr_assert_eq(kk_shazptr_scan(&c), 0);
}

Test(shazptr_basic, scan_sees_own_and_other_pointers)
{
	cr_assert_eq(kk_shazptr_scan(&a), 0);
	struct shazptr_guard g = shazptr_acquire(&a);

	cr_assert_eq(kk_shazptr_scan(&a), -EBUSY);
	cr_assert_eq(kk_shazptr_scan(&b), 0, "a slot holding &a does not block &b");
	shazptr_clear(g);
	cr_assert_eq(kk_shazptr_scan(&a), 0);
}

Test(shazptr_basic, bad_input_rejected)
{
	cr_assert_eq(kk_shazptr_scan(NULL), -EINVAL);
	cr_assert_eq(kk_shazptr_scan(SHAZPTR_WILDCARD), -EINVAL);

	/* NULL would match every empty slot: it must return, not hang. */
	struct shzt_syncer s;

	cr_assert_eq(shzt_syncer_start(&s, NULL), 0);
	cr_assert(shzt_syncer_finish(&s), "synchronize_shazptr(NULL) returned");
	cr_assert_eq(shzt_syncer_start(&s, SHAZPTR_WILDCARD), 0);
	cr_assert(shzt_syncer_finish(&s), "synchronize_shazptr(WILDCARD) returned");

	/* Acquiring NULL protects nothing and leaves the slot usable. */
	struct shazptr_guard g = shazptr_acquire(NULL);

	cr_assert_null(shzt_slot_value());
	shazptr_clear(g);
	g = shazptr_acquire(&a);
	cr_assert_not(g.use_wildcard);
	shazptr_clear(g);

	kk_shazptr_get_stats(NULL);	/* no crash */
}

Test(shazptr_basic, unblocked_synchronize_needs_no_scan_thread)
{
	unsigned long long before = shzt_handoffs();
	struct shazptr_guard g = shazptr_acquire(&b);	/* holds another pointer */
	struct kk_shazptr_stats st;

	synchronize_shazptr(&a);	/* this thread holds &b: not a self-deadlock */
	shazptr_clear(g);
	for (int i = 0; i < 100; i++)
		synchronize_shazptr(&a);
	cr_assert_eq(shzt_handoffs(), before, "the self-scan was enough");
	kk_shazptr_get_stats(&st);
	cr_assert_geq(st.sync_calls, 101);
	cr_assert_geq(st.slots_in_use, 1);
	cr_assert_geq(st.slots, st.slots_in_use);
}

Test(shazptr_basic, skip_setting_roundtrip)
{
	bool old = kk_shazptr_set_skip_synchronize_self_scan(true);

	cr_assert_not(old);
	cr_assert(kk_shazptr_get_skip_synchronize_self_scan());
	unsigned long long before = shzt_handoffs();

	synchronize_shazptr(&a);
	cr_assert_eq(shzt_handoffs(), before + 1, "skip sends the wait to the scan thread");
	cr_assert(kk_shazptr_set_skip_synchronize_self_scan(false));
	synchronize_shazptr(&a);
	cr_assert_eq(shzt_handoffs(), before + 1);
}
