/* SPDX-License-Identifier: MIT */
/*
 * aarch64 jump-label sites, included by <kernelkit/jump_label.h> (the
 * kernel's arch/arm64/include/asm/jump_label.h).  Do not include directly.
 */
#ifndef KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H
#define KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H

#define JUMP_LABEL_NOP_SIZE 4

/* One aligned word, NOP or "B l_yes": the two instructions the Arm ARM
 * allows to be swapped while other CPUs execute them. */
#define __KK_JUMP_INSN	"b %l[l_yes]\n\t"
#define __KK_NOP_INSN	"nop\n\t"
/* The slot's address as an "S" operand, as in the kernel: a symbolic
 * address, which gcc does not accept as "i" in position-independent code. */
#define __KK_SLOT_OPERAND	"S"

#endif /* KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H */
