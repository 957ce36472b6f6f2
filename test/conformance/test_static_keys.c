// SPDX-License-Identifier: MIT
/*
 * Kernel static keys, conformance: a kernel-style module in the shape of the
 * kernel's lib/test_static_keys.c.  A table lists keys of every kind (the old
 * struct static_key API, TRUE/FALSE keys with likely and unlikely branches,
 * array elements, MAYBE keys, and keys that the base module,
 * libstatic_key_base.so, defined and partly inverted in its own init), each
 * with the state it must have and a function that runs a branch on it.
 * The module checks static_key_enabled(), jump_label_enabled() and the branch
 * of every entry, inverts every key, checks again, and restores them.
 *
 * Build with -DTEST_STATIC_KEYS_WRONG to give one entry a wrong expected
 * state: the module must then fail to load (exit 1).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/jump_label.h>

#define CONFIG_TEST_SK_ON 1
/* CONFIG_TEST_SK_OFF is not set */

/* keys of this module */
struct static_key old_true_key = STATIC_KEY_INIT_TRUE;
struct static_key old_false_key = STATIC_KEY_INIT_FALSE;
DEFINE_STATIC_KEY_TRUE(true_key);
DEFINE_STATIC_KEY_FALSE(false_key);
DEFINE_STATIC_KEY_TRUE_RO(true_ro_key);
DEFINE_STATIC_KEY_FALSE_RO(false_ro_key);
DEFINE_STATIC_KEY_ARRAY_TRUE(true_keys, 3);
DEFINE_STATIC_KEY_ARRAY_FALSE(false_keys, 3);
DEFINE_STATIC_KEY_MAYBE(CONFIG_TEST_SK_ON, maybe_on_key);
DEFINE_STATIC_KEY_MAYBE(CONFIG_TEST_SK_OFF, maybe_off_key);
DEFINE_STATIC_KEY_MAYBE_RO(CONFIG_TEST_SK_ON, maybe_on_ro_key);

/* keys of the base module */
extern struct static_key base_old_true_key;
extern struct static_key base_inv_old_true_key;
extern struct static_key base_old_false_key;
extern struct static_key base_inv_old_false_key;
DECLARE_STATIC_KEY_TRUE(base_true_key);
DECLARE_STATIC_KEY_TRUE(base_inv_true_key);
DECLARE_STATIC_KEY_FALSE(base_false_key);
DECLARE_STATIC_KEY_FALSE(base_inv_false_key);
DECLARE_STATIC_KEY_ARRAY_FALSE(base_false_keys, 4);
DECLARE_STATIC_KEY_MAYBE(CONFIG_TEST_SK_OFF, base_false_key);
bool base_false_key_site(void);

struct test_key {
	const char *name;
	bool init_state;
	struct static_key *key;
	bool (*test_key)(void);
};

/* One function per (key, branch macro): the branch is a site of its own. */
#define KEY_TEST(fn, branch, keyp)						\
	static bool fn(void)							\
	{									\
		if (branch(keyp))						\
			return true;						\
		return false;							\
	}

KEY_TEST(old_true_key_static_key_true, static_key_true, &old_true_key)
KEY_TEST(old_false_key_static_key_false, static_key_false, &old_false_key)
KEY_TEST(true_key_likely, static_branch_likely, &true_key)
KEY_TEST(true_key_unlikely, static_branch_unlikely, &true_key)
KEY_TEST(false_key_likely, static_branch_likely, &false_key)
KEY_TEST(false_key_unlikely, static_branch_unlikely, &false_key)
KEY_TEST(true_ro_key_likely, static_branch_likely, &true_ro_key)
KEY_TEST(false_ro_key_unlikely, static_branch_unlikely, &false_ro_key)
KEY_TEST(true_keys1_likely, static_branch_likely, &true_keys[1])
KEY_TEST(true_keys2_unlikely, static_branch_unlikely, &true_keys[2])
KEY_TEST(false_keys0_likely, static_branch_likely, &false_keys[0])
KEY_TEST(false_keys2_unlikely, static_branch_unlikely, &false_keys[2])

static bool maybe_on_key_maybe(void)
{
	return static_branch_maybe(CONFIG_TEST_SK_ON, &maybe_on_key);
}

static bool maybe_off_key_maybe(void)
{
	return static_branch_maybe(CONFIG_TEST_SK_OFF, &maybe_off_key);
}

static bool maybe_on_ro_key_maybe(void)
{
	return static_branch_maybe(CONFIG_TEST_SK_ON, &maybe_on_ro_key);
}

KEY_TEST(base_old_true_key_static_key_true, static_key_true, &base_old_true_key)
KEY_TEST(base_inv_old_true_key_static_key_true, static_key_true, &base_inv_old_true_key)
KEY_TEST(base_old_false_key_static_key_false, static_key_false, &base_old_false_key)
KEY_TEST(base_inv_old_false_key_static_key_false, static_key_false, &base_inv_old_false_key)
KEY_TEST(base_true_key_likely, static_branch_likely, &base_true_key)
KEY_TEST(base_true_key_unlikely, static_branch_unlikely, &base_true_key)
KEY_TEST(base_inv_true_key_likely, static_branch_likely, &base_inv_true_key)
KEY_TEST(base_inv_true_key_unlikely, static_branch_unlikely, &base_inv_true_key)
KEY_TEST(base_false_key_likely, static_branch_likely, &base_false_key)
KEY_TEST(base_false_key_unlikely, static_branch_unlikely, &base_false_key)
KEY_TEST(base_inv_false_key_likely, static_branch_likely, &base_inv_false_key)
KEY_TEST(base_inv_false_key_unlikely, static_branch_unlikely, &base_inv_false_key)
KEY_TEST(base_false_keys3_unlikely, static_branch_unlikely, &base_false_keys[3])

#define ENTRY(init, k, fn)	{ #fn, (init), (k), fn }

static struct test_key static_key_tests[] = {
	ENTRY(true, &old_true_key, old_true_key_static_key_true),
	ENTRY(false, &old_false_key, old_false_key_static_key_false),
#ifdef TEST_STATIC_KEYS_WRONG
	ENTRY(false, &true_key.key, true_key_likely),
#else
	ENTRY(true, &true_key.key, true_key_likely),
#endif
	ENTRY(true, &true_key.key, true_key_unlikely),
	ENTRY(false, &false_key.key, false_key_likely),
	ENTRY(false, &false_key.key, false_key_unlikely),
	ENTRY(true, &true_ro_key.key, true_ro_key_likely),
	ENTRY(false, &false_ro_key.key, false_ro_key_unlikely),
	ENTRY(true, &true_keys[1].key, true_keys1_likely),
	ENTRY(true, &true_keys[2].key, true_keys2_unlikely),
	ENTRY(false, &false_keys[0].key, false_keys0_likely),
	ENTRY(false, &false_keys[2].key, false_keys2_unlikely),
	ENTRY(true, &maybe_on_key.key, maybe_on_key_maybe),
	ENTRY(false, &maybe_off_key.key, maybe_off_key_maybe),
	ENTRY(true, &maybe_on_ro_key.key, maybe_on_ro_key_maybe),
	ENTRY(true, &base_old_true_key, base_old_true_key_static_key_true),
	ENTRY(false, &base_inv_old_true_key, base_inv_old_true_key_static_key_true),
	ENTRY(false, &base_old_false_key, base_old_false_key_static_key_false),
	ENTRY(true, &base_inv_old_false_key, base_inv_old_false_key_static_key_false),
	ENTRY(true, &base_true_key.key, base_true_key_likely),
	ENTRY(true, &base_true_key.key, base_true_key_unlikely),
	ENTRY(false, &base_inv_true_key.key, base_inv_true_key_likely),
	ENTRY(false, &base_inv_true_key.key, base_inv_true_key_unlikely),
	ENTRY(false, &base_false_key.key, base_false_key_likely),
	ENTRY(false, &base_false_key.key, base_false_key_unlikely),
	ENTRY(true, &base_inv_false_key.key, base_inv_false_key_likely),
	ENTRY(true, &base_inv_false_key.key, base_inv_false_key_unlikely),
	ENTRY(false, &base_false_keys[3].key, base_false_keys3_unlikely),
};

/* Every key has the expected state, and every branch on it agrees. */
static int verify_keys(struct test_key *keys, int size, bool invert)
{
	int i;

	for (i = 0; i < size; i++) {
		bool want = keys[i].init_state ^ invert;
		bool enabled = static_key_enabled(keys[i].key);

		if (enabled != want) {
			pr_err("%s: static_key_enabled() is %d, expected %d\n",
			       keys[i].name, enabled, want);
			return -EINVAL;
		}
		if (jump_label_enabled(keys[i].key) != enabled) {
			pr_err("%s: jump_label_enabled() disagrees\n", keys[i].name);
			return -EINVAL;
		}
		if (keys[i].test_key() != enabled) {
			pr_err("%s: the branch went the %s way\n", keys[i].name,
			       enabled ? "disabled" : "enabled");
			return -EINVAL;
		}
	}
	return 0;
}

static void invert_key(struct static_key *key)
{
	if (static_key_enabled(key))
		static_key_disable(key);
	else
		static_key_enable(key);
}

/* Each key once, though several entries may share it. */
static void invert_keys(struct test_key *keys, int size)
{
	struct static_key *done[ARRAY_SIZE(static_key_tests)];
	int i, j, n = 0;

	for (i = 0; i < size; i++) {
		for (j = 0; j < n; j++)
			if (done[j] == keys[i].key)
				break;
		if (j < n)
			continue;
		invert_key(keys[i].key);
		done[n++] = keys[i].key;
	}
}

static int __init test_static_key_init(void)
{
	int size = ARRAY_SIZE(static_key_tests);
	int ret;

	ret = verify_keys(static_key_tests, size, false);
	if (ret)
		return ret;
	invert_keys(static_key_tests, size);
	ret = verify_keys(static_key_tests, size, true);
	if (ret)
		return ret;
	/* the base module's own site follows a key this module changed */
	if (!base_false_key_site()) {
		pr_err("the base module's site on base_false_key did not follow\n");
		return -EINVAL;
	}
	invert_keys(static_key_tests, size);
	ret = verify_keys(static_key_tests, size, false);
	if (ret)
		return ret;
	if (base_false_key_site()) {
		pr_err("the base module's site on base_false_key did not return\n");
		return -EINVAL;
	}
	pr_info("%d keys checked\n", size);
	return 0;
}

static void __exit test_static_key_exit(void)
{
}

module_init(test_static_key_init);
module_exit(test_static_key_exit);

MODULE_AUTHOR("kernelkit");
MODULE_LICENSE("GPL");
