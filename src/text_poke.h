/* SPDX-License-Identifier: MIT */
/*
 * Writing code that other threads of the process may be running.
 *
 * Split as in the kernel:
 *  - src/text_poke.c, generic: the queue of changes (text_poke_queue and
 *    text_poke_finish), the dry run, the write methods (/proc/self/mem, or
 *    pages rebuilt and swapped in with mremap), copy-on-write in bulk,
 *    stop_machine, repair of a failed batch, fork and statistics;
 *  - src/arch/<arch>/text_patch.c, per architecture: instruction encoding,
 *    the protocol that gets a batch past running threads (x86: int3 and
 *    three syncs; aarch64: one atomic word per site and a sync), and the
 *    trap fix-up where the protocol has traps;
 *  - src/arch/<arch>/jump_label.c: arch_jump_label_transform_queue() and
 *    _apply(), the kernel's names for "encode this site" and "apply them".
 */
#ifndef KK_TEXT_POKE_H
#define KK_TEXT_POKE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/internal.h"

#define KK_POKE_MAX 8

/* One instruction to replace.  The queue is sorted before it is applied. */
struct kk_poke {
	uintptr_t addr;
	uint8_t len;
	uint8_t old[KK_POKE_MAX];
	uint8_t new[KK_POKE_MAX];
	uintptr_t resume;	/* where a trap continues once the change took effect */
	uintptr_t resume_old;	/* ... and before (the batch can still fail) */
};

/* Changes gathered for one batch (the kernel's tp_vec). */
struct kk_text_queue {
	struct kk_poke *v;
	size_t n, cap;
};

/*
 * Queue the change of the @len-byte instruction at @addr from @old to @new
 * (the kernel's text_poke_queue).  The queue must have room: the caller
 * sizes it (every site of the keys it changes).  -ENOSPC if not.
 */
int kk_text_poke_queue(struct kk_text_queue *q, uintptr_t addr, const void *old,
		       const void *new, size_t len);

/*
 * Apply every queued change in one batch, safely against threads that run
 * them, all or nothing (the kernel's text_poke_finish); empties the queue.
 * Returns 0, -EILSEQ (old bytes do not match), -EINVAL (overlap, not a site
 * instruction), -ENOTSUP (no way to sync other threads), -EPERM/-EIO (text
 * cannot be written), -ENOMEM.  @err gets a one-line message.  On error no
 * thread has run a new instruction (see "stuck" in text_poke.c).
 */
int kk_text_poke_finish(struct kk_text_queue *q, char *err, size_t errlen);

/*
 * An object with sites has registered: get ready to patch.  Registers for
 * membarrier SYNC_CORE now, while the process is most likely still single-
 * threaded (later the kernel makes registration wait for an RCU grace period
 * and IPI every CPU the process runs on).  Nothing else: a trap handler goes
 * in with the first patch, so a program that never patches keeps its signal
 * dispositions.  Idempotent; a failure only means patching will ask again.
 */
void kk_text_arm(void);
/* After fork() in the child (one thread, a fresh mm): close the parent's
 * descriptor (only if still ours); membarrier registers again lazily. */
void kk_text_atfork_child(void);

/*
 * Why the site at @code is not a site instruction, in one phrase for an
 * error message ("holds int3 (0xcc), which kernelkit did not write: a
 * debugger breakpoint (traced by pid 123)?").
 */
void kk_text_site_problem(uintptr_t code, char *buf, size_t len);

/* An object's text [lo, hi) is going away: forget its sites (a trap
 * handler must not take a later trap there for one of ours). */
void kk_text_forget(uintptr_t lo, uintptr_t hi);

/*
 * KK_JUMP_LABEL_COW=eager: make the pages that hold @addrs (sorted) private
 * now, by rewriting one byte of each with its own value.  At load time, when
 * the pages are not mapped yet and the process often has one thread, this
 * costs no TLB flush, and the first batch over them no IPI per page; the
 * price is that the pages are no longer shared.  Best effort.
 */
void kk_text_prepare(const uintptr_t *addrs, size_t n);

/*
 * The bytes the site at @code behaves as, @len of them: those of a batch
 * that is stuck (a failed write awaits repair) are its final bytes.
 */
void kk_text_site_bytes(uintptr_t code, uint8_t *out, size_t len);

/*
 * Test-only fault injection: when set, called before every text write with
 * the step (enum kk_text_step) and the span; a non-zero return (-errno)
 * makes that write fail as if the kernel had refused it.
 */
enum kk_text_step {
	KK_STEP_DRY,		/* the dry run: current bytes over themselves */
	KK_STEP_INT3,		/* the trap instruction over every site (x86) */
	KK_STEP_TAIL,		/* the new bytes 1..len-1 (x86) */
	KK_STEP_HEAD,		/* the new first byte (x86) */
	KK_STEP_REPAIR,		/* finishing or undoing a failed batch */
	KK_STEP_STOP,		/* whole instructions, under stop_machine */
	KK_STEP_INSN,		/* whole instructions, one atomic write each (aarch64) */
	KK_STEP_SETTLE,		/* final bytes over themselves, after a sync (aarch64) */
	KK_STEP_SWAP,		/* a run of rebuilt pages moved in (the page swap) */
};
KK_WHITEBOX extern int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len);

/*
 * Test-only: when set, an arch trap handler (x86_64) calls it on the way
 * through one of its traps, to hold the trapping thread where a race needs
 * it: at KK_TRAP_ENTER, before the handler counts itself in (a batch may end
 * and be freed meanwhile), and at KK_TRAP_LOOKED, once it has read which
 * batch is in flight but not yet the site's bytes.
 */
enum kk_trap_stage { KK_TRAP_ENTER, KK_TRAP_LOOKED };
KK_WHITEBOX extern void (*kk_text_trap_hook)(int stage);

struct kk_text_stats {
	unsigned long long syncs, batches, pokes, traps;
	unsigned long long stopped;	/* batches written under stop_machine */
	unsigned long long swapped;	/* batches written by page swaps */
	unsigned long long repairs;	/* failed batches finished or undone later */
	unsigned long long stuck;	/* sites emulated now (a batch awaits repair) */
};
KK_WHITEBOX void kk_text_get_stats(struct kk_text_stats *st);
const char *kk_text_method(void);

/* ---- between the generic layer and the architecture ----------------------------
 *
 * A batch, from its first live write until every site holds its final
 * bytes.  A trap handler may read it; it is freed only once the arch says no
 * handler is inside (kk_arch_text_quiesce) and it is no longer published.
 */
struct kk_text_batch {
	struct kk_poke *v;	/* sorted by address, owned */
	size_t n;
	uint8_t *span;		/* a page (+ a site's tail) of scratch for writes */
	atomic_int committed;	/* the change took effect: a failure finishes it */
	int stuck;		/* a write failed: awaiting repair */
	pthread_t owner;	/* the patching thread (a fork child may be it) */
};

/* The batch in flight or stuck, for the trap handler; NULL otherwise. */
extern _Atomic(struct kk_text_batch *) kk_text_cur;

/* Which bytes of each site one write step puts down. */
enum kk_text_span {
	KK_SPAN_DRY,	/* the current bytes (per page) */
	KK_SPAN_TRAP,	/* the arch's trap byte over the first byte (per page) */
	KK_SPAN_TAIL,	/* bytes 1..len-1 of the target instruction (per page) */
	KK_SPAN_HEAD,	/* byte 0 of the target instruction (per page) */
	KK_SPAN_ALL,	/* the whole target instruction (per page) */
	KK_SPAN_EACH,	/* the whole target instruction, one write per site */
};

/*
 * Write step @s of every site of @b: "per page" steps write every site
 * whose bytes start in one page with one write (the bytes between sites are
 * rewritten with their current value); KK_SPAN_EACH writes each site alone,
 * so that a site written whole by one aligned store is never seen torn.
 * The target is the new instruction, or the old one when @to_old (undoing).
 * @hook_step is what kk_text_write_hook sees.  Stops at the first failure.
 * No locks, no allocation: also runs under stop_machine.
 */
int kk_text_write(const struct kk_text_batch *b, enum kk_text_span s, bool to_old, int hook_step);
/* One sync round (kk_sync_round()), counted in the statistics. */
int kk_text_sync(void);

/* Implemented by src/arch/<arch>/text_patch.c. */

/* The protocol needs traps (a thread that blocks SIGTRAP, a debugger or
 * valgrind then call for stop_machine): x86 yes, aarch64 no. */
extern const bool kk_arch_text_traps;
/* The byte KK_SPAN_TRAP writes (x86: int3). */
extern const uint8_t kk_arch_trap_byte;
/* @p holds site instructions (old and new) this arch can swap: 0, or
 * -EINVAL with @err filled.  Fills p->resume and p->resume_old. */
int kk_arch_text_check(struct kk_poke *p, char *err, size_t errlen);
/* Before a live batch: install the trap handler, record the sites.
 * Optional, as are quiesce, forget, atfork_child and traps_taken: an arch
 * without traps leaves them to the weak defaults in text_poke.c. */
int kk_arch_text_begin(struct kk_text_batch *b, char *err, size_t errlen);
/* The live protocol: every site of the published batch @b to its new bytes,
 * syncs included.  Sets b->committed at the point the change takes effect.
 * Returns 0 or the -errno of the write or sync that failed. */
int kk_arch_text_apply(struct kk_text_batch *b);
/* Bring every site of @b to its final bytes (new if committed, else old),
 * whatever a failed apply left, with the syncs that takes.  0 or -errno. */
int kk_arch_text_repair(struct kk_text_batch *b);
/* After @len bytes at @addr were written (instruction cache maintenance). */
void kk_arch_text_flush(uintptr_t addr, size_t len);
/* Wait until no trap handler reads a batch that is no longer published. */
void kk_arch_text_quiesce(void);
/* Site problem, forget and fork, the arch's part. */
void kk_arch_text_site_problem(uintptr_t code, char *buf, size_t len);
void kk_arch_text_forget(uintptr_t lo, uintptr_t hi);
void kk_arch_text_atfork_child(void);
unsigned long long kk_arch_text_traps_taken(void);
/* Our trap handler is in place (installed now if it was not): 0, or -errno.
 * Before a trap window hands SIGTRAP blocks back (text_sync_sigmask.c). */
int kk_arch_trap_handler_ready(void);
/* Our trap handler is installed and chains to a program's SIGTRAP handler,
 * which then runs with every signal blocked (ours's sa_mask). */
bool kk_arch_trap_chains_program(void);

#endif
