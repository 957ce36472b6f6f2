/* SPDX-License-Identifier: MIT */
/*
 * x86_64 jump-label sites, included by <kernelkit/jump_label.h> (the
 * kernel's arch/x86/include/asm/jump_label.h).  Do not include directly.
 */
#ifndef KERNELKIT_ARCH_X86_64_JUMP_LABEL_H
#define KERNELKIT_ARCH_X86_64_JUMP_LABEL_H

#define JUMP_LABEL_NOP_SIZE 5

/*
 * One site, the same asm statement in C and C++.  @jump, a constant, picks
 * the initial instruction: the 5-byte NOP, or a jmp rel32 to l_yes.  The
 * table entry goes to kk_jump_table in the section group of the code ("?"),
 * so that when the linker drops a duplicate of a C++ inline function or
 * template (a COMDAT group) it drops the duplicate's entries too.
 * Evaluates to true when the code took the jump.
 */
#define __kk_static_branch(keyp, branch, jump) (__extension__ ({		\
	__label__ l_yes, l_done;						\
	static __KK_CONSTEXPR struct static_key *const __kk_kref		\
		__attribute__((__used__, __aligned__(8))) = (keyp);		\
	bool __kk_ret;								\
	__asm__ goto("1:\n\t"							\
		 ".if %c[j]\n\t"						\
		 ".byte 0xe9\n\t.long %l[l_yes] - (1b + 5)\n\t"		\
		 ".else\n\t"							\
		 ".byte 0x0f,0x1f,0x44,0x00,0x00\n\t"				\
		 ".endif\n\t"							\
		 ".pushsection kk_jump_table, \"aw?\"\n\t"			\
		 ".balign 8\n\t"						\
		 ".long 1b - ., %l[l_yes] - .\n\t"				\
		 ".quad %c[k] - . + %c[b]\n\t"					\
		 ".popsection\n\t"						\
		 : : [k] "i"(&__kk_kref), [b] "i"(branch), [j] "i"(jump)	\
		 : : l_yes);							\
	__kk_ret = false;							\
	goto l_done;								\
l_yes:										\
	__kk_ret = true;							\
l_done:										\
	__kk_ret;								\
}))

#endif /* KERNELKIT_ARCH_X86_64_JUMP_LABEL_H */
