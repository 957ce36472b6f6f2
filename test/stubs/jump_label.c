// SPDX-License-Identifier: MIT
/*
 * Static keys for a ThreadSanitizer build that links a facility's sources
 * without src/jump_label/ (mk/tsan.mk).  Such a build is compiled with
 * KK_NO_JUMP_LABEL, where a branch is a load of key->enabled: enabling a
 * key is storing it, with the release order the real library gives it.
 */
#ifndef KK_NO_JUMP_LABEL
#define KK_NO_JUMP_LABEL 1
#endif
#include <kernelkit/jump_label.h>

int static_key_enable(struct static_key *key)
{
	__atomic_store_n(&key->enabled, 1, __ATOMIC_RELEASE);
	return 0;
}

int static_key_disable(struct static_key *key)
{
	__atomic_store_n(&key->enabled, 0, __ATOMIC_RELEASE);
	return 0;
}

/* Every object still registers its (empty) site table from its constructor. */
int kk_jump_label_add_object(const struct jump_entry *start, const struct jump_entry *stop)
{
	(void)start;
	(void)stop;
	return 0;
}

void kk_jump_label_del_object(const struct jump_entry *start, const struct jump_entry *stop,
			      const void *self)
{
	(void)start;
	(void)stop;
	(void)self;
}
