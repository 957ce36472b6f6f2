// SPDX-License-Identifier: MIT
/*
 * The trap window (src/text_sync_sigmask.c): a thread that starts blocking
 * SIGTRAP while a batch of the int3 protocol is in flight waits for the
 * batch instead of dying of its trap; a thread created by a creator that
 * blocked SIGTRAP before the plan is seen even if it appears after the
 * threads were listed; the planner itself never waits for its own batch;
 * and pthread_sigmask() and sigprocmask() still do what libc's do.
 *
 * Each race is forced with the white-box hooks (kk_text_write_hook holds
 * the patching thread with the int3 bytes in place, kk_sync_plan_hook holds
 * the plan between listing the threads and reading their masks); every
 * wait is for an event.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"
#include "text_poke.h"
#include "text_sync.h"

/* The int3 protocol, forced: Criterion's own thread (deaf to every signal)
 * would make the library choose page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

/* The write made with every site's trap byte in place. */
#if defined(__x86_64__)
#define TRAPS_IN_PLACE	KK_STEP_TAIL
#else
#define TRAPS_IN_PLACE	KK_STEP_INSN	/* no traps: nothing waits */
#endif

/* ---- the functions are libc's ---------------------------------------------------------- */

static uint64_t raw_mask(void)
{
	uint64_t m = 0;

	cr_assert_eq(syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &m, sizeof(m)), 0);
	return m;
}

Test(text_sync_sigmask, mask_functions_behave_as_libc)
{
	sigset_t all, usr1, old;
	Dl_info where;
	uint64_t m;

	/* Ours are the ones a program calls (a sanitizer's interceptor comes
	 * first, and calls ours). */
	cr_assert(dladdr((void *)(uintptr_t)pthread_sigmask, &where));
	cr_expect(strstr(where.dli_fname, "libkernelkit") || strstr(where.dli_fname, "san.so"),
		  "pthread_sigmask from %s", where.dli_fname);
	cr_assert(dladdr((void *)(uintptr_t)sigprocmask, &where));
	cr_expect(strstr(where.dli_fname, "libkernelkit") || strstr(where.dli_fname, "san.so"),
		  "sigprocmask from %s", where.dli_fname);

	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	cr_expect_eq(pthread_sigmask(SIG_BLOCK, &usr1, &old), 0);
	cr_expect(!sigismember(&old, SIGUSR1));
	cr_expect(raw_mask() >> (SIGUSR1 - 1) & 1);

	/* glibc's two private signals (32, 33) are never blocked. */
	sigfillset(&all);
	cr_expect_eq(pthread_sigmask(SIG_SETMASK, &all, NULL), 0);
	m = raw_mask();
	cr_expect(m >> (SIGTRAP - 1) & 1);
	cr_expect(m >> (SIGRTMAX - 1) & 1);
	cr_expect_eq(m >> 31 & 3, 0, "mask %#llx", (unsigned long long)m);
	cr_expect_eq(sigprocmask(SIG_SETMASK, &old, NULL), 0);
	cr_expect_eq(raw_mask(), 0);

	/* Errors: pthread_sigmask() returns it and keeps errno;
	 * sigprocmask() returns -1 and sets errno. */
	errno = 1234;
	cr_expect_eq(pthread_sigmask(7, &usr1, NULL), EINVAL);
	cr_expect_eq(errno, 1234);
	cr_expect_eq(pthread_sigmask(7, &all, NULL), EINVAL);
	cr_expect_eq(errno, 1234);
	cr_expect_eq(sigprocmask(7, &usr1, NULL), -1);
	cr_expect_eq(errno, EINVAL);
	cr_expect_eq(raw_mask(), 0);
}

#ifdef KK_NO_JUMP_LABEL
Test(text_sync_sigmask, no_text_is_written_in_the_fallback_build)
{
	cr_skip_test("KK_NO_JUMP_LABEL: sites are load+test+branch, no text is written");
}
#else

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static char task_state(pid_t tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	return p && p[1] && p[2] ? p[2] : 0;
}

static bool mask_has(int sig)
{
	sigset_t cur;

	cr_assert_eq(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	return sigismember(&cur, sig) == 1;
}

/* ---- a worker that blocks SIGTRAP while the int3 bytes are in place ----------------- */

DEFINE_STATIC_KEY_FALSE(kw);

__attribute__((noinline)) static int w1(void) { return static_branch_unlikely(&kw); }

enum { W_IDLE, W_GO, W_MASKING, W_DONE };
static atomic_int wphase, wtid, wresult = -1, wblocked = -1, held;

static void *blocking_worker(void *arg)
{
	sigset_t all;

	(void)arg;
	atomic_store(&wtid, gettid_());
	while (atomic_load(&wphase) != W_GO)
		sched_yield();
	sigfillset(&all);
	atomic_store(&wphase, W_MASKING);
	/* The daemon's worker: every signal blocked first, then work.  Under
	 * the old library it ran w1()'s int3 with SIGTRAP blocked: killed. */
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	atomic_store(&wresult, w1());
	atomic_store(&wblocked, mask_has(SIGTRAP));
	atomic_store(&wphase, W_DONE);
	return NULL;
}

/* With the traps in place: let the worker go, and return once it has run
 * w1() or is asleep in its pthread_sigmask(). */
static int hold_for_worker(int step, unsigned long addr, unsigned long len)
{
	int p;

	(void)addr;
	(void)len;
	if (step != TRAPS_IN_PLACE || atomic_exchange(&held, 1))
		return 0;
	atomic_store(&wphase, W_GO);
	while ((p = atomic_load(&wphase)) != W_DONE &&
	       !(p == W_MASKING && task_state(atomic_load(&wtid)) == 'S'))
		sched_yield();
	return 0;
}

Test(text_sync_sigmask, worker_blocking_sigtrap_mid_batch_waits_for_the_batch)
{
	pthread_t t;

	cr_assert_eq(pthread_create(&t, NULL, blocking_worker, NULL), 0);
	while (!atomic_load(&wtid))
		sched_yield();
	kk_text_write_hook = hold_for_worker;
	cr_assert_eq(static_branch_enable(&kw), 0, "%s", kk_jump_label_strerror());
	kk_text_write_hook = NULL;
	cr_assert_eq(pthread_join(t, NULL), 0);
	cr_expect_eq(atomic_load(&held), 1, "the batch never had its traps in place");
	cr_expect_eq(atomic_load(&wblocked), 1, "the worker's mask was not set");
#if defined(__x86_64__)
	/* It waited for the batch: it ran the new code. */
	cr_expect_eq(atomic_load(&wresult), 1);
#endif
	cr_expect_eq(w1(), 1);
}

/* ---- a thread created after the listing by a creator that blocked before ----------- */

DEFINE_STATIC_KEY_FALSE(kc);

__attribute__((noinline)) static int c1(void) { return static_branch_unlikely(&kc); }

enum { C_IDLE, C_BLOCKED, C_CREATE, C_DONE };
static atomic_int cphase, cstop;
static atomic_ulong child_runs;
static pthread_t child;

static void *late_child(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kkt-late");
	while (!atomic_load_explicit(&cstop, memory_order_relaxed)) {
		atomic_fetch_add(&child_runs, (unsigned long)c1() + 1);
		sched_yield();
	}
	return NULL;
}

/*
 * The common way to keep signals off a worker: block them, create it, and
 * restore the mask.  Every signal but the park signal: a thread deaf to both
 * is one a forced int3 protocol assumes runs no site.
 */
static void *creator(void *arg)
{
	sigset_t most, old;

	(void)arg;
	sigfillset(&most);
	sigdelset(&most, kk_park_signal());
	pthread_sigmask(SIG_SETMASK, &most, &old);
	atomic_store(&cphase, C_BLOCKED);
	while (atomic_load(&cphase) != C_CREATE)
		sched_yield();
	cr_assert_eq(pthread_create(&child, NULL, late_child, NULL), 0);
	while (!atomic_load(&child_runs))
		sched_yield();
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	atomic_store(&cphase, C_DONE);
	return NULL;
}

/* Once the plan has listed the threads: the creator creates, and unblocks
 * before its mask is read. */
static void create_after_listing(int stage)
{
	int idle = C_BLOCKED;

	if (stage == KK_PLAN_LISTED && atomic_compare_exchange_strong(&cphase, &idle, C_CREATE))
		while (atomic_load(&cphase) != C_DONE)
			sched_yield();
}

/* Had the plan missed the child, make sure it runs a trap. */
static int child_meets_traps(int step, unsigned long addr, unsigned long len)
{
	unsigned long seen = atomic_load(&child_runs);

	(void)addr;
	(void)len;
	if (step == TRAPS_IN_PLACE)
		while (atomic_load(&child_runs) < seen + 4)
			sched_yield();
	return 0;
}

Test(text_sync_sigmask, thread_created_after_the_listing_is_seen)
{
	pthread_t c;

	cr_assert_eq(pthread_create(&c, NULL, creator, NULL), 0);
	while (atomic_load(&cphase) != C_BLOCKED)
		sched_yield();
	kk_sync_plan_hook = create_after_listing;
	kk_text_write_hook = child_meets_traps;
#if defined(__x86_64__)
	/* Forced, the int3 protocol is refused for the child, by name. */
	cr_expect_eq(static_branch_enable(&kc), -ENOTSUP);
	cr_expect(strstr(kk_jump_label_strerror(), "kkt-late"), "%s", kk_jump_label_strerror());
	cr_expect(!static_key_enabled(&kc));
	cr_expect_eq(c1(), 0);
#else
	/* No traps (aarch64): a thread that blocks SIGTRAP is like any other. */
	cr_expect_eq(static_branch_enable(&kc), 0, "%s", kk_jump_label_strerror());
#endif
	kk_sync_plan_hook = NULL;
	kk_text_write_hook = NULL;
	cr_expect_eq(atomic_load(&cphase), C_DONE);
	atomic_store(&cstop, 1);
	cr_assert_eq(pthread_join(c, NULL), 0);
	cr_assert_eq(pthread_join(child, NULL), 0);
	/* Its mask restored, the same change goes through. */
	cr_expect_eq(static_branch_enable(&kc), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(c1(), 1);
}

/* ---- the planner never waits for its own batch ------------------------------------------ */

DEFINE_STATIC_KEY_FALSE(ko);

__attribute__((noinline)) static int o1(void) { return static_branch_unlikely(&ko); }

static atomic_int own_blocked = -1;

/* As a handler that interrupted the patching thread would: block SIGTRAP
 * and restore the mask, mid-batch. */
static int block_in_own_batch(int step, unsigned long addr, unsigned long len)
{
	sigset_t trap, old;

	(void)addr;
	(void)len;
	if (step != TRAPS_IN_PLACE || atomic_load(&own_blocked) >= 0)
		return 0;
	sigemptyset(&trap);
	sigaddset(&trap, SIGTRAP);
	pthread_sigmask(SIG_BLOCK, &trap, &old);
	atomic_store(&own_blocked, mask_has(SIGTRAP));
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}

Test(text_sync_sigmask, planner_blocking_sigtrap_in_its_own_batch_goes_on, .timeout = 60)
{
	kk_text_write_hook = block_in_own_batch;
	cr_assert_eq(static_branch_enable(&ko), 0, "%s", kk_jump_label_strerror());
	kk_text_write_hook = NULL;
	cr_expect_eq(atomic_load(&own_blocked), 1);
	cr_expect(!mask_has(SIGTRAP));
	cr_expect_eq(o1(), 1);
}
#endif
