// SPDX-License-Identifier: MIT
/* A dlopen'ed object for the static-key tests: it has sites on a key that the
 * test program defines, and a key of its own. */
#include <kernelkit/jump_label.h>

DECLARE_STATIC_KEY_FALSE(jl_shared_key);
DEFINE_STATIC_KEY_TRUE(jl_lib_key);

__attribute__((noinline)) int jl_user_shared(void)
{
	return static_branch_unlikely(&jl_shared_key);
}

__attribute__((noinline)) int jl_user_shared_likely(void)
{
	return static_branch_likely(&jl_shared_key);
}

__attribute__((noinline)) int jl_user_own(void)
{
	return static_branch_likely(&jl_lib_key);
}

struct static_key_true *jl_user_key(void)
{
	return &jl_lib_key;
}
