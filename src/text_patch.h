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

#include "common.h"

#define KK_POKE_MAX 8

/* One instruction to replace.  The batch call sorts a vector of these. */
struct kk_poke {
	uintptr_t addr;
	uint8_t len;
	uint8_t old[KK_POKE_MAX];
	uint8_t new[KK_POKE_MAX];
	uintptr_t resume;	/* where a trap continues once the change took effect */
	uintptr_t resume_old;	/* ... and before (the batch can still fail) */
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
 * threads), -EPERM/-EIO (text cannot be written), -ENOMEM.  @err gets a
 * message.  On error no thread has run a new instruction, and every site
 * still behaves as its old instruction (see "stuck" in text_patch.c).
 */
int kk_text_poke_batch(struct kk_poke *v, size_t n, char *err, size_t errlen);

/*
 * Why the site at @code is neither a NOP nor a jump to @target, in one
 * phrase for an error message ("holds int3 (0xcc), which kernelkit did not
 * write: a debugger breakpoint (traced by pid 123)?").
 */
void kk_text_site_problem(uintptr_t code, char *buf, size_t len);

/* An object's text [lo, hi) is going away: forget its sites (the trap
 * handler must not take a later trap there for one of ours). */
void kk_text_forget(uintptr_t lo, uintptr_t hi);

/*
 * Test-only fault injection: when set, called before every text write with
 * the step (enum kk_text_step) and the span; a non-zero return (-errno)
 * makes that write fail as if the kernel had refused it.
 */
enum kk_text_step {
	KK_STEP_DRY,		/* the dry run: current bytes over themselves */
	KK_STEP_INT3,		/* int3 over the first byte of every site */
	KK_STEP_TAIL,		/* the new bytes 1..len-1 */
	KK_STEP_HEAD,		/* the new first byte */
	KK_STEP_REPAIR,		/* finishing or undoing a failed batch */
	KK_STEP_STOP,		/* whole instructions, under stop_machine */
};
KK_WHITEBOX extern int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len);

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
	unsigned long long stopped;	/* batches written under stop_machine */
	unsigned long long repairs;	/* failed batches finished or undone later */
	unsigned long long stuck;	/* sites emulated now (a batch awaits repair) */
};
KK_WHITEBOX void kk_text_get_stats(struct kk_text_stats *st);
const char *kk_text_method(void);

#endif
