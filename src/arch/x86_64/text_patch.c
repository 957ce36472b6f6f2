// SPDX-License-Identifier: MIT
/*
 * x86_64: cross-modifying code the way the kernel's text_poke batch does it
 * (arch/x86/kernel/alternative.c, text_poke_bp_batch), on top of the
 * generic layer (src/text_poke.c), which has already proved with its dry run
 * that every page of the batch can be written:
 *
 *   1. write INT3 over the first byte of every site in the batch;   sync
 *   2. write the new bytes 1..n-1 of every site;                      sync
 *   3. write the new first byte of every site;                        sync
 *
 * "sync" is kk_sync_round() (src/text_sync.c): every CPU that runs a thread
 * of this process executes a core-serializing instruction, which is what the
 * SDM asks for before another CPU may run modified code.  A 5-byte
 * instruction cannot be written atomically, so a thread must never fetch it
 * half-written: a thread that reaches a site between steps 1 and 3 traps on
 * the INT3 instead, and our SIGTRAP handler finds the site by binary search
 * in the sorted batch and resumes it where the old instruction would have
 * sent it, or, once step 3 has begun (the batch is "committed"), where the
 * new one does.  So a change that fails is never observed, and one batch
 * costs three syncs however many sites it holds.
 *
 * A batch whose writes fail after step 1 and cannot be repaired stays
 * published as "stuck": the trap handler keeps emulating its sites (old
 * instruction, or new if committed) until the next change repairs it.  A
 * site never executes half-written bytes, and never differs from its key.
 *
 * Under a tracer, under valgrind, or when a thread blocks SIGTRAP (a blocked
 * synchronous trap kills the process), kk_sync_plan() says so and the batch
 * is written whole under kk_stop_machine() instead: no INT3 at all.
 *
 * The trap handler knows its own traps only: the trapping address must be a
 * site of the batch in flight (or stuck), or a site this process patched
 * before whose bytes are a valid instruction again (the batch finished while
 * the trapping thread was on its way to the handler).  Anything else, such
 * as a program's own `int3` or `int $3`, goes to the handler that was there
 * before us, and a handler that calls us back cannot make that loop.
 *
 * The SIGTRAP handler goes in with the first batch, never at load.
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <ucontext.h>
#include <unistd.h>

#include "arch/x86_64/insn.h"
#include "common/internal.h"
#include "text_poke.h"
#include "text_sync.h"

const bool kk_arch_text_traps = true;
const uint8_t kk_arch_trap_byte = KK_X86_INT3;

/*
 * Every address this process ever put an INT3 on (sorted): a thread may
 * reach the handler for one of our traps after its batch ended, and must
 * then be told apart from a foreign trap.  Replaced, never edited in place;
 * an old copy is freed once no trap handler can be reading it.
 */
struct history {
	size_t n;
	uintptr_t a[];
};

static _Atomic(struct history *) history;
static atomic_int traps_inflight;

/* The handler we chain to: two copies, so that a trap on another thread
 * never reads one half-written (updated only under the jump-label lock). */
static struct sigaction prev_traps[2];
static atomic_int prev_idx;

/*
 * The threads (tid, and the stack address of our frame) chaining a trap now:
 * a handler that calls us back deeper on the same thread's stack is a loop
 * (a crash reporter that saved us as "previous"), whatever siginfo it
 * passes.  A slot whose frame is not above ours is stale: the handler we
 * chained to left with longjmp, and the slot is taken over.
 */
#define CHAIN_SLOTS 32
static _Atomic(pid_t) chaining[CHAIN_SLOTS];
static _Atomic(uintptr_t) chain_sp[CHAIN_SLOTS];

static atomic_ullong n_traps;

/* ---- telling our traps from others ---------------------------------------------- */

static struct kk_poke *poke_find(struct kk_poke *v, size_t n, uintptr_t ip)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr == ip)
			return &v[mid];
		if (v[mid].addr < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool history_has(const struct history *h, uintptr_t ip)
{
	size_t lo = 0, hi = h ? h->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->a[mid] == ip)
			return true;
		if (h->a[mid] < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Where a thread trapping on site @p continues. */
static uintptr_t poke_resume(const struct kk_text_batch *b, const struct kk_poke *p)
{
	return atomic_load(&b->committed) ? p->resume : p->resume_old;
}

/*
 * The resume address for a trap whose KK_X86_INT3 is at @ip, or 0 if it is not
 * ours.  @rewound: the kernel's pc points at the KK_X86_INT3 itself (gdb rewinds it
 * for a SIGTRAP it passes on), so only an KK_X86_INT3 still in place counts.
 */
static uintptr_t our_trap_in(struct kk_text_batch *b, uintptr_t ip, bool rewound)
{
	const volatile uint8_t *code = (const volatile uint8_t *)ip;
	struct kk_poke *p = b ? poke_find(b->v, b->n, ip) : NULL;
	uint8_t now[5];

	if (p && code[0] == KK_X86_INT3)
		return poke_resume(b, p);
	if (!p && !history_has(atomic_load(&history), ip))
		return 0;
	if (kk_text_trap_hook)
		kk_text_trap_hook(KK_TRAP_LOOKED);
	/* Rewound, and the KK_X86_INT3 is gone already (the batch went on while a
	 * debugger looked at the stop): ours only if no trap instruction ends
	 * just before @ip, which would be a foreign trap to the program, and a
	 * tracer is attached to have rewound it. */
	if (rewound && (code[-1] == KK_X86_INT3 || (code[-2] == 0xcd && code[-1] == 0x03) ||
			kk_tracer_pid() <= 0))
		return 0;
	/* One of ours whose KK_X86_INT3 is gone (written over by step 3, or its batch
	 * has ended): run what the site holds now, provided it is a site
	 * instruction again. */
	for (int i = 0; i < 5; i++)
		now[i] = code[i];
	return kk_x86_site_insn(now, 5) ? ip : 0;
}

/*
 * A thread slow to reach the handler may look after its batch ended (no
 * batch, or one without @ip), and then find a KK_X86_INT3 at @ip again: the
 * next batch's, published after the look.  So look again while the batch in
 * flight changes under us.  That ends soon: a batch is unpublished only
 * once no handler is counted in (wait_for_traps()), and ours is, so after
 * the first change (none -> the next batch) only a stuck batch's repair
 * can move it on once more.
 */
static uintptr_t our_trap(uintptr_t ip, bool rewound)
{
	struct kk_text_batch *b = atomic_load(&kk_text_cur), *again;
	uintptr_t to;

	for (int look = 0; look < 4; look++, b = again) {
		if ((to = our_trap_in(b, ip, rewound)))
			return to;
		if ((again = atomic_load(&kk_text_cur)) == b)
			break;
	}
	return 0;
}

/* ---- the trap handler ---------------------------------------------------------- */

static bool chain_enter(pid_t tid, uintptr_t sp, int *slot)
{
	*slot = -1;
	for (int i = 0; i < CHAIN_SLOTS; i++) {
		if (atomic_load(&chaining[i]) != tid)
			continue;
		if (atomic_load(&chain_sp[i]) > sp)
			return false;		/* our own frame is above: a loop */
		atomic_store(&chain_sp[i], sp);	/* stale: ours now */
		*slot = i;
		return true;
	}
	for (int i = 0; i < CHAIN_SLOTS; i++) {
		pid_t none = 0;

		if (atomic_compare_exchange_strong(&chaining[i], &none, tid)) {
			atomic_store(&chain_sp[i], sp);
			*slot = i;
			break;
		}
	}
	return true;
}

/* The default action of SIGTRAP, now: terminate with a core dump. */
static void trap_default(void)
{
	struct sigaction dfl;
	sigset_t s;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGTRAP, &dfl, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGTRAP);
	/* Not reached unless a tracer discarded the signal: then run on. */
}

/* Not our trap: what the process would have done without us. */
static void chain_trap(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = &prev_traps[atomic_load(&prev_idx)];
	int slot;

	if (!chain_enter((pid_t)syscall(SYS_gettid), (uintptr_t)&slot, &slot)) {
		/* The handler we chained to called us back: it took us for its
		 * "previous" handler.  What comes after us is the default. */
		trap_default();
		return;
	}
	if (prev->sa_flags & SA_SIGINFO)
		prev->sa_sigaction(sig, si, uc);
	else if (prev->sa_handler == SIG_IGN && si->si_code != SI_KERNEL)
		;	/* an ignored trap someone sent: ignored */
	else if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN)
		trap_default();	/* a real trap is never ignored by the kernel either */
	else
		prev->sa_handler(sig);
	if (slot >= 0)
		atomic_store(&chaining[slot], 0);
}

/*
 * A trap at a site address that we could not resume is a bug of ours, not
 * the program's int3: say so in one line before the default action, so a
 * crash names its cause (a foreign trap stays silent).
 */
static void trap_unresumed(uintptr_t ip)
{
	struct kk_text_batch *b = atomic_load(&kk_text_cur);
	const volatile uint8_t *c = (const volatile uint8_t *)ip;

	if (!history_has(atomic_load(&history), ip) && !(b && poke_find(b->v, b->n, ip)))
		return;
	kk_warn("SIGTRAP at jump-label site %#lx, which holds %02x %02x %02x %02x %02x, "
		"could not be resumed (batch in flight: %zu sites%s): a kernelkit bug",
		(unsigned long)ip, c[0], c[1], c[2], c[3], c[4], b ? b->n : 0,
		b && atomic_load(&b->committed) ? ", committed" : "");
}

static void trap_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], to = 0;

	/* A block of SIGTRAP that a trap window deferred, handed back. */
	if (si->si_code == SI_QUEUE && kk_sync_deferred_trap(si, ucv))
		return;

	/* Sent by the kernel (SI_KERNEL for int3; valgrind says TRAP_BRKPT),
	 * not by raise() or kill(); the address decides the rest. */
	if (si->si_code > 0) {
		if (kk_text_trap_hook)
			kk_text_trap_hook(KK_TRAP_ENTER);
		/* Count ourselves in before looking: the patcher frees a batch
		 * only once nobody is in here (see wait_for_traps()). */
		atomic_fetch_add(&traps_inflight, 1);
		to = our_trap(rip - 1, false);
		if (!to)
			to = our_trap(rip, true);
		if (!to)
			trap_unresumed(rip - 1);	/* still counted in: the history stays */
		atomic_fetch_sub(&traps_inflight, 1);
	}
	if (!to) {
		chain_trap(sig, si, ucv);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
	atomic_fetch_add_explicit(&n_traps, 1, memory_order_relaxed);
}

/*
 * Install the handler, or put it back in front if the program replaced it
 * (a handler that is not ours would take our traps for crashes).  Every
 * signal is blocked while it runs: a program handler that interrupted it
 * and ran a site would trap with SIGTRAP blocked, which the kernel punishes
 * with death.
 */
static int trap_install(void)
{
	struct sigaction sa, cur;
	int next;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
		return 0;
	memset(&sa, 0, sizeof(sa));
	kk_handler_note(trap_handler);
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	next = !atomic_load(&prev_idx);
	prev_traps[next] = cur;
	atomic_store(&prev_idx, next);
	if (sigaction(SIGTRAP, &sa, NULL))
		return -errno;
	return 0;
}

int kk_arch_trap_handler_ready(void)
{
	return trap_install();
}

bool kk_arch_trap_chains_program(void)
{
	const struct sigaction *prev = &prev_traps[atomic_load(&prev_idx)];
	struct sigaction cur;

	if (sigaction(SIGTRAP, NULL, &cur) || !(cur.sa_flags & SA_SIGINFO) ||
	    cur.sa_sigaction != trap_handler)
		return false;
	if (prev->sa_flags & SA_SIGINFO)
		return prev->sa_sigaction != NULL;
	return prev->sa_handler != SIG_DFL && prev->sa_handler != SIG_IGN;
}

static void wait_for_traps(void)
{
	while (atomic_load(&traps_inflight))
		sched_yield();
}

/* ---- the history of our sites ---------------------------------------------------- */

/* Publish @h and free the copy it replaces once no handler reads it. */
static void history_publish(struct history *h)
{
	struct history *old = atomic_exchange(&history, h);

	wait_for_traps();
	free(old);
}

/* Add the sites of @v (sorted) to the history; -ENOMEM changes nothing. */
static int history_add(const struct kk_poke *v, size_t n)
{
	struct history *old = atomic_load(&history), *h;
	size_t on = old ? old->n : 0, i = 0, j = 0, k = 0;

	for (size_t m = 0; m < n; m++)
		if (!history_has(old, v[m].addr))
			k++;
	if (!k)
		return 0;
	if (!(h = malloc(sizeof(*h) + (on + k) * sizeof(h->a[0]))))
		return -ENOMEM;
	for (k = 0; i < on || j < n;) {
		uintptr_t x = i < on ? old->a[i] : UINTPTR_MAX, y = j < n ? v[j].addr : UINTPTR_MAX;

		if (x <= y)
			i++;
		if (y <= x)
			j++;
		h->a[k++] = x < y ? x : y;
	}
	h->n = k;
	history_publish(h);
	return 0;
}

void kk_arch_text_forget(uintptr_t lo, uintptr_t hi)
{
	struct history *old = atomic_load(&history), *h;
	size_t k = 0;

	if (!old)
		return;
	if (!(h = malloc(sizeof(*h) + old->n * sizeof(h->a[0]))))
		return;		/* a stale entry only matters for a foreign trap there */
	for (size_t i = 0; i < old->n; i++)
		if (old->a[i] < lo || old->a[i] >= hi)
			h->a[k++] = old->a[i];
	h->n = k;
	history_publish(h);
}

/* ---- the protocol ----------------------------------------------------------------- */

int kk_arch_text_check(struct kk_poke *p, char *err, size_t errlen)
{
	if (!kk_x86_site_insn(p->old, p->len) || !kk_x86_site_insn(p->new, p->len)) {
		snprintf(err, errlen, "site %#lx: only 5-byte NOP <-> JMP rel32 can be patched",
			 (unsigned long)p->addr);
		return -EINVAL;
	}
	p->resume = kk_x86_insn_resume(p->addr, p->new);
	p->resume_old = kk_x86_insn_resume(p->addr, p->old);
	return 0;
}

int kk_arch_text_begin(struct kk_text_batch *b, char *err, size_t errlen)
{
	int ret = trap_install();

	if (ret) {
		snprintf(err, errlen, "cannot install the SIGTRAP handler (%s)", strerror(-ret));
		return ret;
	}
	if (history_add(b->v, b->n)) {
		snprintf(err, errlen, "out of memory for a batch of %zu sites", b->n);
		return -ENOMEM;
	}
	return 0;
}

/* The int3 protocol (see the top of the file). */
int kk_arch_text_apply(struct kk_text_batch *b)
{
	int ret = kk_text_write(b, KK_SPAN_TRAP, false, KK_STEP_INT3);

	if (!ret)
		ret = kk_text_sync();
	if (!ret)
		ret = kk_text_write(b, KK_SPAN_TAIL, false, KK_STEP_TAIL);
	if (!ret)
		ret = kk_text_sync();
	if (ret)
		return ret;
	/* The point where the change takes effect: traps emulate the new
	 * instruction from now on, and a failure finishes, not undoes. */
	atomic_store(&b->committed, 1);
	ret = kk_text_write(b, KK_SPAN_HEAD, false, KK_STEP_HEAD);
	if (!ret)
		ret = kk_text_sync();
	return ret;
}

/*
 * Bring every site of @b to its final bytes, whatever a failed step left:
 * the new instruction if the batch committed, else the old one.  Tails
 * first, then heads, a sync after each, as in a batch: until the head is
 * written a thread traps (emulated) or runs the intact old instruction.
 */
int kk_arch_text_repair(struct kk_text_batch *b)
{
	bool to_old = !atomic_load(&b->committed);
	int ret = kk_text_write(b, KK_SPAN_TAIL, to_old, KK_STEP_REPAIR);

	if (!ret)
		ret = kk_text_sync();
	if (!ret)
		ret = kk_text_write(b, KK_SPAN_HEAD, to_old, KK_STEP_REPAIR);
	if (!ret)
		ret = kk_text_sync();
	return ret;
}

/* x86 keeps instruction fetch coherent with stores: the syncs are enough. */
void kk_arch_text_flush(uintptr_t addr, size_t len)
{
	(void)addr;
	(void)len;
}

void kk_arch_text_quiesce(void)
{
	wait_for_traps();
}

void kk_arch_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)code;
	pid_t tracer;

	if (p[0] != KK_X86_INT3) {
		snprintf(buf, len, "does not hold a jump-label instruction: %02x %02x %02x %02x "
			 "%02x is neither a NOP nor a JMP to its target", p[0], p[1], p[2], p[3], p[4]);
		return;
	}
	tracer = kk_tracer_pid();
	if (tracer > 0)
		snprintf(buf, len, "does not hold a jump-label instruction: it holds int3 (0xcc), "
			 "which kernelkit did not write: a breakpoint of the debugger attached "
			 "as pid %d; delete it and retry", (int)tracer);
	else
		snprintf(buf, len, "does not hold a jump-label instruction: it holds int3 (0xcc), "
			 "which kernelkit did not write: a uprobe (bpftrace, perf probe) or a "
			 "debugger breakpoint? (no tracer is attached now)");
}

void kk_arch_text_atfork_child(void)
{
	/* Threads in our handlers did not come along. */
	atomic_store(&traps_inflight, 0);
	for (int i = 0; i < CHAIN_SLOTS; i++)
		atomic_store(&chaining[i], 0);
}

unsigned long long kk_arch_text_traps_taken(void)
{
	return atomic_load(&n_traps);
}
