// SPDX-License-Identifier: MIT
/*
 * Architectures without a patcher: the header builds every site as a
 * load+test+branch (KK_NO_JUMP_LABEL), so no object ever registers a site and
 * nothing here is asked to write code.  A queue that reaches the generic
 * layer anyway is refused by kk_arch_text_check().
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "text_poke.h"

const bool kk_arch_text_traps = false;
const uint8_t kk_arch_trap_byte = 0;

int kk_arch_text_check(struct kk_poke *p, char *err, size_t errlen)
{
	(void)p;
	snprintf(err, errlen, "no code patcher for this architecture");
	return -ENOTSUP;
}

int kk_arch_text_apply(struct kk_text_batch *b)
{
	(void)b;
	return -ENOTSUP;
}

int kk_arch_text_repair(struct kk_text_batch *b)
{
	(void)b;
	return -ENOTSUP;
}

void kk_arch_text_flush(uintptr_t addr, size_t len)
{
	(void)addr;
	(void)len;
}

void kk_arch_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	(void)code;
	snprintf(buf, len, "cannot be read on this architecture");
}
