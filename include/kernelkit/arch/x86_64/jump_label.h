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
/* The slot's address is a link-time constant ("i"): the entry's ".quad"
 * makes it position-independent. */
#define __KK_SLOT_OPERAND	"i"

#endif /* KERNELKIT_ARCH_X86_64_JUMP_LABEL_H */
