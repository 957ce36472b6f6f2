// SPDX-License-Identifier: MIT
/*
 * Debug-objects hooks in a signal handler that interrupted the same thread
 * inside a debug-objects operation (issue 9, item 6).  The preload library
 * calls debug_check_no_obj_freed() from free(), and free() may run in a
 * signal handler, so the hooks must not deadlock on a lock the interrupted
 * code holds, nor touch the per-thread tracker pool it may be changing.
 *
 * The interruption is deterministic: activating an untracked object calls
 * the type's is_static_object() with the object's bucket lock held, and that
 * callback raise()s the signal, whose handler runs before raise() returns.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <kernelkit/debugobjects.h>

/* Two pages: objects in one page share a bucket (the hash is by 4 KiB chunk). */
static long page[4][512] __attribute__((aligned(4096)));

static char last_report[1024];
static unsigned long nreports;

static void capture(const char *text, void *arg)
{
	(void)arg;
	snprintf(last_report, sizeof(last_report), "%s", text);
	nreports++;
}

static volatile sig_atomic_t armed;
static void (*in_handler)(void);
static volatile sig_atomic_t handler_ran;
static int fixups;

static const struct debug_obj_descr obj_descr;

static bool raise_signal(void *addr)
{
	(void)addr;
	if (armed) {
		armed = 0;
		raise(SIGUSR1);		/* runs the handler now, bucket lock held */
	}
	return false;
}

static bool fixup_free(void *addr, enum debug_obj_state state)
{
	fixups++;
	if (state == ODEBUG_STATE_ACTIVE)
		debug_object_deactivate(addr, &obj_descr);
	return true;
}

static const struct debug_obj_descr obj_descr = {
	.name = "sigobj",
	.is_static_object = raise_signal,
	.fixup_free = fixup_free,
};

static void handler(int sig)
{
	(void)sig;
	in_handler();
	handler_ran = 1;
}

/* The bucket of @p, as src/debugobjects/core.c computes it (white box: to pick
 * a page whose bucket differs, without relying on luck). */
static unsigned int bucket_of(const void *p)
{
	return (unsigned int)((((uintptr_t)p >> 12) * 0x61C8864680B583EBull) >> (64 - 14));
}

static long *other_page(void)
{
	for (int i = 1; i < 4; i++)
		if (bucket_of(page[i]) != bucket_of(page[0]))
			return page[i];
	cr_assert_fail("no page in another bucket");
	return NULL;
}

static struct kk_debug_objects_stats stats(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st;
}

static void setup(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	kk_debug_objects_set_printer(capture, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
	kk_debug_objects_reset();
}

/* Activate an untracked object in page[0]: its is_static_object() raises the signal. */
static int activate_and_interrupt(void (*fn)(void))
{
	in_handler = fn;
	handler_ran = 0;
	armed = 1;
	return debug_object_activate(&page[0][0], &obj_descr);
}

static void free_same_bucket(void)
{
	debug_check_no_obj_freed(&page[0][8], sizeof(long));
}

Test(debugobjects_signal, same_bucket_in_handler_is_skipped_not_deadlocked, .init = setup,
     .timeout = 20)
{
	enum debug_obj_state st;

	debug_object_init(&page[0][8], &obj_descr);
	cr_assert_eq(debug_object_activate(&page[0][8], &obj_descr), 0);

	cr_assert_eq(activate_and_interrupt(free_same_bucket), -EINVAL);
	cr_assert(handler_ran, "the handler returned");
	cr_assert(strstr(last_report, "ODEBUG: activate not available"), "%s", last_report);
	/* the check could not take the lock: it was skipped and counted */
	cr_assert_eq(stats().nested_skips, 1);
	cr_assert_eq(fixups, 0);
	cr_assert(kk_debug_object_lookup(&page[0][8], &st, NULL));
	cr_assert_eq(st, ODEBUG_STATE_ACTIVE, "the skipped check changed nothing");

	/* outside the handler the same check works */
	debug_check_no_obj_freed(&page[0][8], sizeof(long));
	cr_assert_eq(fixups, 1);
	cr_assert(!kk_debug_object_lookup(&page[0][8], NULL, NULL));
}

static long *other;

static void free_other_bucket(void)
{
	debug_check_no_obj_freed(other, 64 * sizeof(long));
}

Test(debugobjects_signal, other_bucket_in_handler_is_checked_and_fixed, .init = setup,
     .timeout = 20)
{
	struct kk_debug_objects_stats s;

	other = other_page();
	debug_object_init(&other[0], &obj_descr);
	cr_assert_eq(debug_object_activate(&other[0], &obj_descr), 0);
	debug_object_init(&other[8], &obj_descr);		/* inactive: just forgotten */

	cr_assert_eq(activate_and_interrupt(free_other_bucket), -EINVAL);
	cr_assert(handler_ran);
	cr_assert_eq(fixups, 1, "fixup_free ran in the handler");
	cr_assert(!kk_debug_object_lookup(&other[0], NULL, NULL));
	cr_assert(!kk_debug_object_lookup(&other[8], NULL, NULL));
	s = stats();
	cr_assert_eq(s.nested_skips, 0);
	cr_assert_eq(s.warnings, 2, "free active in the handler, activate not available");
	cr_assert_eq(s.pool_used, 0, "the handler's trackers are accounted for");
	cr_assert_eq(s.objs_allocated - s.objs_freed, s.pool_used + s.pool_free + s.on_free_list);
}

#define NINIT 200
static int ninit;

static void init_in_handler(void)
{
	for (int i = 0; i < ninit; i++)
		debug_object_init(&other[i], &obj_descr);
}

Test(debugobjects_signal, init_in_handler_uses_spare_trackers, .init = setup, .timeout = 20)
{
	struct kk_debug_objects_stats s;
	enum debug_obj_state st;
	int tracked = 0;

	other = other_page();
	ninit = 1;
	activate_and_interrupt(init_in_handler);
	cr_assert(handler_ran);
	cr_assert(kk_debug_object_lookup(&other[0], &st, NULL), "tracked from the handler");
	cr_assert_eq(st, ODEBUG_STATE_INIT);
	cr_assert_eq(stats().nested_skips, 0);
	cr_assert_eq(debug_object_activate(&other[0], &obj_descr), 0);
	debug_object_deactivate(&other[0], &obj_descr);
	debug_object_free(&other[0], &obj_descr);

	/* more than the spare trackers: the rest are skipped, and counted */
	ninit = NINIT;
	activate_and_interrupt(init_in_handler);
	for (int i = 0; i < NINIT; i++)
		tracked += kk_debug_object_lookup(&other[i], NULL, NULL);
	s = stats();
	cr_assert_gt(tracked, 0);
	cr_assert_gt(s.nested_skips, 0);
	cr_assert_eq((unsigned long)tracked + s.nested_skips, NINIT, "%d tracked, %lu skipped",
		     tracked, s.nested_skips);

	debug_check_no_obj_freed(other, NINIT * sizeof(long));
	s = stats();
	cr_assert_eq(s.pool_used, 0);
	cr_assert_eq(s.objs_allocated - s.objs_freed, s.pool_used + s.pool_free + s.on_free_list);
}
