// SPDX-License-Identifier: MIT
/*
 * The library's worker (src/common/workqueue.c), through the internal API:
 * earliest deadline first, queue/cancel/flush with the kernel's semantics
 * (queue_delayed_work, cancel_delayed_work_sync, flush_delayed_work), a
 * function that queues itself again, flushing from the worker, cancelling by
 * address range, queuing from a signal handler, fork, and kk_threads_stop().
 *
 * Waits are bounded (10 s) and ordered by flags, never by sleeping.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/kernelkit.h>
#include "common/internal.h"
#include "kktest.h"

#define BOUND_NS	(10 * 1000000000ull)
#define LONG_NS		(60 * 1000000000ull)

/* Wait until *flag >= want (bounded). */
static int wait_flag(int *flag, int want)
{
	uint64_t end = kk_now_ns() + BOUND_NS;
	int v;

	while ((v = __atomic_load_n(flag, __ATOMIC_ACQUIRE)) < want) {
		if (kk_now_ns() >= end)
			return 0;
		kk_futex_wait(flag, v, kk_now_ns() + 1000000);
	}
	return 1;
}

static void set_flag(int *flag, int v)
{
	__atomic_store_n(flag, v, __ATOMIC_RELEASE);
	kk_futex_wake(flag, 1 << 30);
}

struct item {
	struct kk_work work;
	char name;
	int runs;
};

static char order[16];
static int norder;

static void record(struct kk_work *w)
{
	struct item *it = (struct item *)w;

	order[__atomic_fetch_add(&norder, 1, __ATOMIC_ACQ_REL)] = it->name;
	__atomic_fetch_add(&it->runs, 1, __ATOMIC_ACQ_REL);
	kk_futex_wake(&norder, 1 << 30);
}

/* An item that holds the worker until it is let go. */
static int gate_in, gate_open;

static void gate_fn(struct kk_work *w)
{
	(void)w;
	set_flag(&gate_in, 1);
	wait_flag(&gate_open, 1);
}

Test(threads_worker, earliest_deadline_first_and_fifo_among_equals)
{
	struct kk_work gate = KK_WORK_INIT(gate_fn);
	struct item a = { KK_WORK_INIT(record), 'A', 0 }, b = { KK_WORK_INIT(record), 'B', 0 },
		    c = { KK_WORK_INIT(record), 'C', 0 }, d = { KK_WORK_INIT(record), 'D', 0 };

	cr_assert_eq(kk_queue_work(&gate, 0), 1);
	cr_assert(wait_flag(&gate_in, 1));
	cr_assert_eq(kk_queue_work(&a.work, 3000000), 1);
	cr_assert_eq(kk_queue_work(&b.work, 0), 1);
	cr_assert_eq(kk_queue_work(&c.work, 0), 1);
	cr_assert_eq(kk_queue_work(&d.work, 1000000), 1);
	cr_assert_eq(kk_queue_work(&b.work, 0), 0, "queuing a pending item is a no-op");
	set_flag(&gate_open, 1);
	cr_assert(wait_flag(&norder, 4));
	cr_assert_eq(memcmp(order, "BCDA", 4), 0, "order %.4s", order);
	cr_assert_eq(b.runs, 1);
	cr_assert_eq(kk_queue_work(&b.work, 0), 1, "queued again once it ran");
	kk_flush_work(&b.work);
	cr_assert_eq(b.runs, 2);
}

static int in_worker_seen;

static void where_fn(struct kk_work *w)
{
	(void)w;
	set_flag(&in_worker_seen, kk_in_worker() ? 2 : 1);
}

Test(threads_worker, runs_on_a_library_thread)
{
	struct kk_work w = KK_WORK_INIT(where_fn);

	cr_assert_not(kk_in_worker());
	cr_assert_eq(kk_queue_work(&w, 0), 1);
	cr_assert(wait_flag(&in_worker_seen, 1));
	cr_assert_eq(in_worker_seen, 2);
}

Test(threads_worker, cancel_takes_a_pending_item_off)
{
	struct item a = { KK_WORK_INIT(record), 'A', 0 };

	cr_assert_eq(kk_cancel_work_sync(&a.work), false, "nothing pending");
	cr_assert_eq(kk_queue_work(&a.work, LONG_NS), 1);
	cr_assert(kk_work_pending(&a.work));
	cr_assert_eq(kk_cancel_work_sync(&a.work), true);
	cr_assert_not(kk_work_pending(&a.work));
	kk_flush_work(&a.work);
	cr_assert_eq(a.runs, 0, "a cancelled item does not run");
}

/* ---- a running item ------------------------------------------------------------ */

static int slow_in, slow_release, slow_done;

static void slow_fn(struct kk_work *w)
{
	(void)w;
	set_flag(&slow_in, 1);
	wait_flag(&slow_release, 1);
	set_flag(&slow_done, 1);
}

static int canceller_ready, done_at_return;

static void *canceller(void *arg)
{
	set_flag(&canceller_ready, 1);
	kk_cancel_work_sync(arg);
	done_at_return = __atomic_load_n(&slow_done, __ATOMIC_ACQUIRE);
	return NULL;
}

Test(threads_worker, cancel_waits_for_the_running_instance)
{
	struct kk_work w = KK_WORK_INIT(slow_fn);
	pthread_t t;

	cr_assert_eq(kk_queue_work(&w, 0), 1);
	cr_assert(wait_flag(&slow_in, 1));
	cr_assert_eq(pthread_create(&t, NULL, canceller, &w), 0);
	cr_assert(wait_flag(&canceller_ready, 1));
	/* The canceller is inside kk_cancel_work_sync() once the item shows the
	 * canceling bit (bit 1 of the internal state). */
	for (uint64_t end = kk_now_ns() + BOUND_NS; !(__atomic_load_n(&w.state, __ATOMIC_ACQUIRE) & 2);)
		cr_assert(kk_now_ns() < end, "the cancel did not start");
	cr_assert_eq(kk_queue_work(&w, 0), 0, "queuing during a cancel is refused");
	set_flag(&slow_release, 1);
	pthread_join(t, NULL);
	cr_assert_eq(done_at_return, 1, "cancel returned while the item ran");
}

Test(threads_worker, flush_runs_a_delayed_item_now)
{
	struct item a = { KK_WORK_INIT(record), 'A', 0 };

	cr_assert_eq(kk_queue_work(&a.work, LONG_NS), 1);
	kk_flush_work(&a.work);
	cr_assert_eq(a.runs, 1);
	cr_assert_not(kk_work_pending(&a.work));
	kk_flush_work(&a.work);
	cr_assert_eq(a.runs, 1, "nothing pending: nothing runs");
}

/* An item that queues itself again, as the debug-objects free worker does. */
static int rearm_runs;
static uint64_t rearm_delay;

static void rearm_fn(struct kk_work *w)
{
	__atomic_fetch_add(&rearm_runs, 1, __ATOMIC_ACQ_REL);
	kk_queue_work(w, rearm_delay);
}

Test(threads_worker, flush_waits_for_one_instance_of_a_requeueing_item)
{
	struct kk_work w = KK_WORK_INIT(rearm_fn);

	rearm_delay = LONG_NS;
	cr_assert_eq(kk_queue_work(&w, LONG_NS), 1);
	kk_flush_work(&w);
	cr_assert_eq(rearm_runs, 1);
	cr_assert(kk_work_pending(&w), "it queued itself again");
	cr_assert_eq(kk_cancel_work_sync(&w), true);
	cr_assert_not(kk_work_pending(&w));
}

Test(threads_worker, cancel_stops_an_item_that_keeps_queuing_itself)
{
	struct kk_work w = KK_WORK_INIT(rearm_fn);
	int runs;

	rearm_delay = 0;
	cr_assert_eq(kk_queue_work(&w, 0), 1);
	cr_assert(wait_flag(&rearm_runs, 100));
	kk_cancel_work_sync(&w);
	cr_assert_not(kk_work_pending(&w), "queued itself again during the cancel");
	runs = __atomic_load_n(&rearm_runs, __ATOMIC_ACQUIRE);
	kk_flush_work(&w);
	cr_assert_eq(rearm_runs, runs, "it still runs");
}

/* A work function that flushes another item: it runs inline, no deadlock. */
static struct item inner = { KK_WORK_INIT(record), 'I', 0 };
static int outer_done;

static void outer_fn(struct kk_work *w)
{
	(void)w;
	kk_flush_work(&inner.work);
	kk_flush_work(w);	/* itself: returns at once */
	set_flag(&outer_done, 1);
}

Test(threads_worker, flush_from_a_work_function)
{
	struct kk_work outer = KK_WORK_INIT(outer_fn);

	cr_assert_eq(kk_queue_work(&inner.work, LONG_NS), 1);
	cr_assert_eq(kk_queue_work(&outer, 0), 1);
	cr_assert(wait_flag(&outer_done, 1));
	cr_assert_eq(inner.runs, 1);
}

/* ---- cancelling by address, as an object's unload does -------------------------- */

static struct item range[4] = {
	{ KK_WORK_INIT(record), '0', 0 }, { KK_WORK_INIT(record), '1', 0 },
	{ KK_WORK_INIT(record), '2', 0 }, { KK_WORK_INIT(record), '3', 0 },
};

static bool in_first_two(const struct kk_work *w, void (*fn)(struct kk_work *), void *arg)
{
	(void)arg;
	(void)fn;
	return (const void *)w >= (const void *)&range[0] && (const void *)w < (const void *)&range[2];
}

Test(threads_worker, cancel_matching_takes_only_the_matching_items)
{
	for (int i = 0; i < 4; i++)
		cr_assert_eq(kk_queue_work(&range[i].work, LONG_NS), 1);
	kk_cancel_work_matching(in_first_two, NULL);
	cr_assert_not(kk_work_pending(&range[0].work));
	cr_assert_not(kk_work_pending(&range[1].work));
	cr_assert(kk_work_pending(&range[2].work));
	cr_assert(kk_work_pending(&range[3].work));
	kk_flush_work(&range[2].work);
	kk_flush_work(&range[3].work);
	cr_assert_eq(range[0].runs + range[1].runs, 0);
	cr_assert_eq(range[2].runs + range[3].runs, 2);
}

/* ---- a signal handler queues work ------------------------------------------------ */

static struct item from_handler = { KK_WORK_INIT(record), 'H', 0 };
static int handler_ret = -100;

static void on_usr1(int sig)
{
	(void)sig;
	handler_ret = kk_queue_work(&from_handler.work, 0);
}

Test(threads_worker, a_signal_handler_can_queue_once_the_worker_runs)
{
	struct item warm = { KK_WORK_INIT(record), 'W', 0 };

	cr_assert_eq(kk_queue_work(&warm.work, 0), 1);
	kk_flush_work(&warm.work);
	signal(SIGUSR1, on_usr1);
	raise(SIGUSR1);
	cr_assert_eq(handler_ret, 1);
	cr_assert(wait_flag(&from_handler.runs, 1));
}

/* ---- fork ---------------------------------------------------------------------------- */

Test(threads_worker, a_fork_child_restarts_the_worker_and_runs_what_was_pending)
{
	struct item a = { KK_WORK_INIT(record), 'A', 0 };
	int st;
	pid_t pid;

	/* An hour: still pending at fork however slow the machine (an emulated
	 * one under load forked after a 50 ms delay had run out); flushed below. */
	cr_assert_eq(kk_queue_work(&a.work, 3600 * 1000000000ull), 1);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		struct item b = { KK_WORK_INIT(record), 'B', 0 };

		if (!kk_work_pending(&a.work))
			_exit(10);
		if (kk_queue_work(&b.work, 0) != 1)	/* the worker restarts */
			_exit(11);
		if (!wait_flag(&b.runs, 1))
			_exit(12);
		kk_flush_work(&a.work);		/* the pending item runs in the child */
		_exit(a.runs == 1 ? 0 : 13);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_assert(kk_work_pending(&a.work), "the child's flush ran the parent's item");
	kk_flush_work(&a.work);
	cr_assert_eq(a.runs, 1, "the parent's item ran in the parent too");
}

/* ---- kk_threads_stop() --------------------------------------------------------------- */

Test(threads_worker, stopped_items_wait_and_flush_runs_them_in_the_caller)
{
	struct item a = { KK_WORK_INIT(record), 'A', 0 }, b = { KK_WORK_INIT(record), 'B', 0 };
	struct item warm = { KK_WORK_INIT(record), 'W', 0 };

	cr_assert_eq(kk_queue_work(&warm.work, 0), 1);
	kk_flush_work(&warm.work);
	cr_assert_eq(kk_threads_stop(), 0);
	cr_assert_eq(kk_queue_work(&a.work, 0), 1, "queued, to run later");
	cr_assert_eq(kk_queue_work(&b.work, 0), 1);
	kk_flush_work(&b.work);
	cr_assert_eq(b.runs, 1, "flush ran it here");
	cr_assert(kk_work_pending(&a.work), "nothing runs while stopped");
	cr_assert_eq(a.runs, 0);
	cr_assert_eq(kk_threads_start(), 0);
	cr_assert(wait_flag(&a.runs, 1), "the pending item ran after kk_threads_start()");
}

/*
 * kk_threads_stop() right after the worker started: the worker is gone from
 * /proc/self/task before the call returns, even when it has not run a line
 * of its own yet (the join once read its id before the worker had written
 * it).  One CPU, in a fork child (one thread to count).
 */
Test(threads_worker, stop_right_after_start, .timeout = 60)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (kkt_pin_to_one_cpu())
			_exit(9);
		kk_threads_stop();
		for (int i = 0; i < 200; i++) {
			struct item a = { KK_WORK_INIT(record), 'A', 0 };

			/* queued while stopped; kk_threads_start() starts the worker */
			if (kk_queue_work(&a.work, LONG_NS) != 1 || kk_threads_start() ||
			    kk_threads_stop() || kkt_nr_tasks() != 1)
				_exit(10);
			kk_cancel_work_sync(&a.work);
		}
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}
