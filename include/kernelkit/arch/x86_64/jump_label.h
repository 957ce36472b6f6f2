/* SPDX-License-Identifier: MIT */
/*
 * x86_64 jump-label sites, included by <kernelkit/jump_label.h> (the
 * kernel's arch/x86/include/asm/jump_label.h).  Do not include directly.
 */
#ifndef KERNELKIT_ARCH_X86_64_JUMP_LABEL_H
#define KERNELKIT_ARCH_X86_64_JUMP_LABEL_H

#define JUMP_LABEL_NOP_SIZE 5

/* A jmp rel32 to l_yes, or the kernel's 5-byte NOP (nopl 0x0(%rax,%rax,1)). */
#define __KK_JUMP_INSN	".byte 0xe9\n\t.long %l[l_yes] - (1b + 5)\n\t"
#define __KK_NOP_INSN	".byte 0x0f,0x1f,0x44,0x00,0x00\n\t"
/*
 * The key's address as a bare symbol(+offset), also in -fPIC code, where
 * "i" refuses a symbol that another object may interpose (g++: "operand
 * probably does not match constraints", clang: "invalid operand").  gcc
 * takes anything as "X" and %p prints a constant as the bare symbol; clang
 * has "s", a symbolic constant, printed by %c.  The entry's ".quad" gets an
 * ordinary data relocation (R_X86_64_64 in a shared object).
 */
#ifdef __clang__
#define __KK_KEY_OPERAND	"s"
#define __KK_KEY_SYM		"%c[k]"
#else
#define __KK_KEY_OPERAND	"X"
#define __KK_KEY_SYM		"%p[k]"
#endif

#endif /* KERNELKIT_ARCH_X86_64_JUMP_LABEL_H */
