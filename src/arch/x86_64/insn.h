/* SPDX-License-Identifier: MIT */
/* x86_64 instruction encoding for jump-label sites: a 5-byte NOP or a jmp rel32. */
#ifndef KK_ARCH_X86_64_INSN_H
#define KK_ARCH_X86_64_INSN_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define KK_X86_INT3	0xcc
#define KK_X86_JMP32	0xe9
#define KK_X86_SITE_LEN	5

/* The kernel's x86_nops[5], the NOP the header's site starts as. */
static const uint8_t kk_x86_nop5[KK_X86_SITE_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* A site instruction: the 5-byte NOP or a jmp rel32. */
static inline bool kk_x86_site_insn(const uint8_t *insn, unsigned len)
{
	return len == KK_X86_SITE_LEN && (insn[0] == KK_X86_JMP32 || !memcmp(insn, kk_x86_nop5, 5));
}

/* Where the site instruction @insn at @addr sends a thread. */
static inline uintptr_t kk_x86_insn_resume(uintptr_t addr, const uint8_t *insn)
{
	int32_t rel;

	if (insn[0] != KK_X86_JMP32)
		return addr + KK_X86_SITE_LEN;
	memcpy(&rel, insn + 1, 4);
	return addr + KK_X86_SITE_LEN + (intptr_t)rel;
}

#endif
