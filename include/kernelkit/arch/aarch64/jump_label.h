/* SPDX-License-Identifier: MIT */
/*
 * aarch64 jump-label sites, included by <kernelkit/jump_label.h> (the
 * kernel's arch/arm64/include/asm/jump_label.h).  Do not include directly.
 */
#ifndef KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H
#define KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H

#define JUMP_LABEL_NOP_SIZE 4

/*
 * One site, the same asm statement in C and C++: one aligned 4-byte word,
 * NOP or "B l_yes" (@jump, a constant, picks which), the two instructions
 * the Arm ARM allows to be swapped while other CPUs execute them.  The table
 * entry is the x86 one (see there).  The slot's address is an "S" operand,
 * as in the kernel: a symbolic address, which gcc does not accept as "i"
 * when compiling position-independent code.
 * Evaluates to true when the code took the jump.
 */
#define __kk_static_branch(keyp, branch, jump) (__extension__ ({		\
	__label__ l_yes, l_done;						\
	static __KK_CONSTEXPR struct static_key *const __kk_kref		\
		__attribute__((__used__, __aligned__(8))) = (keyp);		\
	bool __kk_ret;								\
	__asm__ goto("1:\n\t"							\
		 ".if %c[j]\n\t"						\
		 "b %l[l_yes]\n\t"						\
		 ".else\n\t"							\
		 "nop\n\t"							\
		 ".endif\n\t"							\
		 ".pushsection kk_jump_table, \"aw?\"\n\t"			\
		 ".balign 8\n\t"						\
		 ".long 1b - ., %l[l_yes] - .\n\t"				\
		 ".quad %c[k] - . + %c[b]\n\t"					\
		 ".popsection\n\t"						\
		 : : [k] "S"(&__kk_kref), [b] "i"(branch), [j] "i"(jump)	\
		 : : l_yes);							\
	__kk_ret = false;							\
	goto l_done;								\
l_yes:										\
	__kk_ret = true;							\
l_done:										\
	__kk_ret;								\
}))

#endif /* KERNELKIT_ARCH_AARCH64_JUMP_LABEL_H */
