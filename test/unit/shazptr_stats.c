// SPDX-License-Identifier: MIT
/* The control files shazptr/stats and shazptr/skip_synchronize_self_scan. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include "shazptr_util.h"

static int a;

static unsigned long long field(const char *text, const char *name)
{
	const char *p = strstr(text, name);

	cr_assert_not_null(p, "no %s in:\n%s", name, text);
	return strtoull(p + strlen(name), NULL, 10);
}

Test(shazptr_stats, counts_calls_handoffs_and_longest_wait)
{
	char *text = NULL;
	size_t len = 0;
	struct shzt_syncer s;

	cr_assert_eq(kk_control_write("shazptr/stats", "reset\n", 6, NULL), 0);
	for (int i = 0; i < 3; i++)
		synchronize_shazptr(&a);
	struct shazptr_guard g = shazptr_acquire(&a);

	cr_assert_eq(shzt_syncer_start(&s, &a), 0);
	/* Clear once the syncer has handed its wait to the scan thread, not
	 * after a fixed 20 ms: a syncer not yet scheduled would find the guard
	 * gone and never wait. */
	cr_assert(shzt_wait_handoffs(1), "the syncer never waited for the guard");
	shazptr_clear(g);
	cr_assert(shzt_syncer_finish(&s));

	cr_assert_eq(kk_control_read("shazptr/stats", &text, &len), 0);
	cr_assert_eq(field(text, "synchronize_calls "), 4);
	cr_assert_eq(field(text, "scan_thread_waits "), 1);
	cr_assert_geq(field(text, "longest_wait_ns "), 1, "the blocked call waited");
	cr_assert_geq(field(text, "scan_rounds "), 1);
	cr_assert_geq(field(text, "slots_in_use "), 1);
	free(text);

	cr_assert_eq(kk_control_write("shazptr/stats", "reset", 5, NULL), 0);
	cr_assert_eq(kk_control_read("shazptr/stats", &text, &len), 0);
	cr_assert_eq(field(text, "synchronize_calls "), 0);
	cr_assert_eq(field(text, "longest_wait_ns "), 0);
	free(text);

	char *reply = NULL;

	cr_assert_eq(kk_control_write("shazptr/stats", "bogus", 5, &reply), -EINVAL);
	free(reply);
}

Test(shazptr_stats, skip_file)
{
	char *text = NULL, *reply = NULL;
	size_t len;

	cr_assert_eq(kk_control_write("shazptr/skip_synchronize_self_scan", "1\n", 2, NULL), 0);
	cr_assert(kk_shazptr_get_skip_synchronize_self_scan());
	cr_assert_eq(kk_control_read("shazptr/skip_synchronize_self_scan", &text, &len), 0);
	cr_assert_str_eq(text, "1\n");
	free(text);
	cr_assert_eq(kk_control_write("shazptr/skip_synchronize_self_scan", "0", 1, NULL), 0);
	cr_assert_not(kk_shazptr_get_skip_synchronize_self_scan());
	cr_assert_eq(kk_control_write("shazptr/skip_synchronize_self_scan", "maybe", 5, &reply),
		     -EINVAL);
	free(reply);
	cr_assert_not(kk_shazptr_get_skip_synchronize_self_scan());
}

/* The stats file takes skip_synchronize_self_scan back as 0 or 1 only: a
 * longer value is refused, and refused whole (nothing applied). */
Test(shazptr_stats, stats_file_refuses_a_skip_value_that_is_not_0_or_1)
{
	static const char *const bad[] = { "10", "11", "1x", "01", "", "2" };

	kk_shazptr_set_skip_synchronize_self_scan(false);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char line[64], *reply = NULL;
		int n = snprintf(line, sizeof(line), "skip_synchronize_self_scan %s\n", bad[i]);

		cr_expect_eq(kk_control_write("shazptr/stats", line, (size_t)n, &reply), -EINVAL,
			     "'%s' was taken: %s", bad[i], reply ? reply : "");
		free(reply);
		cr_expect_not(kk_shazptr_get_skip_synchronize_self_scan(), "'%s' set the skip", bad[i]);
		kk_shazptr_set_skip_synchronize_self_scan(false);
	}
	cr_expect_eq(kk_control_write("shazptr/stats", "skip_synchronize_self_scan 1\n", 29, NULL), 0);
	cr_expect(kk_shazptr_get_skip_synchronize_self_scan());
	kk_shazptr_set_skip_synchronize_self_scan(false);
}
