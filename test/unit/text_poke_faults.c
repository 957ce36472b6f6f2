// SPDX-License-Identifier: MIT
/*
 * Patching is transactional: a write that fails, before or after the first
 * int3, never leaves a site that differs from its key, never lets a failed
 * enable be observed, and never blocks the next change.  Faults come from
 * kk_text_write_hook (src/text_poke.h), which fails chosen writes as if the
 * kernel had refused them.  Also: a site holding an int3 we did not write (a
 * debugger breakpoint), and fork() from a signal handler that interrupted
 * the patching thread mid-batch.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"
#include "text_poke.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

#ifdef KK_NO_JUMP_LABEL
/* The fallback build writes no text: nothing here applies. */
Test(text_poke_faults, faults_no_text_is_written_in_the_fallback_build)
{
	cr_skip_test("KK_NO_JUMP_LABEL: sites are load+test+branch, no text is written");
}
#else

/*
 * The steps of each arch's live protocol that the faults hit: the first
 * write after the dry run, a write before the change takes effect (with
 * some sites already written where the protocol allows it), and one after.
 */
#if defined(__x86_64__)
#define FIRST_STEP		KK_STEP_INT3
#define BEFORE_COMMIT_STEP	KK_STEP_TAIL
#define BEFORE_COMMIT_FROM	1
#define AFTER_COMMIT_STEP	KK_STEP_HEAD
#else
#define FIRST_STEP		KK_STEP_INSN
#define BEFORE_COMMIT_STEP	KK_STEP_INSN
#define BEFORE_COMMIT_FROM	2	/* one site's word already written */
#define AFTER_COMMIT_STEP	KK_STEP_SETTLE
#endif

DEFINE_STATIC_KEY_FALSE(kf);
DEFINE_STATIC_KEY_FALSE(kg);

__attribute__((noinline)) static int f1(void) { return static_branch_unlikely(&kf); }
__attribute__((noinline)) static int f2(void) { return static_branch_likely(&kf); }
__attribute__((noinline)) static int g1(void) { return static_branch_unlikely(&kg); }

/* The hook: fail writes of the steps in fail_mask, from the fail_from-th on. */
static unsigned fail_mask;
static int fail_from, writes_seen, fail_errno = EIO;

static int hook(int step, unsigned long addr, unsigned long len)
{
	(void)addr;
	(void)len;
	if (!(fail_mask & (1u << step)))
		return 0;
	return ++writes_seen >= fail_from ? -fail_errno : 0;
}

static void fail_steps(unsigned mask, int from)
{
	fail_mask = mask;
	fail_from = from;
	writes_seen = 0;
	kk_text_write_hook = hook;
}

static void heal(void)
{
	kk_text_write_hook = NULL;
}

static void stats(struct kk_text_stats *st)
{
	kk_text_get_stats(st);
}

#define M(s) (1u << (s))

Test(text_poke_faults, faults_dry_run_refusal_changes_nothing)
{
	fail_steps(M(KK_STEP_DRY), 1);
	cr_expect_eq(static_branch_enable(&kf), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "nothing changed"), "%s",
		  kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&kf));
	cr_expect_eq(f1(), 0);
	cr_expect_eq(f2(), 0);
	heal();
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 1);
	cr_expect_eq(f2(), 1);
}

Test(text_poke_faults, faults_first_live_write_fails_then_undone)
{
	struct kk_text_stats st;

	fail_steps(M(FIRST_STEP), 1);
	cr_expect_eq(static_branch_enable(&kf), -EIO);
	cr_expect(!static_key_enabled(&kf));
	cr_expect_eq(f1(), 0);
	cr_expect_eq(f2(), 0);
	stats(&st);
	cr_expect_eq(st.stuck, 0, "repaired at once: the repair writes work");
	heal();
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 1);
}

/* Every write after the first int3 fails, the repair too: the batch is stuck,
 * its sites are emulated as the old instruction (x86; aarch64 has no trap to
 * emulate with, and says so), and the next change, once writes work again,
 * repairs and applies (the old code: -EILSEQ forever). */
Test(text_poke_faults, faults_stuck_before_commit_then_repairs)
{
	struct kk_text_stats st;

	fail_steps(M(BEFORE_COMMIT_STEP) | M(KK_STEP_REPAIR), BEFORE_COMMIT_FROM);
	cr_expect_eq(static_branch_enable(&kf), -EIO);
	cr_expect(!static_key_enabled(&kf));
	cr_expect(strstr(kk_jump_label_strerror(), "until the text can be written again"), "%s",
		  kk_jump_label_strerror());
	stats(&st);
	cr_expect_eq(st.stuck, 2, "two sites await repair");
#ifdef __x86_64__
	/* The sites hold int3 now: the trap handler runs the old instruction. */
	for (int i = 0; i < 100; i++) {
		cr_expect_eq(f1(), 0);
		cr_expect_eq(f2(), 0);
	}
#endif
	/* Other keys still report their state; a change while still broken
	 * fails and says why. */
	cr_expect_eq(static_branch_enable(&kg), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "until the text can be written again"), "%s",
		  kk_jump_label_strerror());
	cr_expect_eq(g1(), 0);
	heal();
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 1);
	cr_expect_eq(f2(), 1);
	stats(&st);
	cr_expect_eq(st.stuck, 0);
	cr_expect_geq(st.repairs, 1);
	cr_expect_eq(static_branch_enable(&kg), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(g1(), 1);
}

/* A failure after the change took effect (step 3 began) finishes it: the
 * call succeeds, and the sites run the new instruction, emulated if need be. */
Test(text_poke_faults, faults_stuck_after_commit_runs_new)
{
	struct kk_text_stats st;

	fail_steps(M(AFTER_COMMIT_STEP) | M(KK_STEP_REPAIR), 1);
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect(static_key_enabled(&kf));
	stats(&st);
	cr_expect_eq(st.stuck, 2);
	cr_expect_eq(f1(), 1);
	cr_expect_eq(f2(), 1);
	heal();
	cr_expect_eq(static_branch_disable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 0);
	cr_expect_eq(f2(), 0);
	stats(&st);
	cr_expect_eq(st.stuck, 0);
}

/* The remap path takes over when /proc/self/mem fails mid-batch (EBADF: the
 * program closed our descriptor): repaired at once, nothing changed. */
Test(text_poke_faults, faults_failure_mid_batch_is_repaired_at_once)
{
	struct kk_text_stats st;

	fail_errno = EBADF;
	fail_steps(M(BEFORE_COMMIT_STEP), BEFORE_COMMIT_FROM);
	cr_expect_eq(static_branch_enable(&kf), -EIO);
	stats(&st);
	cr_expect_eq(st.stuck, 0);
	cr_expect_eq(st.repairs, 1);
	cr_expect_eq(f1(), 0);
	cr_expect_eq(f2(), 0);
	heal();
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 1);
}

/* ---- a debugger's breakpoint on a site ----------------------------------------- */

/* What gdb's "break *site" writes: int3 over the first byte; aarch64's BRK #0. */
#if defined(__x86_64__)
static const uint8_t bp_insn[] = { 0xcc };
#define BRK_NAME "int3"
#else
static const uint8_t bp_insn[] = { 0x00, 0x00, 0x20, 0xd4 };
#define BRK_NAME "brk"
#endif

Test(text_poke_faults, breakpoint_foreign_breakpoint_on_site_is_named)
{
	uintptr_t site = 0;
	int fd;
	uint8_t orig[sizeof(bp_insn)];

	/* f1's site: the NOP among its first instructions. */
	const uint8_t *p = (const uint8_t *)(uintptr_t)f1;

	for (int i = 0; i < 64 && !site; i += KKT_SITE_LEN == 4 ? 4 : 1)
		if (kkt_is_nop(p + i))
			site = (uintptr_t)(p + i);
	cr_assert(site, "no site NOP in f1");
	memcpy(orig, (const void *)site, sizeof(orig));
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bp_insn, sizeof(bp_insn), (off_t)site), (ssize_t)sizeof(bp_insn));
#ifdef __aarch64__
	__builtin___clear_cache((char *)site, (char *)site + sizeof(bp_insn));
#endif
	cr_expect_eq(static_branch_enable(&kf), -EILSEQ);
	cr_expect(strstr(kk_jump_label_strerror(), "debugger"), "%s", kk_jump_label_strerror());
	cr_expect(strstr(kk_jump_label_strerror(), BRK_NAME), "%s", kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&kf));
	/* the breakpoint is deleted */
	cr_assert_eq(pwrite(fd, orig, sizeof(orig), (off_t)site), (ssize_t)sizeof(orig));
#ifdef __aarch64__
	__builtin___clear_cache((char *)site, (char *)site + sizeof(bp_insn));
#endif
	close(fd);
	cr_expect_eq(f2(), 0, "the other site did not change");
	cr_expect_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(f1(), 1);
}

/* ---- fork() from a signal handler that interrupted the patcher ------------------ */

static volatile sig_atomic_t child_mode, in_child;
static int step_to_fork;

static void on_usr1(int sig)
{
	pid_t pid;

	(void)sig;
	pid = fork();
	if (pid == 0) {
		in_child = 1;
		/* Sites run in the child, in the handler, mid-batch: they must
		 * behave as the old instruction (not committed) or the new
		 * (committed), never trap to death. */
		if (child_mode == 0)
			_exit(f1() == (step_to_fork == AFTER_COMMIT_STEP) &&
			      f2() == (step_to_fork == AFTER_COMMIT_STEP) ? 0 : 1);
		return;		/* mode 1: the batch goes on in the child */
	}
	if (pid > 0) {
		int status = -1;

		waitpid(pid, &status, 0);
		child_mode = WIFEXITED(status) ? 100 + WEXITSTATUS(status) : 200 + WTERMSIG(status);
	}
}

static int fork_hook(int step, unsigned long addr, unsigned long len)
{
	(void)addr;
	(void)len;
	if (step == step_to_fork && !in_child) {
		kk_text_write_hook = NULL;
		raise(SIGUSR1);
	}
	return 0;
}

static void fork_mid_batch(int step, int mode)
{
	signal(SIGUSR1, on_usr1);
	step_to_fork = step;
	child_mode = mode;
	kk_text_write_hook = fork_hook;
	cr_assert_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	if (in_child) {
		/* Mode 1, in the child: the batch finished here. */
		_exit(static_key_enabled(&kf) && f1() == 1 && f2() == 1 ? 0 : 1);
	}
	cr_expect_eq(child_mode, 100, "child: %d (1xx exit status, 2xx signal)", child_mode);
	cr_expect_eq(f1(), 1);
	cr_expect_eq(f2(), 1);
}

Test(text_poke_faults, fork_from_handler_before_commit_runs_sites) { fork_mid_batch(BEFORE_COMMIT_STEP, 0); }
Test(text_poke_faults, fork_from_handler_after_commit_runs_sites) { fork_mid_batch(AFTER_COMMIT_STEP, 0); }
Test(text_poke_faults, fork_from_handler_child_finishes_batch) { fork_mid_batch(BEFORE_COMMIT_STEP, 1); }

#ifdef __x86_64__
/* ---- a trap that reaches the handler after its batch ended ----------------------- */

/*
 * A thread hits a site's int3, and is slow to reach the handler: the batch
 * ends meanwhile, and the handler finds no batch in flight.  Before it reads
 * the site's bytes, the next batch puts its own int3 there.  The old handler
 * took that int3 for a foreign trap and the process died of SIGTRAP (seen
 * once, in the ASan pass of jump_label_stress).  The hooks hold the trapping
 * thread at each of the two points; every wait is for an event.
 */
DEFINE_STATIC_KEY_FALSE(kl);

__attribute__((noinline)) static int l1(void) { return static_branch_unlikely(&kl); }

enum { LATE_IDLE, LATE_RUN, LATE_ENTERED, LATE_B_DONE, LATE_LOOKED, LATE_C_INT3, LATE_DONE };
static atomic_int late_phase, late_result = -1;

static void late_wait(int phase)
{
	while (atomic_load(&late_phase) < phase)
		sched_yield();
}

/* Move from @from to @to (each point acts once), then wait for @until. */
static void late_step(int from, int to, int until)
{
	if (atomic_compare_exchange_strong(&late_phase, &from, to))
		late_wait(until);
}

static void late_trap_hook(int stage)
{
	if (stage == KK_TRAP_ENTER)
		late_step(LATE_RUN, LATE_ENTERED, LATE_B_DONE);	/* until the batch ended */
	else
		late_step(LATE_B_DONE, LATE_LOOKED, LATE_C_INT3);	/* until the next int3 */
}

static int late_write_hook(int step, unsigned long addr, unsigned long len)
{
	(void)addr;
	(void)len;
	if (step == KK_STEP_TAIL) {
		late_step(LATE_IDLE, LATE_RUN, LATE_ENTERED);	/* batch 1: trap on its int3 */
		late_step(LATE_LOOKED, LATE_C_INT3, LATE_DONE);	/* batch 2: int3 there again */
	}
	return 0;
}

static void *late_thread(void *arg)
{
	(void)arg;
	late_wait(LATE_RUN);
	atomic_store(&late_result, l1());
	atomic_store(&late_phase, LATE_DONE);
	return NULL;
}

Test(text_poke_faults, trap_late_for_its_batch_meets_the_next_one)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, late_thread, NULL), 0);
	kk_text_trap_hook = late_trap_hook;
	kk_text_write_hook = late_write_hook;
	cr_assert_eq(static_branch_enable(&kl), 0, "%s", kk_jump_label_strerror());
	atomic_store(&late_phase, LATE_B_DONE);
	late_wait(LATE_LOOKED);		/* the handler saw no batch in flight */
	cr_assert_eq(static_branch_disable(&kl), 0, "%s", kk_jump_label_strerror());
	pthread_join(t, NULL);
	kk_text_trap_hook = NULL;
	heal();
	/* The call overlapped both changes: either value is right. */
	cr_expect(atomic_load(&late_result) == 0 || atomic_load(&late_result) == 1, "%d",
		  atomic_load(&late_result));
	cr_expect_eq(l1(), 0);
}
#endif

/* ---- stop_machine (KK_TEXT_SYNC=stop-machine) ----------------------------------- */

DEFINE_STATIC_KEY_FALSE(kh);

/* Two sites of one key on two pages: h2 starts a page of its own. */
__attribute__((noinline)) static int h1(void) { return static_branch_unlikely(&kh); }
__attribute__((noinline, aligned(4096))) static int h2(void) { return static_branch_unlikely(&kh); }

static void force_stop_machine(void)
{
	setenv("KK_TEXT_SYNC", "stop-machine", 1);
}

Test(text_poke_faults, stop_machine_failed_write_is_undone, .init = force_stop_machine)
{
	struct kk_jump_label_stats st;

	fail_steps(M(KK_STEP_STOP), 2);
	cr_expect_eq(static_branch_enable(&kh), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "nothing changed"), "%s",
		  kk_jump_label_strerror());
	cr_expect_eq(h1(), 0);
	cr_expect_eq(h2(), 0);
	heal();
	cr_expect_eq(static_branch_enable(&kh), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(h1(), 1);
	cr_expect_eq(h2(), 1);
	kk_jump_label_get_stats(&st);
	cr_expect_geq(st.stopped, 1);
	cr_expect_str_eq(kk_jump_label_sync_method(), "stop-machine");
}

/* The remaining hazard, shown: the undo fails too, and a site stays changed
 * while the key says disabled.  Reported, never silent. */
Test(text_poke_faults, stop_machine_stop_machine_undo_failure_is_reported, .init = force_stop_machine)
{
	cr_assert_neq((uintptr_t)h1 >> 12, (uintptr_t)h2 >> 12, "h1 and h2 share a page");
	fail_steps(M(KK_STEP_STOP) | M(KK_STEP_REPAIR), 2);
	cr_expect_eq(static_branch_enable(&kh), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "undoing it"), "%s", kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&kh));
	cr_expect_eq(h1() + h2(), 1, "one page written, the other not");
}

/* ---- the page swap (KK_TEXT_SYNC=swap) ------------------------------------------ */

DEFINE_STATIC_KEY_FALSE(ks);

/* Two sites of one key two pages apart: two runs, two mremap() calls. */
static volatile int never;

__attribute__((noinline, aligned(4096))) static int s1(void)
{
	int r = static_branch_unlikely(&ks);

	if (never)	/* 8 KiB that never run: s2 lies past them */
		__asm__ volatile(".skip 8192, 0");
	return r;
}
__attribute__((noinline, aligned(4096))) static int s2(void) { return static_branch_unlikely(&ks); }

static void force_swap(void)
{
	setenv("KK_TEXT_SYNC", "swap", 1);
	cr_assert_geq(((uintptr_t)s2 >> 12) - ((uintptr_t)s1 >> 12), 2, "s1 and s2 are too close");
}

Test(text_poke_faults, swap_flip_by_swaps, .init = force_swap)
{
	struct kk_text_stats a, b;

	stats(&a);
	cr_expect_eq(static_branch_enable(&ks), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(s1() + s2(), 2);
	cr_expect_eq(static_branch_disable(&ks), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(s1() + s2(), 0);
	stats(&b);
	cr_expect_eq(b.swapped - a.swapped, 2);
	cr_expect_eq(b.syncs - a.syncs, 2, "one sync a batch");
	cr_expect_str_eq(kk_jump_label_sync_method(), "swap");
}

/* The second run's mremap() fails: the first is swapped back. */
Test(text_poke_faults, swap_failure_mid_batch_changes_nothing, .init = force_swap)
{
	fail_steps(M(KK_STEP_SWAP), 2);
	cr_expect_eq(static_branch_enable(&ks), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "nothing changed"), "%s",
		  kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&ks));
	cr_expect_eq(s1(), 0);
	cr_expect_eq(s2(), 0);
	heal();
	cr_expect_eq(static_branch_enable(&ks), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(s1() + s2(), 2);
}

/* mremap() refused for good (a seccomp filter, sealed text): nothing
 * changed, one line, and forced swaps are refused from then on. */
Test(text_poke_faults, swap_refused_changes_nothing, .init = force_swap)
{
	fail_errno = EPERM;
	fail_steps(M(KK_STEP_SWAP), 1);
	cr_expect_lt(static_branch_enable(&ks), 0);
	cr_expect(strstr(kk_jump_label_strerror(), "mremap refused"), "%s",
		  kk_jump_label_strerror());
	cr_expect_null(strchr(kk_jump_label_strerror(), '\n'));
	cr_expect(!static_key_enabled(&ks));
	cr_expect_eq(s1() + s2(), 0);
	heal();
	fail_errno = EIO;
}

/* The undo fails too: reported, never silent. */
Test(text_poke_faults, swap_undo_failure_is_reported, .init = force_swap)
{
	fail_steps(M(KK_STEP_SWAP) | M(KK_STEP_REPAIR), 2);
	cr_expect_eq(static_branch_enable(&ks), -EIO);
	cr_expect(strstr(kk_jump_label_strerror(), "undoing it"), "%s", kk_jump_label_strerror());
	cr_expect_eq(s1() + s2(), 1, "one run swapped, the other not");
}
#endif
