// SPDX-License-Identifier: MIT
/*
 * Deferred static keys on the library's worker: the kernel's semantics of
 * static_key_slow_dec_deferred() / static_key_deferred_flush(), and an object
 * unloaded while a deferred decrement of its key is pending (issue 9: the
 * deferred-work thread used to crash on the unloaded work).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <time.h>

#include <kernelkit/jump_label_ratelimit.h>
#include "kktest.h"

DEFINE_STATIC_KEY_DEFERRED_FALSE(dk_long, 60000);
DEFINE_STATIC_KEY_DEFERRED_FALSE(dk_short, 1);

__attribute__((noinline)) static int b_long(void) { return static_branch_unlikely(&dk_long.key); }
__attribute__((noinline)) static int b_short(void) { return static_branch_unlikely(&dk_short.key); }

/*
 * Bounded wait (10 s) for a deferred decrement carried out by the worker: the
 * count drops first, the code is patched after (as in the kernel), so wait
 * for the branch.
 */
static int wait_off(int (*branch)(void), struct static_key *k)
{
	struct timespec ts = { 0, 1000 * 1000 };

	for (int i = 0; i < 10000 && branch(); i++)
		nanosleep(&ts, NULL);
	return !branch() && static_key_count(k) == 0;
}

Test(jump_label_deferred, the_worker_carries_out_the_last_decrement)
{
	cr_assert_eq(static_branch_deferred_inc(&dk_short), 0);
	cr_assert_eq(b_short(), 1);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_short), 0);
	cr_assert(wait_off(b_short, &dk_short.key.key), "count %d", static_key_count(&dk_short.key.key));
}

Test(jump_label_deferred, decrements_above_one_are_immediate)
{
	cr_assert_eq(static_branch_deferred_inc(&dk_long), 0);
	cr_assert_eq(static_branch_deferred_inc(&dk_long), 0);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_long), 0);
	cr_assert_eq(static_key_count(&dk_long.key.key), 1, "2 -> 1 needs no patching");
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_long), 0);
	cr_assert_eq(static_key_count(&dk_long.key.key), 1, "the last one waits 60 s");
	/* schedule_delayed_work() on a pending work is a no-op */
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_long), 0);
	static_key_deferred_flush(&dk_long);
	cr_assert_eq(static_key_count(&dk_long.key.key), 0);
	cr_assert_eq(b_long(), 0);
	/* flushing again: nothing pending, nothing happens */
	static_key_deferred_flush(&dk_long);
	cr_assert_eq(static_key_count(&dk_long.key.key), 0);
}

Test(jump_label_deferred, rate_limit_then_decrement)
{
	static struct static_key_deferred d = { .key = STATIC_KEY_INIT_FALSE };

	jump_label_rate_limit(&d, 60000);
	cr_assert_eq(static_key_slow_inc(&d.key), 0);
	cr_assert_eq(static_key_slow_dec_deferred(&d), 0);
	cr_assert_eq(static_key_count(&d.key), 1);
	static_key_deferred_flush(&d);
	cr_assert_eq(static_key_count(&d.key), 0);
}

/*
 * Unload an object while a deferred decrement of its key is pending: the
 * decrement is cancelled, nothing touches the object's memory afterwards, and
 * the worker goes on serving later work.
 */
Test(jump_label_deferred, unloading_the_object_cancels_its_pending_decrement)
{
	const char *path = kkt_build_path("test/lib/libjump_label_deferred.so");
	int (*inc)(void), (*dec)(void), (*count)(void), (*branch)(void);
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	cr_assert(h, "dlopen: %s", dlerror());
	inc = (int (*)(void))dlsym(h, "jump_label_deferred_inc");
	dec = (int (*)(void))dlsym(h, "jump_label_deferred_dec");
	count = (int (*)(void))dlsym(h, "jump_label_deferred_count");
	branch = (int (*)(void))dlsym(h, "jump_label_deferred_branch");
	cr_assert(inc && dec && count && branch);
	cr_assert_eq(inc(), 0);
	cr_assert_eq(branch(), 1);
	cr_assert_eq(dec(), 0);
	cr_assert_eq(count(), 1, "the decrement is pending (60 s)");
	cr_assert_eq(dlclose(h), 0);
	cr_assert_null(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "the object is still loaded");

	/* The worker survives and runs later work. */
	cr_assert_eq(static_branch_deferred_inc(&dk_short), 0);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_short), 0);
	cr_assert(wait_off(b_short, &dk_short.key.key), "later work did not run");
}
