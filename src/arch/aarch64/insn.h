/* SPDX-License-Identifier: MIT */
/*
 * aarch64 instruction encoding for jump-label sites (the kernel's
 * arch/arm64/lib/insn.c, the two instructions it needs): NOP, and B to a
 * PC-relative target.  Instructions are little-endian in memory whatever the
 * data endianness, so they are read and written as bytes.
 */
#ifndef KK_ARCH_AARCH64_INSN_H
#define KK_ARCH_AARCH64_INSN_H

#include <stdbool.h>
#include <stdint.h>

#define KK_A64_INSN_SIZE	4
#define KK_A64_NOP		0xd503201fu	/* HINT #0 */
#define KK_A64_B		0x14000000u	/* B imm26 */
#define KK_A64_B_MASK		0xfc000000u
#define KK_A64_BRK		0xd4200000u	/* BRK #imm16: a debugger's breakpoint */
#define KK_A64_BRK_MASK		0xffe0001fu
#define KK_A64_B_RANGE		(128l << 20)	/* B reaches +-128 MiB */

static inline uint32_t kk_a64_read(const volatile uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline void kk_a64_put(uint8_t *p, uint32_t insn)
{
	p[0] = (uint8_t)insn;
	p[1] = (uint8_t)(insn >> 8);
	p[2] = (uint8_t)(insn >> 16);
	p[3] = (uint8_t)(insn >> 24);
}

/* B from @pc to @target (both 4-byte aligned, within range). */
static inline uint32_t kk_a64_b(uintptr_t pc, uintptr_t target)
{
	return KK_A64_B | ((uint32_t)((intptr_t)(target - pc) >> 2) & ~KK_A64_B_MASK);
}

/* Where B @insn at @pc goes. */
static inline uintptr_t kk_a64_b_target(uintptr_t pc, uint32_t insn)
{
	int32_t imm = (int32_t)(insn << 6) >> 6;	/* sign-extend imm26 */

	return pc + (uintptr_t)((intptr_t)imm * 4);
}

/* A site instruction: NOP or B. */
static inline bool kk_a64_site_insn(uint32_t insn)
{
	return insn == KK_A64_NOP || (insn & KK_A64_B_MASK) == KK_A64_B;
}

#endif
