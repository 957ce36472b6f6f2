// SPDX-License-Identifier: MIT
/*
 * The panic flow, each case in a forked child: notifier order, stopping the
 * other threads, recursive panics and faults, panics from signal handlers
 * and from several threads at once, oops handling and BUG().
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include <kernelkit/panic.h>
#include "panic_kid.h"

#define STATUS KK_PANIC_EXIT_STATUS_DEFAULT

/* Through volatile pointers, so the compiler neither warns nor folds the faults. */
static volatile int *volatile bad_ptr8 = (volatile int *)(uintptr_t)8;
static volatile int *volatile bad_ptr16 = (volatile int *)(uintptr_t)16;

/* ---- notifier order ---------------------------------------------------------- */

static int say(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	char buf[96];
	int n = snprintf(buf, sizeof(buf), "<N%d:%s>\n", nb->priority, (const char *)data);

	(void)action;
	if (write(1, buf, (size_t)n) < 0)
		return KK_NOTIFY_DONE;
	return KK_NOTIFY_OK;
}

static int say_second(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	(void)nb; (void)action; (void)data;
	if (write(1, "<N10b>\n", 7) < 0)
		return KK_NOTIFY_DONE;
	return KK_NOTIFY_DONE;
}

static struct kk_panic_notifier n_0 = { say, 0, NULL }, n_100 = { say, 100, NULL },
	n_m5 = { say, -5, NULL }, n_10 = { say, 10, NULL }, n_10b = { say_second, 10, NULL },
	n_gone = { say, 50, NULL };

static void order_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	/* registered out of order; n_gone is removed again */
	if (kk_panic_notifier_register(&n_0) || kk_panic_notifier_register(&n_m5) ||
	    kk_panic_notifier_register(&n_10) || kk_panic_notifier_register(&n_gone) ||
	    kk_panic_notifier_register(&n_100) || kk_panic_notifier_register(&n_10b) ||
	    kk_panic_notifier_unregister(&n_gone))
		_exit(3);
	panic("order %d", 42);
}

Test(panic_flow, notifiers_run_in_priority_order)
{
	struct kid k;
	const char *a, *b, *c, *d, *e;

	kid_start(&k, order_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0, "child hung:\n%s", k.out);
	cr_assert_eq(kid_exit_code(&k), STATUS, "status %#x\n%s", k.status, k.out);
	cr_assert(strstr(k.out, "kernelkit: panic - not syncing: order 42"), "%s", k.out);
	a = strstr(k.out, "<N100:order 42>");
	b = strstr(k.out, "<N10:order 42>");
	c = strstr(k.out, "<N10b>");
	d = strstr(k.out, "<N0:order 42>");
	e = strstr(k.out, "<N-5:order 42>");
	cr_assert(a && b && c && d && e, "a notifier did not run:\n%s", k.out);
	cr_assert(a < b && b < c && c < d && d < e, "wrong order:\n%s", k.out);
	cr_assert_null(strstr(k.out, "<N50"), "an unregistered notifier ran:\n%s", k.out);
	cr_assert_eq(kid_count(&k, "<N"), 5);
}

static int stopper(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	(void)nb; (void)action; (void)data;
	return KK_NOTIFY_STOP;
}

static struct kk_panic_notifier n_stop = { stopper, 20, NULL }, n_after = { say, 5, NULL },
	n_before = { say, 30, NULL };

static void stop_chain_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_notifier_register(&n_after);
	kk_panic_notifier_register(&n_stop);
	kk_panic_notifier_register(&n_before);
	panic("stop");
}

Test(panic_flow, notify_stop_ends_the_chain)
{
	struct kid k;

	kid_start(&k, stop_chain_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "<N30:stop>"), "%s", k.out);
	cr_assert(strstr(k.out, "stopped the chain"), "%s", k.out);
	cr_assert_null(strstr(k.out, "<N5:"), "%s", k.out);
}

/* ---- other threads stop -------------------------------------------------------- */

#define NSPIN 3
static volatile unsigned long spins[NSPIN];
static atomic_int spinning;

static void *spinner(void *arg)
{
	long i = (long)arg;

	atomic_fetch_add(&spinning, 1);
	for (;;)
		spins[i]++;
	return NULL;
}

static void start_spinners(void)
{
	pthread_t t;

	for (long i = 0; i < NSPIN; i++)
		if (pthread_create(&t, NULL, spinner, (void *)i))
			_exit(4);
	while (atomic_load(&spinning) < NSPIN)
		sched_yield();
	kid_sleep_ms(20);
}

/* Runs after the threads were stopped (default) or before (notifiers_first). */
static int check_frozen(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	unsigned long a[NSPIN], b[NSPIN];
	int moved = 0;

	(void)nb; (void)action; (void)data;
	for (int i = 0; i < NSPIN; i++)
		a[i] = spins[i];
	kid_sleep_ms(150);
	for (int i = 0; i < NSPIN; i++) {
		b[i] = spins[i];
		moved += a[i] != b[i];
	}
	printf(moved ? "<MOVED %d>\n" : "<FROZEN>\n", moved);
	return KK_NOTIFY_DONE;
}

static struct kk_panic_notifier n_frozen = { check_frozen, 0, NULL };

static void threads_child(void *arg)
{
	int notifiers_first = (int)(long)arg;

	kk_panic_set_timeout(-1);
	kk_panic_set_notifiers_first(notifiers_first);
	kk_panic_notifier_register(&n_frozen);
	start_spinners();
	panic("threads");
}

Test(panic_flow, other_threads_stop)
{
	struct kid k;
	int n = -1;
	const char *p;

	kid_start(&k, threads_child, (void *)0L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "<FROZEN>"), "threads kept running:\n%s", k.out);
	p = strstr(k.out, "kernelkit: stopped ");
	cr_assert(p && sscanf(p, "kernelkit: stopped %d other thread", &n) == 1, "%s", k.out);
	cr_assert_geq(n, NSPIN, "%s", k.out);
	cr_assert_null(strstr(k.out, "did not stop"), "%s", k.out);
}

Test(panic_flow, notifiers_first_runs_them_before_the_stop)
{
	struct kid k;
	const char *moved, *stopped;

	kid_start(&k, threads_child, (void *)1L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	moved = strstr(k.out, "<MOVED");
	stopped = strstr(k.out, "kernelkit: stopped ");
	cr_assert(moved && stopped && moved < stopped, "%s", k.out);
}

static void *blocker(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	atomic_fetch_add(&spinning, 1);
	for (;;)
		pause();
	return NULL;
}

static void blocker_child(void *arg)
{
	pthread_t t;

	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_set_stop_timeout_ms(200);
	if (pthread_create(&t, NULL, blocker, NULL))
		_exit(4);
	while (atomic_load(&spinning) < 1)
		sched_yield();
	panic("blocked");
}

Test(panic_flow, a_thread_that_does_not_stop_is_reported)
{
	struct kid k;

	kid_start(&k, blocker_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "did not stop within 200 ms"), "%s", k.out);
	cr_assert(strstr(k.out, "did not stop (state S"), "%s", k.out);
}

/* ---- recursion -------------------------------------------------------------------- */

static int panics_again(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	(void)nb; (void)action; (void)data;
	panic("inner %s", "panic");
}

static int faults(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	(void)nb; (void)action; (void)data;
	return *bad_ptr8;
}

static struct kk_panic_notifier n_again = { panics_again, 20, NULL }, n_fault = { faults, 15, NULL },
	n_still = { say, 10, NULL };

static void recursive_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_notifier_register(&n_again);
	kk_panic_notifier_register(&n_fault);
	kk_panic_notifier_register(&n_still);
	panic("outer");
}

Test(panic_flow, recursive_panic_and_fault_are_reported_and_skipped)
{
	struct kid k;

	kid_start(&k, recursive_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "recursive panic in a panic notifier: inner panic"), "%s", k.out);
	cr_assert(strstr(k.out, "recursive fault in a panic notifier: SIGSEGV"), "%s", k.out);
	cr_assert(strstr(k.out, "<N10:outer>"), "the next notifier did not run:\n%s", k.out);
	cr_assert_eq(kid_count(&k, "panic - not syncing:"), 1, "%s", k.out);
}

/* ---- from a signal handler ------------------------------------------------------ */

static void on_usr1(int sig)
{
	panic("from handler %d", sig);
}

static void *raise_in_thread(void *arg)
{
	(void)arg;
	raise(SIGUSR1);
	return NULL;
}

static void handler_child(void *arg)
{
	int in_thread = (int)(long)arg;

	kk_panic_set_timeout(-1);
	signal(SIGUSR1, on_usr1);
	kk_panic_notifier_register(&n_0);
	if (in_thread) {
		pthread_t t;

		start_spinners();
		pthread_create(&t, NULL, raise_in_thread, NULL);
		pthread_join(t, NULL);
		_exit(5);
	}
	raise(SIGUSR1);
	_exit(5);
}

Test(panic_flow, panic_from_a_signal_handler)
{
	struct kid k;
	char want[64];

	snprintf(want, sizeof(want), "<N0:from handler %d>", SIGUSR1);
	kid_start(&k, handler_child, (void *)0L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "panic - not syncing: from handler"), "%s", k.out);
	cr_assert(strstr(k.out, want), "%s", k.out);
}

Test(panic_flow, panic_from_a_signal_handler_in_a_thread)
{
	struct kid k;

	kid_start(&k, handler_child, (void *)1L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "panic - not syncing: from handler"), "%s", k.out);
	cr_assert_null(strstr(k.out, "did not stop"), "%s", k.out);
}

/* ---- several threads panic at once ----------------------------------------------- */

static pthread_barrier_t bar;

static void *panicker(void *arg)
{
	pthread_barrier_wait(&bar);
	panic("racer %ld", (long)arg);
}

static void race_child(void *arg)
{
	pthread_t t;

	(void)arg;
	kk_panic_set_timeout(-1);
	pthread_barrier_init(&bar, NULL, 5);
	for (long i = 1; i <= 4; i++)
		pthread_create(&t, NULL, panicker, (void *)i);
	panicker((void *)0L);
}

Test(panic_flow, concurrent_panics_have_one_owner)
{
	struct kid k;

	kid_start(&k, race_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert_eq(kid_count(&k, "panic - not syncing: racer"), 1, "%s", k.out);
	cr_assert_eq(kid_count(&k, "restart: exit"), 1, "%s", k.out);
	cr_assert_null(strstr(k.out, "did not stop"), "%s", k.out);
}

/* ---- oops ------------------------------------------------------------------------ */

static void segv_child(void *arg)
{
	kk_panic_set_timeout(-1);
	if (kk_panic_set_on_oops((int)(long)arg))
		_exit(6);
	kk_panic_notifier_register(&n_0);
	printf("%d\n", *bad_ptr16);
}

Test(panic_flow, fatal_signal_panics_with_panic_on_oops)
{
	struct kid k;

	kid_start(&k, segv_child, (void *)1L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "Oops: SIGSEGV"), "%s", k.out);
	cr_assert(strstr(k.out, "0x10"), "fault address missing:\n%s", k.out);
	cr_assert(strstr(k.out, "panic - not syncing: Fatal exception: SIGSEGV"), "%s", k.out);
	cr_assert(strstr(k.out, "<N0:Fatal exception: SIGSEGV>"), "%s", k.out);
	cr_assert(strstr(k.out, "Tainted: G      D"), "%s", k.out);
}

Test(panic_flow, fatal_signal_kills_without_panic_on_oops)
{
	struct kid k;

	kid_start(&k, segv_child, (void *)0L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert(kid_died_of_segv(&k), "%#x %s", k.status, k.out);
	cr_assert_null(strstr(k.out, "panic - not syncing"), "%s", k.out);
}

static void fpe_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_set_on_oops(1);
#if defined(__x86_64__) || defined(__i386__)
	{
		/* a real divide error, out of UBSan's sight */
		int a = 7, z = 0;

		__asm__ volatile("cltd\n\tidivl %1" : "+a"(a) : "r"(z) : "edx", "cc");
		printf("%d\n", a);
	}
#else
	raise(SIGFPE);
#endif
}

Test(panic_flow, sigfpe_panics_with_panic_on_oops)
{
	struct kid k;

	kid_start(&k, fpe_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "Fatal exception: SIGFPE"), "%s", k.out);
}

static void off_again_child(void *arg)
{
	(void)arg;
	kk_panic_set_on_oops(1);
	kk_panic_set_on_oops(0);	/* the previous handlers come back */
	printf("%d\n", *bad_ptr16);
}

Test(panic_flow, clearing_panic_on_oops_restores_the_old_handlers)
{
	struct kid k;

	kid_start(&k, off_again_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert(kid_died_of_segv(&k), "%#x %s", k.status, k.out);
	cr_assert_null(strstr(k.out, "panic - not syncing"), "%s", k.out);
}

static void bug_child(void *arg)
{
	volatile int refs = -1;

	kk_panic_set_timeout(-1);
	kk_panic_set_on_oops((int)(long)arg);
	BUG_ON(refs > 0);	/* false: nothing */
	printf("<PAST FALSE BUG_ON>\n");
	BUG_ON(refs < 0);
	printf("<PAST TRUE BUG_ON>\n");
}

Test(panic_flow, bug_on_aborts_without_panic_on_oops)
{
	struct kid k;

	kid_start(&k, bug_child, (void *)0L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_term_sig(&k), SIGABRT, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "<PAST FALSE BUG_ON>"), "%s", k.out);
	cr_assert(strstr(k.out, "BUG at "), "%s", k.out);
	cr_assert_null(strstr(k.out, "<PAST TRUE BUG_ON>"), "%s", k.out);
}

Test(panic_flow, bug_on_panics_with_panic_on_oops)
{
	struct kid k;

	kid_start(&k, bug_child, (void *)1L);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "panic - not syncing: BUG at "), "%s", k.out);
	cr_assert(strstr(k.out, "bug_child()"), "%s", k.out);
}
