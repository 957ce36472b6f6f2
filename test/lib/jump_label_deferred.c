// SPDX-License-Identifier: MIT
/* A dlopen'ed object with a deferred static key of its own, for the test that
 * unloads it while a deferred decrement of that key is pending. */
#include <kernelkit/jump_label_ratelimit.h>

DEFINE_STATIC_KEY_DEFERRED_FALSE(jump_label_obj_dk, 60000);	/* 60 s: pending at dlclose */

int jump_label_deferred_inc(void)
{
	return static_branch_deferred_inc(&jump_label_obj_dk);
}

int jump_label_deferred_dec(void)
{
	return static_branch_slow_dec_deferred(&jump_label_obj_dk);
}

int jump_label_deferred_count(void)
{
	return static_key_count(&jump_label_obj_dk.key.key);
}

__attribute__((noinline)) int jump_label_deferred_branch(void)
{
	return static_branch_unlikely(&jump_label_obj_dk.key);
}
