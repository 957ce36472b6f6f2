// SPDX-License-Identifier: MIT
/*
 * Kernel static keys, conformance: the rest of the API a kernel module uses,
 * one check per kernel-documented behaviour.
 *  - STATIC_KEY_TRUE_INIT / STATIC_KEY_FALSE_INIT are values: assignable.
 *  - static_branch_inc/dec and static_key_slow_inc/dec count references: the
 *    key is enabled while the count is above zero, and its sites follow.
 *  - static_key_fast_inc_not_disabled() takes a reference only on an
 *    enabled key.
 *  - static_branch_enable/disable are boolean; the _cpuslocked forms work
 *    under jump_label_lock().
 *  - deferred keys (jump_label_ratelimit.h): the last decrement waits for the
 *    timeout, static_key_deferred_flush() carries it out now;
 *    jump_label_rate_limit() sets up a struct static_key_deferred.
 * Build with -DTEST_STATIC_KEYS_WRONG to expect a wrong count: the module
 * must then fail to load (exit 1).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/jump_label.h>
#include <linux/jump_label_ratelimit.h>

#define CHECK(cond) do {							\
	if (!(cond)) {								\
		pr_err("line %d: %s\n", __LINE__, #cond);			\
		return -EINVAL;							\
	}									\
} while (0)

DEFINE_STATIC_KEY_FALSE(ref_key);
DEFINE_STATIC_KEY_TRUE(bool_key);
/* A long timeout: the check that the key is still on after the deferred
 * decrement cannot race with it; the flush then carries it out. */
DEFINE_STATIC_KEY_DEFERRED_FALSE(deferred_key, 600000);
DEFINE_STATIC_KEY_DEFERRED_TRUE(deferred_true_key, 600000);
static struct static_key_deferred rl_key;

static bool ref_site(void)
{
	return static_branch_unlikely(&ref_key);
}

static bool bool_site(void)
{
	return static_branch_likely(&bool_key);
}

static bool deferred_site(void)
{
	return static_branch_unlikely(&deferred_key.key);
}

static bool rl_site(void)
{
	return static_key_false(&rl_key.key);
}

static int test_init_values(void)
{
	struct static_key_false f;
	struct static_key_true t;

	f = STATIC_KEY_FALSE_INIT;
	t = STATIC_KEY_TRUE_INIT;
	CHECK(!static_key_enabled(&f) && static_key_count(&f.key) == 0);
	CHECK(static_key_enabled(&t) && static_key_count(&t.key) == 1);
	CHECK(static_key_initialized);
	return 0;
}

static int test_refcount(void)
{
	CHECK(!static_key_fast_inc_not_disabled(&ref_key.key));
	CHECK(static_key_count(&ref_key.key) == 0 && !ref_site());
	static_branch_inc(&ref_key);
	CHECK(ref_site());
	CHECK(static_key_fast_inc_not_disabled(&ref_key.key));
	static_key_slow_inc(&ref_key.key);
#ifdef TEST_STATIC_KEYS_WRONG
	CHECK(static_key_count(&ref_key.key) == 2);
#else
	CHECK(static_key_count(&ref_key.key) == 3);
#endif
	static_branch_dec(&ref_key);
	static_key_slow_dec(&ref_key.key);
	CHECK(static_key_enabled(&ref_key) && ref_site());
	static_branch_dec(&ref_key);
	CHECK(!static_key_enabled(&ref_key) && !ref_site());
	return 0;
}

static int test_bool(void)
{
	CHECK(bool_site());
	static_branch_disable(&bool_key);
	CHECK(!static_key_enabled(&bool_key) && !bool_site());
	static_branch_disable(&bool_key);	/* already off: stays off */
	CHECK(static_key_count(&bool_key.key) == 0);
	static_branch_enable(&bool_key);
	static_branch_enable(&bool_key);
	CHECK(static_key_count(&bool_key.key) == 1 && bool_site());

	jump_label_lock();
	static_branch_disable_cpuslocked(&bool_key);
	static_key_slow_inc_cpuslocked(&ref_key.key);
	jump_label_unlock();
	CHECK(!bool_site() && ref_site());
	jump_label_lock();
	static_branch_enable_cpuslocked(&bool_key);
	static_branch_dec_cpuslocked(&ref_key);
	static_branch_inc_cpuslocked(&ref_key);
	static_key_slow_dec_cpuslocked(&ref_key.key);
	static_key_enable_cpuslocked(&ref_key.key);
	static_key_disable_cpuslocked(&ref_key.key);
	jump_label_unlock();
	CHECK(bool_site() && !ref_site());
	return 0;
}

static int test_deferred(void)
{
	CHECK(!deferred_site());
	static_branch_deferred_inc(&deferred_key);
	CHECK(deferred_site());
	static_branch_slow_dec_deferred(&deferred_key);
	/* the last decrement waits for the timeout */
	CHECK(static_key_enabled(&deferred_key.key) && deferred_site());
	static_key_deferred_flush(&deferred_key);
	CHECK(!static_key_enabled(&deferred_key.key) && !deferred_site());

	/* above one reference the decrement is immediate */
	static_branch_deferred_inc(&deferred_true_key);
	CHECK(static_key_count(&deferred_true_key.key.key) == 2);
	static_branch_slow_dec_deferred(&deferred_true_key);
	CHECK(static_key_count(&deferred_true_key.key.key) == 1);

	jump_label_rate_limit(&rl_key, 600000);
	static_key_slow_inc(&rl_key.key);
	CHECK(rl_site());
	static_key_slow_dec_deferred(&rl_key);
	CHECK(static_key_enabled(&rl_key.key));
	static_key_deferred_flush(&rl_key);
	CHECK(!static_key_enabled(&rl_key.key) && !rl_site());
	return 0;
}

static int __init test_jump_label_api_init(void)
{
	int ret;

	ret = test_init_values();
	if (!ret)
		ret = test_refcount();
	if (!ret)
		ret = test_bool();
	if (!ret)
		ret = test_deferred();
	if (!ret)
		pr_info("all checks passed\n");
	return ret;
}

static void __exit test_jump_label_api_exit(void)
{
}

module_init(test_jump_label_api_init);
module_exit(test_jump_label_api_exit);

MODULE_LICENSE("GPL");
