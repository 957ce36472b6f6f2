// SPDX-License-Identifier: MIT
/*
 * The library's worker: one thread, "kk-worker", that runs deferred work (the
 * kernel's system workqueue, with one worker and no concurrency).  It serves
 * the deferred static keys, the debug-objects free worker and the shazptr
 * scan.  It starts the first time work is queued, belongs to a struct
 * kk_service (kk_threads_stop() makes it exit after the item it runs,
 * kk_threads_start() brings it back when items are pending), and does not
 * come along into fork children (it restarts there on need).
 *
 * Queuing is lock-free: kk_queue_work() claims the item's pending bit with a
 * compare-and-swap, pushes it on the "incoming" stack and bumps a futex word
 * the worker sleeps on.  Everything else (the deadline-sorted list, the item
 * that runs, start and stop) is under wq.lock, which only the worker and
 * the cancel/flush/stop paths take; whoever holds the lock moves incoming
 * items onto the list.  Cancel and flush wait on a second futex word that the
 * worker bumps when an item finishes.
 *
 * Work item state (w->state): bit 0 pending, bit 1 canceling (queuing is
 * refused), bits 2.. a count of the times the item was started, which flush
 * uses to know when "the instance it waited for" finished although the item
 * may have been queued again since (the kernel's flush only waits for the
 * last queueing instance).
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "common/internal.h"

#define W_PENDING	1
#define W_CANCELING	2
#define W_START		4		/* one start in the count */

enum { T_NONE, T_STARTING, T_RUNNING };

static struct {
	pthread_mutex_t lock;
	struct kk_work *incoming;	/* lock-free stack of newly queued items */
	struct kk_work *list;		/* pending items by deadline (lock) */
	struct kk_work *current;	/* running on the worker (lock) */
	struct kk_work *caller;		/* running in a flushing caller (lock) */
	void (*current_fn)(struct kk_work *), (*caller_fn)(struct kk_work *);
					/* their functions: the item may be freed by now */
	int seq;			/* futex: bumped on every queue; the worker sleeps on it */
	int sleeping;			/* the worker is (about to be) in its futex wait */
	int done;			/* futex: bumped when an item finished */
	int done_waiters;		/* (lock) */
	int thread;			/* T_*: the worker thread (atomic) */
	int stop;			/* the worker must exit (lock) */
	int self_stop;			/* ... and detach: stopped from a work item (lock) */
	int used;			/* atomic: something was queued once (never cleared) */
	struct kk_thread thread_id;	/* the worker (kk_thread_create) */
} wq = { .lock = PTHREAD_MUTEX_INITIALIZER };

static __thread int on_worker __attribute__((tls_model("initial-exec")));

bool kk_in_worker(void)
{
	return on_worker;
}

bool kk_work_pending(const struct kk_work *w)
{
	return __atomic_load_n(&w->state, __ATOMIC_ACQUIRE) & W_PENDING;
}

/* ---- the lists ---------------------------------------------------------------------- */

static void push_incoming(struct kk_work *w)
{
	struct kk_work *head = __atomic_load_n(&wq.incoming, __ATOMIC_RELAXED);

	do
		w->next = head;
	while (!__atomic_compare_exchange_n(&wq.incoming, &head, w, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

/* Sorted insert, after the items with the same deadline (FIFO among equals). */
static void insert_locked(struct kk_work *w)
{
	struct kk_work **pp = &wq.list;

	while (*pp && (*pp)->deadline_ns <= w->deadline_ns)
		pp = &(*pp)->next;
	w->next = *pp;
	*pp = w;
}

/* Move what was queued since onto the sorted list, oldest first. */
static void drain_locked(void)
{
	struct kk_work *w = __atomic_exchange_n(&wq.incoming, NULL, __ATOMIC_ACQUIRE), *rev = NULL;

	while (w) {
		struct kk_work *next = w->next;

		w->next = rev;
		rev = w;
		w = next;
	}
	while (rev) {
		struct kk_work *next = rev->next;

		insert_locked(rev);
		rev = next;
	}
}

static bool unlink_locked(struct kk_work *w)
{
	for (struct kk_work **pp = &wq.list; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			return true;
		}
	}
	return false;
}

static bool running_locked(const struct kk_work *w)
{
	return wq.current == w || wq.caller == w;
}

static void kick(void)
{
	__atomic_fetch_add(&wq.seq, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&wq.sleeping, __ATOMIC_SEQ_CST))
		kk_futex_wake(&wq.seq, 1);
}

/* Sleep until an item finished (called with the lock, returns with it). */
static void wait_done_locked(void)
{
	int d = __atomic_load_n(&wq.done, __ATOMIC_ACQUIRE);

	wq.done_waiters++;
	pthread_mutex_unlock(&wq.lock);
	kk_futex_wait(&wq.done, d, 0);
	pthread_mutex_lock(&wq.lock);
	wq.done_waiters--;
}

static void finished_locked(void)
{
	__atomic_fetch_add(&wq.done, 1, __ATOMIC_RELEASE);
	if (wq.done_waiters)
		kk_futex_wake(&wq.done, INT_MAX);
}

/* ---- the thread --------------------------------------------------------------------- */

static void run_locked(struct kk_work *w, struct kk_work **slot,
		       void (**slot_fn)(struct kk_work *))
{
	void (*fn)(struct kk_work *) = w->fn;

	unlink_locked(w);
	/* Clear pending and count the start in one step: @w may be queued again
	 * from here on (by its own function, too). */
	__atomic_fetch_add(&w->state, W_START - W_PENDING, __ATOMIC_ACQ_REL);
	*slot = w;
	*slot_fn = fn;
	pthread_mutex_unlock(&wq.lock);
	fn(w);			/* may free @w: not touched after this */
	pthread_mutex_lock(&wq.lock);
	*slot = NULL;
	*slot_fn = NULL;
	finished_locked();
}

static void *worker_main(void *arg)
{
	(void)arg;
	on_worker = 1;
	/* The shazptr scan backs off for microseconds: no timer slack. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&wq.lock);
	for (;;) {
		int seq = __atomic_load_n(&wq.seq, __ATOMIC_SEQ_CST);
		struct kk_work *w;
		uint64_t deadline = 0;

		drain_locked();
		if (wq.stop)
			break;
		w = wq.list;
		if (wq.caller) {
			/* A flushing caller runs an item (threads were stopped then). */
			wait_done_locked();
			continue;
		}
		if (w) {
			if (w->deadline_ns <= kk_now_ns()) {
				run_locked(w, &wq.current, &wq.current_fn);
				continue;
			}
			deadline = w->deadline_ns;
		}
		__atomic_store_n(&wq.sleeping, 1, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&wq.incoming, __ATOMIC_SEQ_CST)) {
			pthread_mutex_unlock(&wq.lock);
			kk_futex_wait(&wq.seq, seq, deadline);
			pthread_mutex_lock(&wq.lock);
		}
		__atomic_store_n(&wq.sleeping, 0, __ATOMIC_RELAXED);
	}
	if (wq.self_stop) {
		/* kk_threads_stop() came from a work item: nobody joins us. */
		pthread_detach(pthread_self());
		wq.self_stop = 0;
		wq.stop = 0;
		__atomic_store_n(&wq.thread, T_NONE, __ATOMIC_RELEASE);
	}
	finished_locked();
	pthread_mutex_unlock(&wq.lock);
	return NULL;
}

/* Start the worker unless it runs, is starting or threads are stopped.  0 or -errno. */
static int worker_start(void)
{
	int expect = T_NONE, ret;

	if (kk_threads_stopped() ||
	    !__atomic_compare_exchange_n(&wq.thread, &expect, T_STARTING, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	/* kk_threads_stop() sets the flag, then waits for T_STARTING to settle. */
	if (kk_threads_stopped()) {
		ret = 0;
	} else {
		ret = kk_thread_create(&wq.thread_id, "kk-worker", worker_main, NULL);
		if (ret == 0) {
			__atomic_store_n(&wq.thread, T_RUNNING, __ATOMIC_RELEASE);
			kk_futex_wake(&wq.thread, INT_MAX);
			return 0;
		}
		kk_warn_once(warned, "cannot start the worker thread (error %d): deferred work waits",
			     -ret);
	}
	__atomic_store_n(&wq.thread, T_NONE, __ATOMIC_RELEASE);
	kk_futex_wake(&wq.thread, INT_MAX);
	return ret;
}

/* Can the worker run @w now?  Not while stopped, and not for itself. */
static bool worker_serves_locked(void)
{
	if (on_worker || wq.stop)
		return false;
	if (__atomic_load_n(&wq.thread, __ATOMIC_ACQUIRE) == T_NONE)
		worker_start();
	return __atomic_load_n(&wq.thread, __ATOMIC_ACQUIRE) != T_NONE;
}

/* ---- the API ------------------------------------------------------------------------ */

int kk_queue_work(struct kk_work *w, uint64_t delay_ns)
{
	int st = __atomic_load_n(&w->state, __ATOMIC_RELAXED), ret;

	do {
		if (st & (W_PENDING | W_CANCELING))
			return 0;
	} while (!__atomic_compare_exchange_n(&w->state, &st, st | W_PENDING, true,
					      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED));
	w->deadline_ns = delay_ns ? kk_now_ns() + delay_ns : 0;
	if (!__atomic_load_n(&wq.used, __ATOMIC_RELAXED))
		__atomic_store_n(&wq.used, 1, __ATOMIC_RELEASE);
	push_incoming(w);
	kick();
	if (__atomic_load_n(&wq.thread, __ATOMIC_ACQUIRE) == T_RUNNING)
		return 1;
	ret = worker_start();
	if (ret == 0)
		return 1;
	/* No worker: take @w back, so that the caller can do the work itself. */
	pthread_mutex_lock(&wq.lock);
	drain_locked();
	if (unlink_locked(w))
		__atomic_fetch_and(&w->state, ~W_PENDING, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&wq.lock);
	return ret;
}

/*
 * @w is pending: is it on the list yet?  A queuer sets the pending bit before
 * it pushes the item; between the two, give it the CPU.
 */
static bool settle_locked(struct kk_work *w)
{
	for (;;) {
		drain_locked();
		if (!(__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) & W_PENDING))
			return false;
		for (struct kk_work *it = wq.list; it; it = it->next)
			if (it == w)
				return true;
		pthread_mutex_unlock(&wq.lock);
		sched_yield();
		pthread_mutex_lock(&wq.lock);
	}
}

bool kk_cancel_work_sync(struct kk_work *w)
{
	bool was_pending = false, mine;

	pthread_mutex_lock(&wq.lock);
	mine = !(__atomic_fetch_or(&w->state, W_CANCELING, __ATOMIC_ACQ_REL) & W_CANCELING);
	for (;;) {
		if (settle_locked(w)) {
			unlink_locked(w);
			__atomic_fetch_and(&w->state, ~W_PENDING, __ATOMIC_RELEASE);
			was_pending = true;
		}
		if (!running_locked(w) || (on_worker && wq.current == w))
			break;
		wait_done_locked();
	}
	if (mine)
		__atomic_fetch_and(&w->state, ~W_CANCELING, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&wq.lock);
	return was_pending;
}

void kk_flush_work(struct kk_work *w)
{
	unsigned int target = 0;
	bool waiting = false;

	pthread_mutex_lock(&wq.lock);
	for (;;) {
		bool pending = settle_locked(w);
		unsigned int starts = (unsigned int)__atomic_load_n(&w->state, __ATOMIC_ACQUIRE) >> 2;
		bool running = running_locked(w);

		if (on_worker && wq.current == w)
			break;			/* flushing itself: nothing to wait for */
		/* Done once the instance we wait for has finished (or was cancelled). */
		if (waiting && ((int)(starts - target) > 0 || (starts == target && !running) ||
				(starts != target && !pending && !running)))
			break;
		if (pending && !running && !worker_serves_locked()) {
			/* Threads are stopped, or this is the worker: run it here. */
			if (!wq.caller) {
				run_locked(w, &wq.caller, &wq.caller_fn);
				break;
			}
		} else if (!waiting) {
			if (pending) {
				/* Run it next, ahead of its deadline. */
				unlink_locked(w);
				w->deadline_ns = 0;
				w->next = wq.list;
				wq.list = w;
				target = starts + 1;
				kick();
			} else if (running) {
				target = starts;
			} else {
				break;
			}
			waiting = true;
		}
		wait_done_locked();
	}
	pthread_mutex_unlock(&wq.lock);
}

bool kk_work_ever_queued(void)
{
	return __atomic_load_n(&wq.used, __ATOMIC_ACQUIRE);
}

void kk_cancel_work_matching(bool (*match)(const struct kk_work *w,
					    void (*fn)(struct kk_work *), void *arg), void *arg)
{
	if (!kk_work_ever_queued())
		return;
	pthread_mutex_lock(&wq.lock);
	for (;;) {
		struct kk_work **pp = &wq.list, *w;

		drain_locked();
		while ((w = *pp)) {
			if (match(w, w->fn, arg)) {
				*pp = w->next;
				__atomic_fetch_and(&w->state, ~W_PENDING, __ATOMIC_RELEASE);
			} else {
				pp = &w->next;
			}
		}
		/* A matching item that runs may queue itself again: go round. */
		/* (A running item's memory may be gone: match it by address and
		 * the function it was started with.) */
		if (!((wq.current && !on_worker && match(wq.current, wq.current_fn, arg)) ||
		      (wq.caller && match(wq.caller, wq.caller_fn, arg))))
			break;
		wait_done_locked();
	}
	pthread_mutex_unlock(&wq.lock);
}

/* ---- stop and start --------------------------------------------------------------------- */

static void wq_stop(void)
{
	int t;

	while ((t = __atomic_load_n(&wq.thread, __ATOMIC_ACQUIRE)) == T_STARTING)
		kk_futex_wait(&wq.thread, T_STARTING, 0);
	if (t != T_RUNNING)
		return;
	pthread_mutex_lock(&wq.lock);
	wq.stop = 1;
	wq.self_stop = on_worker;
	pthread_mutex_unlock(&wq.lock);
	kick();
	if (on_worker)
		return;		/* called from a work item: the worker exits after it */
	kk_thread_join(&wq.thread_id);
	pthread_mutex_lock(&wq.lock);
	wq.stop = 0;
	__atomic_store_n(&wq.thread, T_NONE, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&wq.lock);
}

static void wq_start(void)
{
	bool pending;

	pthread_mutex_lock(&wq.lock);
	drain_locked();
	pending = wq.list != NULL;
	pthread_mutex_unlock(&wq.lock);
	if (pending)
		worker_start();
}

static struct kk_service wq_service = { "worker", wq_stop, wq_start, NULL };

/* ---- fork ----------------------------------------------------------------------------------- */

static void wq_fork_prepare(void)
{
	pthread_mutex_lock(&wq.lock);
}

static void wq_fork_parent(void)
{
	pthread_mutex_unlock(&wq.lock);
}

static void wq_fork_child(void)
{
	/* The worker did not come along; what it ran is not running here.
	 * Pending items stay queued for the next worker. */
	pthread_mutex_init(&wq.lock, NULL);
	wq.current = NULL;
	wq.current_fn = NULL;
	if (!on_worker) {
		wq.caller = NULL;
		wq.caller_fn = NULL;
	}
	wq.sleeping = 0;
	wq.done_waiters = 0;
	wq.stop = 0;
	on_worker = 0;
	__atomic_store_n(&wq.thread, T_NONE, __ATOMIC_RELAXED);
}

static const struct kk_fork_ops wq_fork_ops = {
	KK_INIT_COMMON, wq_fork_prepare, wq_fork_parent, wq_fork_child
};

KK_INIT(110) static void workqueue_init(void)
{
	kk_fork_register(&wq_fork_ops);
	kk_service_register(&wq_service);
}
