// SPDX-License-Identifier: MIT
/* The static-key API rules: the four branch combinations, refcounts, the
 * _cpuslocked contract, the queued API, deferred keys and error paths. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "kktest.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

DEFINE_STATIC_KEY_FALSE(kf);
DEFINE_STATIC_KEY_TRUE(kt);
DEFINE_STATIC_KEY_ARRAY_FALSE(karr, 4);

__attribute__((noinline)) static int u_f(void) { return static_branch_unlikely(&kf); }
__attribute__((noinline)) static int l_f(void) { return static_branch_likely(&kf); }
__attribute__((noinline)) static int u_t(void) { return static_branch_unlikely(&kt); }
__attribute__((noinline)) static int l_t(void) { return static_branch_likely(&kt); }
__attribute__((noinline)) static int arr(int i)
{
	switch (i) {
	case 0: return static_branch_unlikely(&karr[0]);
	case 1: return static_branch_unlikely(&karr[1]);
	case 2: return static_branch_likely(&karr[2]);
	default: return static_branch_likely(&karr[3]);
	}
}

static unsigned long long syncs(void)
{
	struct kk_jump_label_stats st;

	kk_jump_label_get_stats(&st);
	return st.syncs;
}

static unsigned long long stops(void)
{
	struct kk_jump_label_stats st;

	kk_jump_label_get_stats(&st);
	return st.stopped;
}

Test(jump_label_api, branches_initial_values)
{
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(l_f(), 0);
	cr_expect_eq(u_t(), 1);
	cr_expect_eq(l_t(), 1);
	cr_expect(!static_key_enabled(&kf));
	cr_expect(static_key_enabled(&kt));
	for (int i = 0; i < 4; i++)
		cr_expect_eq(arr(i), 0, "karr[%d]", i);
}

Test(jump_label_api, branches_enable_disable_all_four)
{
	cr_assert_eq(static_branch_enable(&kf), 0);
	cr_assert_eq(static_branch_disable(&kt), 0);
	cr_expect_eq(u_f(), 1);
	cr_expect_eq(l_f(), 1);
	cr_expect_eq(u_t(), 0);
	cr_expect_eq(l_t(), 0);
	cr_expect(static_key_enabled(&kf));
	cr_expect(!static_key_enabled(&kt));
	/* and back */
	cr_assert_eq(static_branch_disable(&kf), 0);
	cr_assert_eq(static_branch_enable(&kt), 0);
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(l_f(), 0);
	cr_expect_eq(u_t(), 1);
	cr_expect_eq(l_t(), 1);
}

Test(jump_label_api, branches_array_elements_are_independent)
{
	cr_assert_eq(static_branch_enable(&karr[1]), 0);
	cr_assert_eq(static_branch_enable(&karr[3]), 0);
	cr_expect_eq(arr(0), 0);
	cr_expect_eq(arr(1), 1);
	cr_expect_eq(arr(2), 0);
	cr_expect_eq(arr(3), 1);
}

Test(jump_label_api, branches_idempotent_and_cheap)
{
	unsigned long long s0;

	cr_assert_eq(static_branch_enable(&kf), 0);
	s0 = syncs();
	cr_assert_eq(static_branch_enable(&kf), 0);	/* already on: no patching */
	cr_expect_eq(syncs(), s0);
	cr_expect_eq(static_key_count(&kf.key), 1);
}

Test(jump_label_api, refcount_inc_dec)
{
	cr_assert_eq(static_branch_inc(&kf), 0);
	cr_assert_eq(static_branch_inc(&kf), 0);
	cr_expect_eq(static_key_count(&kf.key), 2);
	cr_expect_eq(u_f(), 1);
	cr_assert_eq(static_branch_dec(&kf), 0);
	cr_expect_eq(u_f(), 1, "one reference left: still on");
	cr_assert_eq(static_branch_dec(&kf), 0);
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(static_key_count(&kf.key), 0);
}

Test(jump_label_api, refcount_true_key_dec_then_inc)
{
	/* A TRUE key starts with a count of 1: dec switches it off. */
	cr_expect_eq(static_key_count(&kt.key), 1);
	cr_assert_eq(static_branch_dec(&kt), 0);
	cr_expect_eq(l_t(), 0);
	cr_assert_eq(static_branch_inc(&kt), 0);
	cr_expect_eq(l_t(), 1);
}

Test(jump_label_api, refcount_dec_below_zero_is_refused)
{
	cr_expect_eq(static_branch_dec(&kf), -EINVAL);
	cr_expect_eq(static_key_count(&kf.key), 0);
	cr_expect(strstr(kk_jump_label_strerror(), "count is 0"));
}

Test(jump_label_api, refcount_disable_of_shared_key_is_refused)
{
	cr_assert_eq(static_branch_inc(&kf), 0);
	cr_assert_eq(static_branch_inc(&kf), 0);
	cr_expect_eq(static_branch_disable(&kf), -EBUSY);
	cr_expect_eq(static_key_count(&kf.key), 2);
	cr_expect_eq(u_f(), 1);
	cr_expect_eq(static_branch_enable(&kf), 0, "enable of an enabled key is a no-op");
	cr_expect_eq(static_key_count(&kf.key), 2);
}

Test(jump_label_api, errors_null_key)
{
	cr_expect_eq(static_key_enable(NULL), -EINVAL);
	cr_expect_eq(static_key_slow_inc(NULL), -EINVAL);
	cr_expect_eq(static_key_enable_queued(NULL), -EINVAL);
}

Test(jump_label_api, cpuslocked_needs_the_lock)
{
	cr_expect_eq(static_branch_enable_cpuslocked(&kf), -EPERM);
	cr_expect_eq(u_f(), 0);
	jump_label_lock();
	cr_expect_eq(static_branch_enable_cpuslocked(&kf), 0);
	cr_expect_eq(static_branch_inc_cpuslocked(&kf), 0);
	cr_expect_eq(static_branch_enable(&kf), -EDEADLK, "plain call under the lock");
	cr_expect_eq(static_branch_dec_cpuslocked(&kf), 0);
	cr_expect_eq(static_branch_disable_cpuslocked(&kf), 0);
	jump_label_unlock();
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(static_key_count(&kf.key), 0);
}

Test(jump_label_api, queued_nothing_moves_until_apply)
{
	cr_assert_eq(static_branch_enable_queued(&kf), 0);
	cr_assert_eq(static_branch_disable_queued(&kt), 0);
	cr_assert_eq(static_branch_enable_queued(&karr[0]), 0);
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(l_t(), 1);
	cr_expect(!static_key_enabled(&kf));
	cr_assert_eq(static_key_apply_queued(), 0);
	cr_expect_eq(u_f(), 1);
	cr_expect_eq(l_f(), 1);
	cr_expect_eq(l_t(), 0);
	cr_expect_eq(u_t(), 0);
	cr_expect_eq(arr(0), 1);
	cr_expect(static_key_enabled(&kf));
	cr_expect(!static_key_enabled(&kt));
}

Test(jump_label_api, queued_one_batch_for_many_keys)
{
	unsigned long long s0 = syncs(), t0 = stops();

	cr_assert_eq(static_branch_enable_queued(&kf), 0);
	cr_assert_eq(static_branch_disable_queued(&kt), 0);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(static_branch_enable_queued(&karr[i]), 0);
	cr_assert_eq(static_key_apply_queued(), 0);
#ifndef KK_NO_JUMP_LABEL
	/* The arch's syncs (x86: three for the int3 protocol; aarch64: two);
	 * none under stop_machine (valgrind, a tracer), where the stop itself
	 * is the one sync. */
	cr_expect(syncs() - s0 == KKT_SYNCS_PER_BATCH || (syncs() - s0 == 0 && stops() - t0 == 1),
		  "one batch: %d syncs (or one stop), got %llu syncs", KKT_SYNCS_PER_BATCH,
		  syncs() - s0);
#else
	(void)t0;
	cr_expect_eq(syncs() - s0, 0);
#endif
	s0 = syncs();
	cr_assert_eq(static_key_apply_queued(), 0, "empty queue");
	cr_expect_eq(syncs(), s0);
}

Test(jump_label_api, queued_last_queued_state_wins_and_immediate_dequeues)
{
	cr_assert_eq(static_branch_enable_queued(&kf), 0);
	cr_assert_eq(static_branch_disable_queued(&kf), 0);
	cr_assert_eq(static_branch_enable_queued(&karr[1]), 0);
	cr_assert_eq(static_branch_disable(&karr[1]), 0);	/* takes it off the queue */
	cr_assert_eq(static_key_apply_queued(), 0);
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(arr(1), 0);
}

Test(jump_label_api, queued_discard)
{
	cr_assert_eq(static_branch_enable_queued(&kf), 0);
	kk_static_key_discard_queued();
	cr_assert_eq(static_key_apply_queued(), 0);
	cr_expect_eq(u_f(), 0);
}

Test(jump_label_api, queued_refused_apply_changes_nothing)
{
	cr_assert_eq(static_branch_inc(&karr[2]), 0);
	cr_assert_eq(static_branch_inc(&karr[2]), 0);
	cr_assert_eq(static_branch_enable_queued(&kf), 0);
	cr_assert_eq(static_branch_disable_queued(&karr[2]), 0);
	cr_expect_eq(static_key_apply_queued(), -EBUSY);
	cr_expect_eq(u_f(), 0, "no key moved");
	cr_expect_eq(arr(2), 1, "likely site of a FALSE key held at 2");
	cr_expect_eq(static_key_count(&karr[2].key), 2);
	/* the queue is kept: fix the cause and apply again */
	cr_assert_eq(static_branch_enable_queued(&karr[2]), 0);
	cr_expect_eq(static_key_apply_queued(), 0);
	cr_expect_eq(u_f(), 1);
}

DEFINE_STATIC_KEY_DEFERRED_FALSE(dk, 10000);
DEFINE_STATIC_KEY_DEFERRED_FALSE(dk_fast, 20);

__attribute__((noinline)) static int u_dk(void) { return static_branch_unlikely(&dk.key); }
__attribute__((noinline)) static int u_dkf(void) { return static_branch_unlikely(&dk_fast.key); }

Test(jump_label_api, deferred_last_dec_waits_for_the_timeout)
{
	cr_assert_eq(static_branch_deferred_inc(&dk), 0);
	cr_expect_eq(u_dk(), 1);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk), 0);
	/* 10 s timeout: still on now. */
	cr_expect_eq(u_dk(), 1);
	cr_expect_eq(static_key_count(&dk.key.key), 1);
	static_key_deferred_flush(&dk);
	cr_expect_eq(u_dk(), 0);
	cr_expect_eq(static_key_count(&dk.key.key), 0);
}

Test(jump_label_api, deferred_inc_before_expiry_keeps_it_on)
{
	cr_assert_eq(static_branch_deferred_inc(&dk), 0);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk), 0);
	cr_assert_eq(static_branch_deferred_inc(&dk), 0);
	cr_expect_eq(static_key_count(&dk.key.key), 2);
	static_key_deferred_flush(&dk);		/* the pending dec runs: 2 -> 1 */
	cr_expect_eq(static_key_count(&dk.key.key), 1);
	cr_expect_eq(u_dk(), 1);
}

Test(jump_label_api, deferred_worker_carries_out_the_dec)
{
	struct timespec ts = { 0, 5 * 1000 * 1000 };

	cr_assert_eq(static_branch_deferred_inc(&dk_fast), 0);
	cr_assert_eq(static_branch_slow_dec_deferred(&dk_fast), 0);
	/* Bounded wait for the worker (20 ms timeout; allow 10 s). */
	for (int i = 0; i < 2000 && u_dkf(); i++)
		nanosleep(&ts, NULL);
	cr_expect_eq(u_dkf(), 0);
	cr_expect_eq(static_key_count(&dk_fast.key.key), 0);
}

Test(jump_label_api, deferred_dec_of_zero_is_refused)
{
	cr_expect_eq(static_branch_slow_dec_deferred(&dk), -EINVAL);
}

Test(jump_label_api, deferred_rate_limit_sets_the_timeout)
{
	struct static_key_deferred d = { .key = STATIC_KEY_INIT_FALSE };

	jump_label_rate_limit(&d, 1234);
	cr_expect_eq(d.timeout, 1234);
}

Test(jump_label_api, listing_static_keys_file)
{
	char *txt = NULL, line[128];

	cr_assert_eq(static_branch_enable(&kf), 0);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(!strncmp(txt, "# name enabled count sites module mode\n", 39));
#ifndef KK_NO_JUMP_LABEL
	snprintf(line, sizeof(line), "\nkf 1 1 2 jump_label_api r-\n");
	cr_expect(strstr(txt, line), "listing:\n%s", txt);
	snprintf(line, sizeof(line), "\nkt 1 1 2 jump_label_api r-\n");
	cr_expect(strstr(txt, line), "listing:\n%s", txt);
	cr_expect(strstr(txt, "\nkarr[2] 0 0 1 jump_label_api r-\n"), "listing:\n%s", txt);
#else
	(void)line;
#endif
	free(txt);
}

#ifndef KK_NO_JUMP_LABEL
/* Text is never left writable and executable. */
static int have_wx_mapping(void)
{
	char l[512], perm[5];
	int wx = 0;
	FILE *f = fopen("/proc/self/maps", "r");

	while (f && fgets(l, sizeof(l), f))
		if (sscanf(l, "%*x-%*x %4s", perm) == 1 && perm[1] == 'w' && perm[2] == 'x')
			wx = 1;
	if (f)
		fclose(f);
	return wx;
}

Test(jump_label_api, patching_never_writable_and_executable)
{
	cr_assert_eq(static_branch_enable(&kf), 0);
	cr_expect(!have_wx_mapping());
	cr_expect_str_eq(kk_jump_label_method(), "proc-mem");
}

/* KB of anonymous (copy-on-write broken) memory in the mapping holding @addr. */
static long anon_kb_at(const void *addr)
{
	char l[512];
	unsigned long lo, hi;
	long kb = -1;
	int in = 0;
	FILE *f = fopen("/proc/self/smaps", "r");

	while (f && fgets(l, sizeof(l), f)) {
		if (sscanf(l, "%lx-%lx ", &lo, &hi) == 2 && strchr(l, ' ') == l + strcspn(l, " "))
			in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
		else if (in && sscanf(l, "Anonymous: %ld kB", &kb) == 1)
			break;
	}
	if (f)
		fclose(f);
	return kb;
}

/*
 * Registration leaves the text alone: a page that holds sites stays shared
 * with the file (and with other processes) until a site on it changes.
 */
Test(jump_label_api, patching_site_pages_stay_shared_until_a_site_changes)
{
	cr_expect_eq(u_f(), 0);		/* the page is mapped, from the file */
	cr_expect_eq(anon_kb_at((const void *)u_f), 0, "a site page was copied at load");
	cr_assert_eq(static_branch_enable(&kf), 0);
	cr_expect_gt(anon_kb_at((const void *)u_f), 0, "the patched page is not private");
}

/*
 * The write method is chosen with the first patch, from the environment: run
 * this test again in a fresh process with KK_TEXT_POKE=remap.
 */
Test(jump_label_api, patching_remap_fallback)
{
	if (!getenv("KK_TEXT_POKE")) {
		int st;
		pid_t pid = fork();

		cr_assert_geq(pid, 0);
		if (pid == 0) {
			/* a clean environment: Criterion's worker variables would
			 * make the new process think it is a worker */
			char *const env[] = { "KK_TEXT_POKE=remap", "KK_CONTROL=0", NULL };

			execle("/proc/self/exe", "jump_label_api", "--filter", "jump_label_api/patching_remap_fallback",
			       "--jobs", "1", (char *)NULL, env);
			_exit(127);
		}
		cr_assert_eq(waitpid(pid, &st, 0), pid);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "re-run with KK_TEXT_POKE=remap: %#x", st);
		return;
	}
	cr_assert_eq(static_branch_enable(&kf), 0, "%s", kk_jump_label_strerror());
	cr_expect_str_eq(kk_jump_label_method(), "remap");
	cr_expect_eq(u_f(), 1);
	cr_expect_eq(l_f(), 1);
	cr_assert_eq(static_branch_disable(&kf), 0);
	cr_assert_eq(static_branch_disable(&kt), 0);
	cr_expect_eq(u_f(), 0);
	cr_expect_eq(l_t(), 0);
	cr_expect(!have_wx_mapping());
}

/*
 * All or nothing: a key with two sites, one of which does not hold a
 * jump-label instruction, is refused and the good site is left alone.
 * The "object" is hand-built in an anonymous mapping: code page + table.
 */
Test(jump_label_api, patching_bad_site_changes_nothing)
{
	struct static_key_false key = STATIC_KEY_FALSE_INIT;
	long pg = sysconf(_SC_PAGESIZE);
	uint8_t *code = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct jump_entry *tab = (struct jump_entry *)(code + pg);
	struct static_key **slot = (struct static_key **)(code + pg + 64);

	cr_assert_neq(code, MAP_FAILED);
	memset(code, 0xc3, pg);
	kkt_put_nop(code);			/* good site at 0, target 32 */
	memset(code + 16, 0x90, KKT_SITE_LEN);	/* bad site at 16, target 32 */
	*slot = &key.key;
	tab[0].code = (int32_t)((intptr_t)code - (intptr_t)&tab[0].code);
	tab[0].target = (int32_t)((intptr_t)(code + 32) - (intptr_t)&tab[0].target);
	tab[0].key = (int64_t)((intptr_t)slot - (intptr_t)&tab[0].key);
	tab[1].code = (int32_t)((intptr_t)(code + 16) - (intptr_t)&tab[1].code);
	tab[1].target = (int32_t)((intptr_t)(code + 32) - (intptr_t)&tab[1].target);
	tab[1].key = (int64_t)((intptr_t)slot - (intptr_t)&tab[1].key);
	cr_assert_eq(mprotect(code, pg, PROT_READ | PROT_EXEC), 0);

	cr_assert_eq(kk_jump_label_add_object(tab, tab + 2), 0);
	cr_expect_eq(static_branch_enable(&key), -EILSEQ);
	cr_expect(strstr(kk_jump_label_strerror(), "does not hold"), "%s", kk_jump_label_strerror());
	cr_expect(kkt_is_nop(code), "good site untouched");
	cr_expect_eq(static_key_count(&key.key), 0);
	kk_jump_label_del_object(tab, tab + 2, NULL);
}

static volatile int user_traps;
static void user_trap(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	user_traps++;
}

Test(jump_label_api, patching_chains_foreign_sigtrap)
{
	struct sigaction sa = { .sa_sigaction = user_trap, .sa_flags = SA_SIGINFO };

	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	cr_assert_eq(static_branch_enable(&kf), 0);	/* puts our handler in front */
#if defined(__x86_64__)
	__asm__ volatile("int3");			/* not one of our sites */
#else
	raise(SIGTRAP);		/* aarch64 installs no SIGTRAP handler: chaining is moot */
#endif
	raise(SIGTRAP);
	cr_expect_eq(user_traps, 2);
	cr_expect_eq(u_f(), 1);
}
#endif
