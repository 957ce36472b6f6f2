// SPDX-License-Identifier: MIT
/*
 * kkctl: serving the targets, several at once, their replies in order.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kkctl.h"

/*
 * Most of a request's time is the target's (16154 sites switched, the
 * synchronizations that takes), so up to --jobs targets (default 8) are
 * served at once by threads.  Replies are printed in target order, each as
 * soon as it and those before it are done; a thread takes a target only
 * while it is fewer than --jobs ahead of the one printed next, so at most
 * --jobs replies (each within --max-reply) are held at a time.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tlist *l;
	struct result *res;
	bool *done;
	size_t next, printed;
	const char *verb, *file, *body;
	size_t blen;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, NULL, 0, 0,
	   NULL, NULL, NULL, 0 };

/* Serve target @i: the request (in pieces: kkctl/ddctl.c), and for --json
 * read dynamic_debug/trace, the clock its times are in (kkctl/trace.c). */
static void serve_one(size_t i)
{
	const struct target *t = &pool.l->v[i];
	int clock = kkctl_trace_clock(t, pool.verb, pool.file);

	kkctl_dd_request(t, pool.verb, pool.file, pool.body, pool.blen, &pool.res[i]);
	pool.res[i].trace_clock = clock;
}

/* A worker: take the next target while fewer than --jobs replies wait to be
 * printed, and serve it. */
static void *serve_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		size_t i;

		while (pool.next < pool.l->n && pool.next >= pool.printed + kkctl_bounds.jobs)
			pthread_cond_wait(&pool.cond, &pool.lock);
		if (pool.next >= pool.l->n)
			break;
		i = pool.next++;
		pthread_mutex_unlock(&pool.lock);
		serve_one(i);
		pthread_mutex_lock(&pool.lock);
		pool.done[i] = true;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/* Report target @i and free its reply.  True if it failed (a process a
 * selector matched that exited meanwhile did not: kkctl_settle_gone()). */
static bool report_one(size_t i)
{
	struct target *t = &pool.l->v[i];
	bool failed = kkctl_settle_gone(t, &pool.res[i]);

	kkctl_dd_count(&pool.res[i]);
	kkctl_report(t, &pool.res[i], pool.l->n > 1);
	t->reached |= pool.res[i].ok;
	t->gone = pool.res[i].gone;
	free(pool.res[i].body);
	return failed;
}

/* One target at a time, in this thread (one target, --jobs 1, or no thread
 * could be started).  True if any failed. */
static bool serve_in_turn(void)
{
	bool failed = false;

	for (size_t i = 0; i < pool.l->n; i++) {
		serve_one(i);
		failed |= report_one(i);
	}
	return failed;
}

/* Report the targets in order as the @nth workers finish them, then join
 * the workers.  True if any failed. */
static bool report_in_order(pthread_t *th, unsigned nth)
{
	bool failed = false;

	pthread_mutex_lock(&pool.lock);
	for (size_t i = 0; i < pool.l->n; i++) {
		while (!pool.done[i])
			pthread_cond_wait(&pool.cond, &pool.lock);
		pthread_mutex_unlock(&pool.lock);
		failed |= report_one(i);
		pthread_mutex_lock(&pool.lock);
		pool.printed = i + 1;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
	for (unsigned i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	return failed;
}

/* Serve every target of @l and report each, in order.  True if any failed. */
bool kkctl_serve_all(struct tlist *l, const char *verb, const char *file, const char *body,
		     size_t blen)
{
	pthread_t th[64];
	unsigned nth = 0, want = kkctl_bounds.jobs < l->n ? kkctl_bounds.jobs : (unsigned)l->n;
	bool failed;

	pool.l = l;
	pool.verb = verb;
	pool.file = file;
	pool.body = body;
	pool.blen = blen;
	pool.res = calloc(l->n ? l->n : 1, sizeof(*pool.res));
	pool.done = calloc(l->n ? l->n : 1, sizeof(*pool.done));
	if (!pool.res || !pool.done) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return true;
	}
	kkctl_our_netns();	/* (its cache, before the threads) */
	while (want > 1 && nth < want && !pthread_create(&th[nth], NULL, serve_worker, NULL))
		nth++;
	failed = nth ? report_in_order(th, nth) : serve_in_turn();
	free(pool.res);
	free(pool.done);
	return failed;
}
