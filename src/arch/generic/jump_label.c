// SPDX-License-Identifier: MIT
/* Architectures without a patcher: no site is ever a NOP or a jump we know. */
#include <errno.h>

#include "arch/jump_label.h"

int kk_arch_jump_label_state(uintptr_t code, uintptr_t target)
{
	(void)code;
	(void)target;
	return -EILSEQ;
}

int kk_arch_jump_label_transform_queue(struct kk_text_queue *q, uintptr_t code, uintptr_t target,
				       bool jump)
{
	(void)q;
	(void)code;
	(void)target;
	(void)jump;
	return -ENOTSUP;
}
