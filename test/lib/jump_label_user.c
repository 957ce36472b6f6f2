// SPDX-License-Identifier: MIT
/* A dlopen'ed object for the static-key tests: it has sites on a key that the
 * test program defines, and a key of its own. */
#include <kernelkit/jump_label.h>

DECLARE_STATIC_KEY_FALSE(jump_label_shared_key);
DEFINE_STATIC_KEY_TRUE(jump_label_lib_key);

__attribute__((noinline)) int jump_label_user_shared(void)
{
	return static_branch_unlikely(&jump_label_shared_key);
}

__attribute__((noinline)) int jump_label_user_shared_likely(void)
{
	return static_branch_likely(&jump_label_shared_key);
}

__attribute__((noinline)) int jump_label_user_own(void)
{
	return static_branch_likely(&jump_label_lib_key);
}

struct static_key_true *jump_label_user_key(void)
{
	return &jump_label_lib_key;
}
