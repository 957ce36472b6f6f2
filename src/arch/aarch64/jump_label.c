// SPDX-License-Identifier: MIT
/*
 * aarch64 jump-label sites (the kernel's arch/arm64/kernel/jump_label.c):
 * one aligned word, NOP or B to the site's target.
 */
#include <errno.h>

#include "arch/aarch64/insn.h"
#include "arch/jump_label.h"

static bool in_range(uintptr_t code, uintptr_t target)
{
	intptr_t off = (intptr_t)(target - code);

	return !(code & 3) && !(target & 3) && off >= -KK_A64_B_RANGE && off < KK_A64_B_RANGE;
}

int kk_arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	uint8_t p[KK_A64_INSN_SIZE];
	uint32_t insn;

	if (code & 3)
		return -EILSEQ;
	kk_text_site_bytes(code, p, sizeof(p));
	insn = kk_a64_read(p);
	if (insn == KK_A64_NOP)
		return 0;
	return in_range(code, target) && insn == kk_a64_b(code, target) ? 1 : -EILSEQ;
}

int kk_arch_jump_label_transform_queue(struct kk_text_queue *q, uintptr_t code, uintptr_t target,
				       bool jump)
{
	uint8_t nop[KK_A64_INSN_SIZE], b[KK_A64_INSN_SIZE];

	if (!in_range(code, target))
		return -EINVAL;
	kk_a64_put(nop, KK_A64_NOP);
	kk_a64_put(b, kk_a64_b(code, target));
	return kk_text_poke_queue(q, code, jump ? nop : b, jump ? b : nop, KK_A64_INSN_SIZE);
}
