// SPDX-License-Identifier: MIT
/*
 * The order of a write to dynamic_debug/control (docs/dynamic_debug.md, "A
 * write's order"): a site that turns on takes its new flags before its code
 * is patched, and a site that turns off keeps its flags until its code is
 * patched back.  So a call through a branch that is still live never finds
 * the flags already clear, and the first call through a new branch finds
 * them set.  kk_text_write_hook (white-box) is called at every text write of
 * the key switch, and reads the site's flags there.
 */
#include <criterion/criterion.h>
#include <stdatomic.h>

#include "dynamic_debug_util.h"
#include "kktest.h"
#include "text_poke.h"

#ifdef KK_NO_JUMP_LABEL
Test(dynamic_debug_write_order, flags_are_there_at_every_text_write_of_the_switch)
{
	cr_skip_test("KK_NO_JUMP_LABEL: a site is a load+test+branch, no text is written");
}
#else
static struct _ddebug *order_desc;
static atomic_uint writes, writes_without_p;

__attribute__((noinline)) static int order_site(int v)
{
	DEFINE_DYNAMIC_DEBUG_METADATA(dd_write_order, "write order %d\n");

	order_desc = &dd_write_order;
	if (DYNAMIC_DEBUG_BRANCH(dd_write_order)) {
		__dynamic_pr_debug(&dd_write_order, "write order %d\n", v);
		return 1;
	}
	return 0;
}

static int note_flags(int step, unsigned long addr, unsigned long len)
{
	(void)step;
	(void)addr;
	(void)len;
	atomic_fetch_add(&writes, 1);
	if (!(__atomic_load_n(&order_desc->flags, __ATOMIC_RELAXED) & _DPRINTK_FLAGS_PRINT))
		atomic_fetch_add(&writes_without_p, 1);
	return 0;
}

/* Write @q with the hook on; every text write it made saw p set. */
static void write_seeing_p(const char *q)
{
	char *r = NULL;

	atomic_store(&writes, 0);
	atomic_store(&writes_without_p, 0);
	kk_text_write_hook = note_flags;
	cr_assert_eq(dynamic_debug_write(q, &r), 0, "%s: %s", q, r);
	kk_text_write_hook = NULL;
	free(r);
	cr_assert_gt(atomic_load(&writes), 0, "'%s' wrote no text", q);
	cr_expect_eq(atomic_load(&writes_without_p), 0, "'%s': %u of %u text writes saw the site "
		     "without p", q, atomic_load(&writes_without_p), atomic_load(&writes));
}

Test(dynamic_debug_write_order, flags_are_there_at_every_text_write_of_the_switch)
{
	kkt_live_protocol();
	cr_assert_eq(order_site(0), 0);
	cr_assert_not_null(order_desc);
	write_seeing_p("func order_site =p");	/* turning on: p before the patch */
	cr_assert_eq(order_site(1), 1);
	write_seeing_p("func order_site =_");	/* turning off: p until the patch is done */
	cr_assert_eq(order_site(2), 0);
	cr_expect_eq(__atomic_load_n(&order_desc->flags, __ATOMIC_RELAXED) & _DPRINTK_FLAGS_PRINT, 0,
		     "the flags were not cleared once the site was off");
}
#endif
