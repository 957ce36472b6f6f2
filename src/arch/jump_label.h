/* SPDX-License-Identifier: MIT */
/*
 * The jump-label hooks of an architecture (the kernel's
 * arch/<arch>/kernel/jump_label.c): what a site holds, and queueing the
 * instruction that switches it.  One implementation per architecture in
 * src/arch/<arch>/jump_label.c; the sites themselves are emitted by
 * include/kernelkit/arch/<arch>/jump_label.h.
 */
#ifndef KK_ARCH_JUMP_LABEL_H
#define KK_ARCH_JUMP_LABEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "text_poke.h"

/* The state of the site at @code: 0 its NOP, 1 a jump to @target, -EILSEQ
 * anything else.  A site of a stuck batch reads as its final state. */
int kk_arch_jump_label_state(uintptr_t code, uintptr_t target);

/* Queue the change of the site at @code to a jump to @target (@jump) or to
 * its NOP (the kernel's arch_jump_label_transform_queue).  0 or -errno. */
int kk_arch_jump_label_transform_queue(struct kk_text_queue *q, uintptr_t code, uintptr_t target,
				       bool jump);

/* Apply the queue in one batch (the kernel's arch_jump_label_transform_apply):
 * the same on every architecture, the protocol is the text poker's. */
static inline int kk_arch_jump_label_transform_apply(struct kk_text_queue *q, char *err,
						     size_t errlen)
{
	return kk_text_poke_finish(q, err, errlen);
}

#endif
