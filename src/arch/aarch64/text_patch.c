// SPDX-License-Identifier: MIT
/*
 * aarch64: cross-modifying code the way the kernel's arm64 jump labels do it
 * (aarch64_insn_patch_text_nosync() per site, then one kick of every CPU),
 * on top of the generic layer (src/text_poke.c), which has already proved
 * with its dry run that every page of the batch can be written:
 *
 *   1. write every site's new word, each with one aligned 4-byte store,
 *      and make it visible to instruction fetch: DC CVAU, DSB ISH, IC IVAU,
 *      DSB ISH (kk_arch_text_flush; the kernel does the same for the alias
 *      it writes through /proc/self/mem);                               sync
 *   2. write every page of the batch again with its (final) bytes;       sync
 *
 * Why no int3 dance: the Arm ARM (B2.2.5, "concurrent modification and
 * execution of instructions") lets one thread write B, BL, NOP, BRK, SVC,
 * HVC or SMC over another of these while other threads execute it: they
 * execute either the old or the new instruction, never a mix.  A site is
 * always NOP <-> B, one aligned word, so a store of the whole word is the
 * whole change.  What x86 needs the trap for (5 bytes that no store writes
 * atomically) does not arise, and so neither does what comes with it: no
 * SIGTRAP handler, no history of trapping sites, no emulation, no
 * stop_machine under a debugger or valgrind or when a thread blocks SIGTRAP
 * (kk_arch_text_traps is false), and a debugger's BRK on a site is only an
 * instruction we did not write.
 *
 * The sync: after the cache maintenance, every other thread must execute a
 * context-synchronization event before it is guaranteed to fetch the new
 * word; membarrier(SYNC_CORE), or the park signal's handler, makes each of
 * them take an exception (and run ISB).  Threads that run a site before the
 * sync see the old or the new instruction, which is the kernel's contract
 * too: static_key_enable() returns once every thread takes the new branch.
 *
 * Step 2 is for binary translators.  QEMU's TCG translates guest code into
 * blocks keyed by physical page and throws a block away when the page is
 * written.  A block that another vCPU was translating while step 1 wrote a
 * site of it can be linked after the write with the old word in it, and
 * nothing invalidates it again: the site keeps its old branch for good
 * (without step 2, stress/jump_label_16154 under multi-threaded TCG failed
 * 3 runs of 3, with 1 to 3 of its 16154 sites still on the old branch after
 * a flip had returned; with it, 0 wrong).  The sync after
 * step 1 ends every such translation (a vCPU takes the IPI between blocks);
 * the rewrite in step 2, of identical bytes, then invalidates whatever was
 * translated meanwhile.  On hardware it is a store of the same values:
 * harmless, and a few page writes per batch.
 *
 * Failure: a write that fails in step 1 leaves some sites written.  The
 * batch has not committed, so the generic layer repairs it: every site gets
 * its old word back, and the same two syncs.  Unlike x86, threads may have
 * run a new word at an already written site in between (there is no trap to
 * hide it).  A batch that cannot even be repaired is "stuck": its sites
 * report their final state, but with no trap there is nothing to emulate
 * them, and each may hold the old or the new word until the next change
 * repairs it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arch/aarch64/insn.h"
#include "common/internal.h"
#include "text_poke.h"
#include "text_sync.h"

const bool kk_arch_text_traps = false;
const uint8_t kk_arch_trap_byte = 0;	/* no KK_SPAN_TRAP here */

int kk_arch_text_check(struct kk_poke *p, char *err, size_t errlen)
{
	if (p->len != KK_A64_INSN_SIZE || (p->addr & 3) ||
	    !kk_a64_site_insn(kk_a64_read(p->old)) || !kk_a64_site_insn(kk_a64_read(p->new))) {
		snprintf(err, errlen, "site %#lx: only an aligned NOP <-> B can be patched",
			 (unsigned long)p->addr);
		return -EINVAL;
	}
	return 0;
}

/* Steps 1's sync and step 2 (see the top of the file). */
static int publish(struct kk_text_batch *b)
{
	int ret = kk_text_sync();

	if (!ret)
		ret = kk_text_write(b, KK_SPAN_DRY, false, KK_STEP_SETTLE);
	if (!ret)
		ret = kk_text_sync();
	return ret;
}

int kk_arch_text_apply(struct kk_text_batch *b)
{
	int ret = kk_text_write(b, KK_SPAN_EACH, false, KK_STEP_INSN);

	if (ret)
		return ret;
	/* Every word is written: from here a failure finishes the change. */
	atomic_store(&b->committed, 1);
	return publish(b);
}

int kk_arch_text_repair(struct kk_text_batch *b)
{
	int ret = kk_text_write(b, KK_SPAN_EACH, !atomic_load(&b->committed), KK_STEP_REPAIR);

	return ret ? ret : publish(b);
}

/*
 * The writer's half of the Arm ARM's sequence for modified code: clean the
 * data cache to the point of unification and invalidate the instruction
 * cache, by the address the code runs at.  GCC's builtin emits exactly
 * that (DC CVAU, DSB ISH, IC IVAU, DSB ISH, ISB), and skips what CTR_EL0's
 * IDC and DIC bits say the CPU does not need.
 */
void kk_arch_text_flush(uintptr_t addr, size_t len)
{
	__builtin___clear_cache((char *)addr, (char *)(addr + len));
}

void kk_arch_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	uint32_t insn = kk_a64_read((const volatile uint8_t *)code);
	pid_t tracer;

	if ((insn & KK_A64_BRK_MASK) != KK_A64_BRK) {
		snprintf(buf, len, "does not hold a jump-label instruction: %08x is neither a NOP "
			 "nor a B to its target", insn);
		return;
	}
	tracer = kk_tracer_pid();
	if (tracer > 0)
		snprintf(buf, len, "does not hold a jump-label instruction: it holds brk (%08x), "
			 "which kernelkit did not write: a breakpoint of the debugger attached "
			 "as pid %d; delete it and retry", insn, (int)tracer);
	else
		snprintf(buf, len, "does not hold a jump-label instruction: it holds brk (%08x), "
			 "which kernelkit did not write: a uprobe (bpftrace, perf probe) or a "
			 "debugger breakpoint? (no tracer is attached now)", insn);
}
