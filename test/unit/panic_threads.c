// SPDX-License-Identifier: MIT
/*
 * Panic and the library's own threads (issue 9): the worker, busy with the
 * debug-objects free worker, a deferred decrement and a shazptr scan that
 * cannot finish, parks like every program thread and burns nothing after the
 * halt; loading the library leaves the signal state alone; a panic out of
 * descriptors that nothing prepared still stops every thread.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>

#include <kernelkit/debugobjects.h>
#include <kernelkit/jump_label_ratelimit.h>
#include <kernelkit/panic.h>
#include <kernelkit/shazptr.h>
#include "panic_kid.h"

#define STATUS KK_PANIC_EXIT_STATUS_DEFAULT
#define END_LINE "---[ end panic - not syncing:"

static atomic_int ready;
static int obj;

static void *holder(void *arg)
{
	struct shazptr_guard g = shazptr_acquire(&obj);

	(void)arg;
	atomic_fetch_add(&ready, 1);
	for (;;)
		pause();
	shazptr_clear(g);
	return NULL;
}

static void *waiter(void *arg)
{
	(void)arg;
	atomic_fetch_add(&ready, 1);
	synchronize_shazptr(&obj);	/* never returns: the holder holds */
	return NULL;
}

struct tracked {
	int v;
};

static const struct debug_obj_descr descr = { .name = "panic_threads" };
static struct tracked objs[4096];

DEFINE_STATIC_KEY_DEFERRED_FALSE(dk, 60000);

static void busy_library_child(void *arg)
{
	struct kk_shazptr_stats st;
	pthread_t t;

	(void)arg;
	kk_panic_set_timeout(0);
	if (kk_debug_objects_enable())
		_exit(3);
	for (int r = 0; r < 4; r++) {
		for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
			debug_object_init(&objs[i], &descr);
		for (size_t i = 0; i < sizeof(objs) / sizeof(objs[0]); i++)
			debug_object_free(&objs[i], &descr);
	}
	if (static_branch_deferred_inc(&dk) || static_branch_slow_dec_deferred(&dk))
		_exit(3);
	kk_shazptr_set_skip_synchronize_self_scan(true);
	if (pthread_create(&t, NULL, holder, NULL))
		_exit(4);
	while (atomic_load(&ready) < 1)
		sched_yield();
	if (pthread_create(&t, NULL, waiter, NULL))
		_exit(4);
	/* The scan is busy once the waiter's wait went to the worker. */
	do {
		kk_shazptr_get_stats(&st);
		sched_yield();
	} while (st.sync_scan_thread < 1 || st.scan_rounds < 100);
	panic("library threads busy");
}

Test(panic_threads, library_threads_park_and_stay_quiet)
{
	unsigned long long c0, c1, x0, x1;
	struct kid k;
	const char *p;
	int n = -1;

	kid_start(&k, busy_library_child, NULL);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	cr_assert_null(strstr(k.out, "did not stop"), "%s", k.out);
	cr_assert_null(strstr(k.out, "BUG: library thread"), "%s", k.out);
	p = strstr(k.out, "kernelkit: stopped ");
	/* holder, waiter, kk-worker (and the control endpoint, if it runs) */
	cr_assert(p && sscanf(p, "kernelkit: stopped %d other thread", &n) == 1 && n >= 3,
		  "%s", k.out);
	kid_sleep_ms(100);
	cr_assert_eq(kid_cpu(k.pid, &c0, &x0), 0);
	kid_sleep_ms(1000);
	cr_assert_eq(kid_cpu(k.pid, &c1, &x1), 0);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_log_info("after the halt: %.3f ms CPU, %llu context switches in 1 s\n", (c1 - c0) / 1e6,
		    x1 - x0);
	/* The old scan thread blocked the signal and woke every 256 us. */
	cr_assert_lt(x1 - x0, 10ull, "%llu context switches in 1 s after the halt", x1 - x0);
	cr_assert_lt(c1 - c0, 10000000ull, "%llu ns of CPU in 1 s after the halt", c1 - c0);
}

/* Loading the library changed no signal disposition and no signal stack. */
Test(panic_threads, load_leaves_the_signal_state_alone)
{
	struct sigaction sa;
	stack_t ss;
	int sig = kk_panic_stop_signal();

	cr_assert(sig >= SIGRTMIN && sig <= SIGRTMAX, "%d", sig);
	cr_assert_eq(sigaction(sig, NULL, &sa), 0);
	cr_assert(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL,
		  "the park signal got a handler at load");
	cr_assert_eq(sigaltstack(NULL, &ss), 0);
#ifndef KID_ASAN	/* AddressSanitizer gives every thread a signal stack of its own */
	cr_assert(ss.ss_flags & SS_DISABLE, "the main thread got a signal stack at load");
#endif
	/* panic_on_oops needs one: the thread that turns it on gets it. */
	cr_assert_eq(kk_panic_set_on_oops(1), 0);
	cr_assert_eq(sigaltstack(NULL, &ss), 0);
	cr_assert_not(ss.ss_flags & SS_DISABLE);
	cr_assert_eq(kk_panic_set_on_oops(0), 0);
}

static void *spinner(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	atomic_fetch_add(&ready, 1);
	for (;;)
		n++;
	return NULL;
}

/* Nothing configured panic (no libgcc_s, no stacks, no descriptor kept). */
static void nofile_unprepared_child(void *arg)
{
	struct rlimit rl = { 32, 32 };
	pthread_t t;

	(void)arg;
	for (int i = 0; i < 2; i++)
		if (pthread_create(&t, NULL, spinner, NULL))
			_exit(4);
	while (atomic_load(&ready) < 2)
		sched_yield();
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(3);
	while (open("/dev/null", O_RDONLY) >= 0)
		;
	panic("out of descriptors, unprepared (errno %d)", errno);
}

Test(panic_threads, out_of_descriptors_without_preparation_still_stops_threads)
{
	struct kid k;
	const char *p;
	int n = -1;

	kid_start(&k, nofile_unprepared_child, NULL);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	cr_assert(strstr(k.out, "unprepared (errno 24)"), "%s", k.out);
	p = strstr(k.out, "kernelkit: stopped ");
	cr_assert(p && sscanf(p, "kernelkit: stopped %d other thread", &n) == 1 && n >= 2, "%s",
		  k.out);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
}
