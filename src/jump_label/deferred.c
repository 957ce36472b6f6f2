// SPDX-License-Identifier: MIT
/*
 * Deferred static keys (jump_label_ratelimit.h): the last decrement of a key
 * runs only after a timeout, on a library thread.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "common.h"
#include "jump_label/jl.h"

#define fail jl_fail

static pthread_mutex_t dw_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dw_cond;
static int dw_cond_ready;
static struct kk_delayed_work *dw_list, *dw_running;
static pid_t dw_pid;

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void dw_unlink(struct kk_delayed_work *w)
{
	struct kk_delayed_work **pp;

	for (pp = &dw_list; *pp; pp = &(*pp)->next) {
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	}
	w->pending = 0;
}

static void *dw_worker(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "kk-deferred");
	pthread_mutex_lock(&dw_lock);
	for (;;) {
		struct kk_delayed_work *first = NULL;
		unsigned long long t = now_ns();

		for (struct kk_delayed_work *w = dw_list; w; w = w->next)
			if (!first || w->deadline_ns < first->deadline_ns)
				first = w;
		if (!first) {
			pthread_cond_wait(&dw_cond, &dw_lock);
		} else if (first->deadline_ns <= t) {
			dw_unlink(first);
			dw_running = first;
			pthread_mutex_unlock(&dw_lock);
			static_key_slow_dec(first->key);
			pthread_mutex_lock(&dw_lock);
			dw_running = NULL;
			pthread_cond_broadcast(&dw_cond);
		} else {
			struct timespec ts = { (time_t)(first->deadline_ns / 1000000000ull),
					       (long)(first->deadline_ns % 1000000000ull) };

			pthread_cond_timedwait(&dw_cond, &dw_lock, &ts);
		}
	}
	return NULL;
}

/* Called with dw_lock held. */
static int dw_start(void)
{
	pthread_t th;
	pthread_attr_t a;
	int ret;

	if (dw_pid == getpid())
		return 0;
	if (!dw_cond_ready) {	/* timed waits use CLOCK_MONOTONIC deadlines */
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&dw_cond, &ca);
		pthread_condattr_destroy(&ca);
		dw_cond_ready = 1;
	}
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&th, &a, dw_worker, NULL);
	pthread_attr_destroy(&a);
	if (ret)
		return -ret;
	dw_pid = getpid();
	return 0;
}

int __static_key_slow_dec_deferred(struct static_key *key, struct kk_delayed_work *work,
				   unsigned long timeout)
{
	int v, ret = 0;

	if (!key || !work)
		return fail(-EINVAL, "NULL key");
	/* Above one reference there is nothing to patch: drop it now. */
	v = static_key_count(key);
	while (v > 1)
		if (__atomic_compare_exchange_n(&key->enabled, &v, v - 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			return 0;
	if (v == 0)
		return fail(-EINVAL, "deferred decrement of a key whose count is 0");
	if (timeout == 0)
		return static_key_slow_dec(key);
	pthread_mutex_lock(&dw_lock);
	if (!work->pending) {
		ret = dw_start();
		if (ret) {
			pthread_mutex_unlock(&dw_lock);
			return fail(ret, "cannot start the deferred-key thread");
		}
		work->key = key;
		work->deadline_ns = now_ns() + (unsigned long long)timeout * 1000000ull;
		work->pending = 1;
		work->next = dw_list;
		dw_list = work;
		pthread_cond_broadcast(&dw_cond);
	}
	pthread_mutex_unlock(&dw_lock);
	return 0;
}

void __static_key_deferred_flush(struct static_key *key, struct kk_delayed_work *work)
{
	int run = 0;

	pthread_mutex_lock(&dw_lock);
	if (work->pending) {
		dw_unlink(work);
		run = 1;
	}
	while (dw_cond_ready && dw_running == work)
		pthread_cond_wait(&dw_cond, &dw_lock);
	pthread_mutex_unlock(&dw_lock);
	if (run)
		static_key_slow_dec(key);
}

void jump_label_rate_limit(struct static_key_deferred *key, unsigned long rl)
{
	key->timeout = rl;
	key->work.key = &key->key;
}

void jl_deferred_forget_object(const void *self)
{
	(void)self;	/* TODO(worker): cancel pending work that lives in the object */
}

static void dw_fork_prepare(void)
{
	pthread_mutex_lock(&dw_lock);
}

static void dw_fork_parent(void)
{
	pthread_mutex_unlock(&dw_lock);
}

static void dw_fork_child(void)
{
	/* The worker thread did not come along; start one if work is pending. */
	dw_running = NULL;
	if (dw_list)
		dw_start();
	pthread_mutex_unlock(&dw_lock);
}

static const struct kk_fork_ops dw_fork_ops = {
	KK_INIT_JUMP_LABEL + 1, dw_fork_prepare, dw_fork_parent, dw_fork_child
};

KK_INIT(151) static void deferred_init(void)
{
	kk_fork_register(&dw_fork_ops);
}
