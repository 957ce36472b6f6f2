// SPDX-License-Identifier: MIT
/*
 * backtrace() that never aborts.
 *
 * In a fully static program (gcc -static, not -static-pie) the unwinder finds
 * the program's unwind tables only once crtbeginT's frame_dummy has registered
 * them, and frame_dummy is a default-priority constructor: every constructor
 * with a priority (the library's KK_INIT levels, a program's
 * constructor(101)) runs before it, and an unwind from there ends in abort()
 * (uw_init_context_1).  So before unwinding we ask the unwinder whether it
 * knows our own code.  The reference is weak: a dynamic program's unwinder is
 * libgcc_s, loaded by glibc on first use, and needs no check (where nothing
 * defines _Unwind_Find_FDE there is no static unwinder to ask).
 */
#include <execinfo.h>
#include <stddef.h>

#include "common/internal.h"

extern const void *_Unwind_Find_FDE(void *pc, void *bases) __attribute__((__weak__));

/* Are the unwind tables registered?  (See kk_backtrace() in common/internal.h.) */
static bool kk_unwind_ready(void)
{
	void *bases[3];

	if (!_Unwind_Find_FDE)
		return true;
	return _Unwind_Find_FDE((void *)((char *)(void *)kk_unwind_ready + 1), bases) != NULL;
}

int kk_backtrace(void **buf, int size)
{
	if (!kk_unwind_ready())
		return 0;
	return backtrace(buf, size);
}
