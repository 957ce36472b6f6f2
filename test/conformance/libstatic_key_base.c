// SPDX-License-Identifier: MIT
/*
 * The "base" module of the static-key conformance test, in the shape of the
 * kernel's lib/test_static_keys_base.c: it defines and exports keys of every
 * kind, and its init inverts the "inv" ones, so that the test module (linked
 * against this object, as a module that depends on another) sees keys that
 * another module defined and changed.
 *
 * Its init runs when the object is loaded, before the test module's init, as
 * insmod of the base module would precede the test module's.  The runner
 * only runs the init of the program's own module, so the base module's init
 * is an ordinary constructor here (build plumbing, like module_init).
 */
#include <linux/module.h>
#include <linux/jump_label.h>

struct static_key base_old_true_key = STATIC_KEY_INIT_TRUE;
EXPORT_SYMBOL_GPL(base_old_true_key);
struct static_key base_inv_old_true_key = STATIC_KEY_INIT_TRUE;
EXPORT_SYMBOL_GPL(base_inv_old_true_key);
struct static_key base_old_false_key = STATIC_KEY_INIT_FALSE;
EXPORT_SYMBOL_GPL(base_old_false_key);
struct static_key base_inv_old_false_key = STATIC_KEY_INIT_FALSE;
EXPORT_SYMBOL_GPL(base_inv_old_false_key);

DEFINE_STATIC_KEY_TRUE(base_true_key);
EXPORT_SYMBOL_GPL(base_true_key);
DEFINE_STATIC_KEY_TRUE(base_inv_true_key);
EXPORT_SYMBOL_GPL(base_inv_true_key);
DEFINE_STATIC_KEY_FALSE(base_false_key);
EXPORT_SYMBOL_GPL(base_false_key);
DEFINE_STATIC_KEY_FALSE(base_inv_false_key);
EXPORT_SYMBOL_GPL(base_inv_false_key);

DEFINE_STATIC_KEY_ARRAY_FALSE(base_false_keys, 4);
EXPORT_SYMBOL_GPL(base_false_keys);

/* A site in the base module on its own key: the test module flips the key
 * and checks that this module's code follows. */
bool base_false_key_site(void);
bool base_false_key_site(void)
{
	return static_branch_unlikely(&base_false_key);
}
EXPORT_SYMBOL_GPL(base_false_key_site);

static void invert_key(struct static_key *key)
{
	if (static_key_enabled(key))
		static_key_disable(key);
	else
		static_key_enable(key);
}

static void __attribute__((__constructor__)) test_static_key_base_init(void)
{
	invert_key(&base_inv_old_true_key);
	invert_key(&base_inv_old_false_key);
	invert_key(&base_inv_true_key.key);
	invert_key(&base_inv_false_key.key);
}

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("kernel static keys base module");
