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
/*
 * The key's address as a bare symbol(+offset), also in -fPIC code: gcc
 * takes it as "S", an absolute symbolic address, as in the kernel (its "i"
 * refuses a symbol another object may interpose); clang before 18 has no
 * "S" and takes it as "i".  The entry's ".quad" gets an ordinary data
 * relocation (R_AARCH64_ABS64 in a shared object).
 */
#ifdef __clang__
#define __KK_KEY_OPERAND	"i"
#else
#define __KK_KEY_OPERAND	"S"
#endif
#define __KK_KEY_SYM		"%c[k]"

#endif /* KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H */
