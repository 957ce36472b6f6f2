// SPDX-License-Identifier: MIT
/* shazptr inside signal handlers: nesting on top of normal code, first use in
 * a handler, a handler-held guard blocking synchronize, and a signal storm. */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "shazptr_util.h"

static int a, b;
static volatile sig_atomic_t h_wild, h_ran;
static void *volatile h_slot_val;
static volatile sig_atomic_t h_hold;	/* 1: keep the guard until h_release */
static int h_held, h_release;

static void handler(int sig)
{
	(void)sig;
	struct shazptr_guard g = shazptr_acquire(&b);

	h_wild = g.use_wildcard;
	h_slot_val = *g.slot;
	if (h_hold) {
		__atomic_store_n(&h_held, 1, __ATOMIC_RELEASE);
		shzt_wait_flag(&h_release, SHZT_BOUND_MS);
	}
	shazptr_clear(g);
	h_ran = 1;
}

static void install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
}

Test(shazptr_signal, handler_alone_uses_its_pointer)
{
	install();
	struct shazptr_guard warm = shazptr_acquire(&a);	/* register the thread */

	shazptr_clear(warm);
	raise(SIGUSR1);
	cr_assert(h_ran);
	cr_assert_not(h_wild);
	cr_assert_eq(h_slot_val, &b);
	cr_assert_null(shzt_slot_value(), "the handler's clear emptied the slot");
}

Test(shazptr_signal, handler_nested_in_reader_uses_wildcard)
{
	install();
	struct shazptr_guard g = shazptr_acquire(&a);

	raise(SIGUSR1);
	cr_assert(h_ran);
	cr_assert(h_wild, "a handler nested in a read section uses the wildcard");
	cr_assert_eq(h_slot_val, SHAZPTR_WILDCARD);
	cr_assert_eq(shzt_slot_value(), SHAZPTR_WILDCARD, "kept until the outer clear");
	shazptr_clear(g);
	cr_assert_null(shzt_slot_value());
}

static void *first_use_in_handler(void *arg)
{
	(void)arg;
	if (__kk_shazptr_slot)
		return (void *)1;	/* should not be registered yet */
	raise(SIGUSR1);			/* registers inside the handler */
	if (!h_ran || h_wild || h_slot_val != &b || !__kk_shazptr_slot)
		return (void *)2;
	struct shazptr_guard g = shazptr_acquire(&a);

	if (g.use_wildcard || *g.slot != &a)
		return (void *)3;
	shazptr_clear(g);
	return NULL;
}

Test(shazptr_signal, first_use_inside_a_handler)
{
	pthread_t t;
	void *ret;

	install();
	cr_assert_eq(pthread_create(&t, NULL, first_use_in_handler, NULL), 0);
	pthread_join(t, &ret);
	cr_assert_null(ret, "step %ld failed", (long)(intptr_t)ret);
}

static void *raise_fn(void *arg)
{
	(void)arg;
	raise(SIGUSR1);
	return NULL;
}

Test(shazptr_signal, guard_held_in_handler_blocks_synchronize)
{
	for (int skip = 0; skip < 2; skip++) {
		pthread_t t;
		struct shzt_syncer s;

		install();
		kk_shazptr_set_skip_synchronize_self_scan(skip);
		h_hold = 1;
		h_held = h_release = 0;
		cr_assert_eq(pthread_create(&t, NULL, raise_fn, NULL), 0);
		cr_assert(shzt_wait_flag(&h_held, SHZT_BOUND_MS));
		cr_assert_eq(shzt_syncer_start(&s, &b), 0);
		shzt_sleep_ms(SHZT_HOLD_MS);
		cr_assert_not(__atomic_load_n(&s.done, __ATOMIC_ACQUIRE),
			      "a guard held by a signal handler blocks synchronize");
		__atomic_store_n(&h_release, 1, __ATOMIC_RELEASE);
		pthread_join(t, NULL);
		cr_assert(shzt_syncer_finish(&s));
	}
}

/* Signals hitting acquire/clear at every point must leave the slot coherent. */
static int storm_stop;

static void *storm_fn(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	while (!__atomic_load_n(&storm_stop, __ATOMIC_RELAXED)) {
		pthread_kill(target, SIGUSR1);
		for (volatile int i = 0; i < 2000; i++)
			;
	}
	return NULL;
}

Test(shazptr_signal, signal_storm)
{
	pthread_t self = pthread_self(), t;
	long bad = 0, wild = 0;

	install();
	cr_assert_eq(pthread_create(&t, NULL, storm_fn, &self), 0);
	for (long i = 0; i < 2000000; i++) {
		struct shazptr_guard g = shazptr_acquire(&a);
		void *v = *g.slot;

		if (g.use_wildcard)
			bad++;		/* handlers always clean up before returning */
		if (v == SHAZPTR_WILDCARD)
			wild++;		/* a handler came in after our store */
		else if (v != &a)
			bad++;
		shazptr_clear(g);
		if (shzt_slot_value() != NULL)
			bad++;
	}
	__atomic_store_n(&storm_stop, 1, __ATOMIC_RELAXED);
	pthread_join(t, NULL);
	cr_assert_eq(bad, 0, "%ld incoherent slot states", bad);
	cr_log_info("wildcard left by a handler in %ld iterations", wild);
}
