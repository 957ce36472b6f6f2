/* SPDX-License-Identifier: MIT */
/*
 * The arch interface for writing code that other threads may be running.
 * One implementation per architecture in src/arch/<arch>/text_patch.c.
 */
#ifndef KK_TEXT_PATCH_H
#define KK_TEXT_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define KK_POKE_MAX 8

/* One instruction to replace.  The batch call sorts a vector of these. */
struct kk_poke {
	uintptr_t addr;
	uint8_t len;
	uint8_t old[KK_POKE_MAX];
	uint8_t new[KK_POKE_MAX];
	uintptr_t resume;	/* where a thread that traps on the site continues */
};

/*
 * An object with sites has registered: get ready to patch.  Registers for
 * membarrier SYNC_CORE now, while the process is most likely still single-
 * threaded (later the kernel makes registration wait for an RCU grace period
 * and IPI every CPU the process runs on).  Nothing else: the SIGTRAP handler
 * goes in with the first patch, so a program that never patches keeps its
 * signal dispositions.  Idempotent; a failure only means patching will ask
 * again.
 */
void kk_text_arm(void);
/* After fork() in the child (one thread, a fresh mm): close the parent's
 * descriptor (only if still ours); membarrier registers again lazily. */
void kk_text_atfork_child(void);

/* The state of a jump-label site: 0 NOP, 1 jump to @target, -EILSEQ otherwise. */
int kk_arch_site_state(uintptr_t code, uintptr_t target);
/* Fill @p to turn the site at @code into a NOP or a jump to @target. */
void kk_arch_site_poke(struct kk_poke *p, uintptr_t code, uintptr_t target, bool jump);

/*
 * Replace every instruction of @v in one batch, safely against threads that
 * run them: all or nothing.  Sorts @v by address.  Returns 0, -EILSEQ (old
 * bytes do not match), -EINVAL (overlap), -ENOTSUP (no way to sync other
 * threads), -EPERM/-EIO (text cannot be written).  @err gets a message.
 */
int kk_text_poke_batch(struct kk_poke *v, size_t n, char *err, size_t errlen);

/*
 * KK_JUMP_LABEL_COW=eager: make the pages that hold @addrs (sorted) private
 * now, by rewriting one byte of each with its own value.  At load time, when
 * the pages are not mapped yet and the process often has one thread, this
 * costs no TLB flush, and the first batch over them no IPI per page; the
 * price is that the pages are no longer shared.  Best effort.
 */
void kk_text_prepare(const uintptr_t *addrs, size_t n);

struct kk_text_stats {
	unsigned long long syncs, batches, pokes, traps;
};
void kk_text_get_stats(struct kk_text_stats *st);
const char *kk_text_method(void);

#endif
