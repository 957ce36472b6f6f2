// SPDX-License-Identifier: MIT
/*
 * kkctl: serving the targets, several at once, their replies in order, each
 * target as soon as it is selected.
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
 *
 * The list may grow while it is served (kkctl_serve_add(): the selection
 * feeds the workers, issue 41): its room is reserved first, so that a
 * target a worker holds is never moved, and the first reply waits until a
 * second target comes or the list is closed, since whether replies get a
 * "==> PID NAME <==" line depends on how many there are.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tlist *l;	/* the list being served, or NULL */
	struct result *res;
	bool *done;
	size_t next, printed;
	bool go;		/* targets may be taken (the selectors matched one) */
	bool closed;		/* no more targets come */
	bool abort;		/* take no more: nothing is sent to the rest */
	bool failed;
	unsigned nth;		/* workers; 0: served in this thread */
	pthread_t th[64];
	const char *verb, *file, *body;
	size_t blen;
} pool = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

/* Serve target @i: the request (in pieces: kkctl/ddctl.c), and for --json
 * read dynamic_debug/trace, the clock its times are in (kkctl/trace.c). */
static void serve_one(size_t i)
{
	const struct target *t = &pool.l->v[i];
	int clock = kkctl_trace_clock(t, pool.verb, pool.file);

	kkctl_dd_request(t, pool.verb, pool.file, pool.body, pool.blen, &pool.res[i]);
	pool.res[i].trace_clock = clock;
}

/*
 * May the next target be taken?  Only once the one after it is selected (or
 * the selection is over): a request may end another process (a peer's
 * "end" file), and the one the selection reached next is then still a
 * target, reported gone, as when every target was selected first.  (pool.lock
 * held)
 */
static bool can_take(void)
{
	return pool.go && !pool.abort && pool.next < pool.l->n &&
	       (pool.next + 1 < pool.l->n || pool.closed) &&
	       pool.next < pool.printed + kkctl_bounds.jobs;
}

/* A worker: take the next target while fewer than --jobs replies wait to be
 * printed, and serve it, until the list is closed and taken. */
static void *serve_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		size_t i;

		while (!can_take() && !pool.abort && !(pool.closed && pool.next >= pool.l->n))
			pthread_cond_wait(&pool.cond, &pool.lock);
		if (!can_take())
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

/* Report target @i and free its reply.  Sets pool.failed if it failed (a
 * process a selector matched that exited meanwhile did not:
 * kkctl_settle_gone()). */
static void report_one(size_t i)
{
	struct target *t = &pool.l->v[i];

	pool.failed |= kkctl_settle_gone(t, &pool.res[i]);
	kkctl_dd_count(&pool.res[i]);
	kkctl_report(t, &pool.res[i], pool.l->n > 1);
	t->reached |= pool.res[i].ok;
	t->gone = pool.res[i].gone;
	free(pool.res[i].body);
}

/* Report, in order, the targets done so far; the first only once it is
 * known whether it is the only one. */
static void report_ready(void)
{
	pthread_mutex_lock(&pool.lock);
	while (pool.printed < pool.next && pool.done[pool.printed] &&
	       (pool.l->n > 1 || pool.closed)) {
		size_t i = pool.printed;

		pthread_mutex_unlock(&pool.lock);
		report_one(i);
		pthread_mutex_lock(&pool.lock);
		pool.printed = i + 1;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
}

/* Without workers: serve the next target here, if it may be taken. */
static bool serve_here(void)
{
	size_t i;

	pthread_mutex_lock(&pool.lock);
	if (pool.nth || !can_take()) {
		pthread_mutex_unlock(&pool.lock);
		return false;
	}
	i = pool.next++;
	pthread_mutex_unlock(&pool.lock);
	serve_one(i);
	pthread_mutex_lock(&pool.lock);
	pool.done[i] = true;
	pthread_mutex_unlock(&pool.lock);
	return true;
}

/* Print what is done (and without workers, serve what may be served). */
void kkctl_serve_poll(void)
{
	if (!pool.l)
		return;
	do
		report_ready();
	while (serve_here());
}

/*
 * Start serving @l, which may grow by @more targets (kkctl_serve_add()):
 * none is taken before @go (or a kkctl_serve_add()).  -1 after saying why
 * (nothing was sent).
 */
int kkctl_serve_begin(struct tlist *l, size_t more, const char *verb, const char *file,
		      const char *body, size_t blen, bool go)
{
	size_t cap = l->n + more ? l->n + more : 1;
	unsigned want = kkctl_bounds.jobs < cap ? kkctl_bounds.jobs : (unsigned)cap;
	struct target *v = cap > l->cap ? realloc(l->v, cap * sizeof(*v)) : l->v;

	if (v) {
		l->v = v;
		l->cap = cap > l->cap ? cap : l->cap;
	}
	pool.res = calloc(cap, sizeof(*pool.res));
	pool.done = calloc(cap, sizeof(*pool.done));
	if (!v || !pool.res || !pool.done) {
		free(pool.res);
		free(pool.done);
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return -1;
	}
	pool.l = l;
	pool.verb = verb;
	pool.file = file;
	pool.body = body;
	pool.blen = blen;
	pool.next = pool.printed = 0;
	pool.go = go;
	pool.closed = pool.abort = pool.failed = false;
	kkctl_our_netns();	/* (its cache, before the threads) */
	pool.nth = 0;
	while (want > 1 && pool.nth < want &&
	       !pthread_create(&pool.th[pool.nth], NULL, serve_worker, NULL))
		pool.nth++;
	return 0;
}

/* Add @t to @l unless its pid is there already (1); if @l is being served,
 * it is served from now on.  -1: out of memory (or room). */
int kkctl_serve_add(struct tlist *l, const struct target *t)
{
	int ret;

	if (pool.l != l)
		return kkctl_tlist_add(l, t);
	pthread_mutex_lock(&pool.lock);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == t->pid) {
			pthread_mutex_unlock(&pool.lock);
			return 1;
		}
	ret = l->n < l->cap ? 0 : -1;	/* never moved while served */
	if (!ret) {
		l->v[l->n++] = *t;
		pool.go = true;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
	kkctl_serve_poll();
	return ret;
}

/*
 * No more targets come: serve the rest and report every one, in order, then
 * stop the workers.  With @abort, no other target is taken: those already
 * taken are still reported.  True if any failed.
 */
bool kkctl_serve_end(bool abort)
{
	pthread_mutex_lock(&pool.lock);
	pool.closed = true;
	pool.abort = abort;
	pool.go |= !abort;
	pthread_cond_broadcast(&pool.cond);
	for (;;) {
		size_t last = abort ? pool.next : pool.l->n;	/* (not taken: not done) */

		while (pool.nth && pool.printed < last && !pool.done[pool.printed])
			pthread_cond_wait(&pool.cond, &pool.lock);
		if (pool.printed >= last)
			break;
		pthread_mutex_unlock(&pool.lock);
		kkctl_serve_poll();
		pthread_mutex_lock(&pool.lock);
	}
	pthread_mutex_unlock(&pool.lock);
	for (unsigned i = 0; i < pool.nth; i++)
		pthread_join(pool.th[i], NULL);
	free(pool.res);
	free(pool.done);
	pool.l = NULL;
	return pool.failed;
}

/* Serve every target of @l and report each, in order.  True if any failed. */
bool kkctl_serve_all(struct tlist *l, const char *verb, const char *file, const char *body,
		     size_t blen)
{
	if (kkctl_serve_begin(l, 0, verb, file, body, blen, true))
		return true;
	return kkctl_serve_end(false);
}
