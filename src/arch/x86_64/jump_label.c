// SPDX-License-Identifier: MIT
/*
 * x86_64 jump-label sites (the kernel's arch/x86/kernel/jump_label.c): a
 * 5-byte NOP, or a jmp rel32 to the site's target.
 */
#include <errno.h>
#include <string.h>

#include "arch/jump_label.h"
#include "arch/x86_64/insn.h"

static void make_insn(uint8_t *out, uintptr_t code, uintptr_t target, bool jump)
{
	int32_t rel = (int32_t)(target - (code + KK_X86_SITE_LEN));

	if (!jump) {
		memcpy(out, kk_x86_nop5, KK_X86_SITE_LEN);
		return;
	}
	out[0] = KK_X86_JMP32;
	memcpy(out + 1, &rel, 4);
}

int kk_arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	uint8_t p[KK_X86_SITE_LEN], jmp[KK_X86_SITE_LEN];

	kk_text_site_bytes(code, p, sizeof(p));
	if (!memcmp(p, kk_x86_nop5, sizeof(p)))
		return 0;
	make_insn(jmp, code, target, true);
	return memcmp(p, jmp, sizeof(p)) ? -EILSEQ : 1;
}

int kk_arch_jump_label_transform_queue(struct kk_text_queue *q, uintptr_t code, uintptr_t target,
				       bool jump)
{
	uint8_t old[KK_X86_SITE_LEN], new[KK_X86_SITE_LEN];

	make_insn(old, code, target, !jump);
	make_insn(new, code, target, jump);
	return kk_text_poke_queue(q, code, old, new, KK_X86_SITE_LEN);
}
