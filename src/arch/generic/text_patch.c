// SPDX-License-Identifier: MIT
/*
 * Architectures without a patcher: the header builds every site as a
 * load+test+branch (KK_NO_JUMP_LABEL), so no object ever registers a site and
 * nothing here is asked to write code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "text_patch.h"

void kk_text_arm(void) {}
void kk_text_atfork_child(void) {}

int kk_arch_site_state(uintptr_t code, uintptr_t target)
{
	(void)code;
	(void)target;
	return -EILSEQ;
}

void kk_arch_site_poke(struct kk_poke *p, uintptr_t code, uintptr_t target, bool jump)
{
	(void)target;
	(void)jump;
	memset(p, 0, sizeof(*p));
	p->addr = code;
}

void kk_text_prepare(const uintptr_t *addrs, size_t n)
{
	(void)addrs;
	(void)n;
}

int kk_text_poke_batch(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	(void)v;
	if (!n)
		return 0;
	snprintf(err, errlen, "no code patcher for this architecture");
	return -ENOTSUP;
}

void kk_text_get_stats(struct kk_text_stats *st)
{
	memset(st, 0, sizeof(*st));
}

const char *kk_text_method(void)
{
	return "none";
}

int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len);

void kk_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	(void)code;
	snprintf(buf, len, "cannot be read on this architecture");
}

void kk_text_forget(uintptr_t lo, uintptr_t hi)
{
	(void)lo;
	(void)hi;
}
