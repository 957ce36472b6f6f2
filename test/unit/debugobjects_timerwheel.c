// SPDX-License-Identifier: MIT
/*
 * The timer-wheel example under debug objects: each class of misuse is
 * caught, reported in the kernel's format and fixed up so that the wheel
 * stays consistent.  With tracking off, the same misuse goes unseen (the
 * last test), which is what makes the others meaningful.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timerwheel.h"

static char reports[8192];
static size_t rlen;

static void capture(const char *text, void *arg)
{
	size_t n = strlen(text);

	(void)arg;
	if (rlen + n < sizeof(reports)) {
		memcpy(reports + rlen, text, n + 1);
		rlen += n;
	}
}

static struct tw_wheel wheel;
static unsigned int fired;

void on_expiry(struct tw_timer *t);
void on_expiry(struct tw_timer *t)
{
	(void)t;
	fired++;
}

static void setup(void)
{
	rlen = 0;
	reports[0] = 0;
	fired = 0;
	kk_debug_objects_set_printer(capture, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
	tw_wheel_init(&wheel);
}

static unsigned long warnings(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st.warnings;
}

static void expect(const char *what, const void *obj)
{
	char line[256];

	snprintf(line, sizeof(line), "ODEBUG: %s object: %p object type: timer_list hint: ", what, obj);
	cr_assert(strstr(reports, line), "no \"%s\" in:\n%s", line, reports);
}

Test(debugobjects_timerwheel, correct_use_is_silent, .init = setup)
{
	struct tw_timer *t = malloc(sizeof(*t));

	tw_timer_setup(t, on_expiry);
	cr_assert_eq(tw_add_timer(&wheel, t, 5), 0);
	cr_assert_eq(tw_mod_timer(&wheel, t, 8), 0);
	cr_assert_eq(tw_advance(&wheel, 10), 1);
	cr_assert_eq(tw_add_timer(&wheel, t, 12), 0);
	cr_assert_eq(tw_del_timer(t), 1);
	tw_timer_free(t);
	free(t);
	cr_assert_eq(warnings(), 0, "%s", reports);
	cr_assert_eq(fired, 1);
}

Test(debugobjects_timerwheel, setup_of_an_armed_timer, .init = setup)
{
	static struct tw_timer t;

	tw_timer_setup(&t, on_expiry);
	tw_add_timer(&wheel, &t, 5);
	tw_timer_setup(&t, on_expiry);		/* BUG: re-initialised while armed */
	expect("init active (active state 0)", &t);
	cr_assert(strstr(reports, "hint: on_expiry+0x0/0x"), "%s", reports);
	cr_assert(!tw_timer_pending(&t), "the fixup took it off the wheel");
	cr_assert_eq(wheel.pending, 0);
	cr_assert_eq(tw_advance(&wheel, 10), 0);
}

Test(debugobjects_timerwheel, add_of_an_uninitialised_timer, .init = setup)
{
	static struct tw_timer t;		/* never set up */

	cr_assert_eq(tw_add_timer(&wheel, &t, 5), 0, "the fixup set it up with a stub");
	expect("activate not available (active state 0)", &t);
	cr_assert_eq(tw_advance(&wheel, 10), 1);
	cr_assert_eq(fired, 0, "the stub ran, not a random pointer");
}

Test(debugobjects_timerwheel, double_add, .init = setup)
{
	static struct tw_timer t;

	tw_timer_setup(&t, on_expiry);
	cr_assert_eq(tw_add_timer(&wheel, &t, 5), 0);
	cr_assert_eq(tw_add_timer(&wheel, &t, 7), -EINVAL);	/* BUG */
	expect("activate active (active state 0)", &t);
	cr_assert_eq(wheel.pending, 1, "not queued twice");
	cr_assert_eq(tw_advance(&wheel, 10), 1);
}

Test(debugobjects_timerwheel, use_after_destroy, .init = setup)
{
	static struct tw_timer t;

	tw_timer_setup(&t, on_expiry);
	tw_timer_destroy(&t);
	cr_assert_eq(tw_add_timer(&wheel, &t, 5), -EINVAL);	/* BUG */
	expect("activate destroyed (active state 0)", &t);
	cr_assert_eq(wheel.pending, 0);
	tw_timer_setup(&t, on_expiry);				/* BUG */
	expect("init destroyed (active state 0)", &t);
}

Test(debugobjects_timerwheel, destroy_of_an_armed_timer, .init = setup)
{
	static struct tw_timer t;

	tw_timer_setup(&t, on_expiry);
	tw_add_timer(&wheel, &t, 5);
	tw_timer_destroy(&t);					/* BUG */
	expect("destroy active (active state 0)", &t);
	cr_assert_eq(wheel.pending, 0, "the fixup took it off the wheel");
}

Test(debugobjects_timerwheel, free_of_an_armed_timer, .init = setup)
{
	struct tw_timer *t = malloc(sizeof(*t));

	tw_timer_setup(t, on_expiry);
	tw_add_timer(&wheel, t, 5);
	tw_timer_free(t);					/* BUG */
	expect("free active (active state 0)", t);
	cr_assert_eq(wheel.pending, 0, "the fixup took it off the wheel");
	free(t);
	cr_assert_eq(tw_advance(&wheel, 10), 0, "nothing touches the freed timer");
}

Test(debugobjects_timerwheel, freeing_memory_that_holds_an_armed_timer, .init = setup)
{
	struct conn { int fd; struct tw_timer timeout; char buf[100]; } *c = malloc(sizeof(*c));

	tw_timer_setup(&c->timeout, on_expiry);
	tw_add_timer(&wheel, &c->timeout, 5);
	debug_check_no_obj_freed(c, sizeof(*c));		/* what free() does when preloaded */
	expect("free active (active state 0)", &c->timeout);
	cr_assert_eq(wheel.pending, 0);
	free(c);
	cr_assert_eq(tw_advance(&wheel, 10), 0);
}

Test(debugobjects_timerwheel, delete_of_an_uninitialised_timer, .init = setup)
{
	static struct tw_timer t;

	cr_assert_eq(tw_del_timer(&t), 0);			/* BUG */
	expect("assert_init not available (active state 0)", &t);
}

Test(debugobjects_timerwheel, static_timer_needs_no_setup, .init = setup)
{
	static struct tw_timer t = TW_TIMER_INITIALIZER(on_expiry);

	cr_assert_eq(tw_add_timer(&wheel, &t, 3), 0);
	cr_assert_eq(tw_advance(&wheel, 5), 1);
	cr_assert_eq(warnings(), 0, "%s", reports);
}

Test(debugobjects_timerwheel, on_stack_timers, .init = setup)
{
	struct tw_timer good, bad;

	tw_timer_setup_on_stack(&good, on_expiry);
	tw_add_timer(&wheel, &good, 2);
	tw_advance(&wheel, 3);
	tw_destroy_timer_on_stack(&good);
	cr_assert_eq(rlen, 0, "%s", reports);

	tw_timer_setup(&bad, on_expiry);			/* BUG: not annotated */
	cr_assert(strstr(reports, "is on stack"), "%s", reports);
	cr_assert(strstr(reports, "but NOT annotated."), "%s", reports);
	tw_timer_free(&bad);
}

Test(debugobjects_timerwheel, armed_timers_reported_at_exit, .init = setup)
{
	static struct tw_timer t[3];

	for (int i = 0; i < 3; i++) {
		tw_timer_setup(&t[i], on_expiry);
		tw_add_timer(&wheel, &t[i], 50);
	}
	cr_assert_eq(kk_debug_objects_report_active(), 3);
	cr_assert(strstr(reports, "ODEBUG: 3 active objects, by type:\nODEBUG:   timer_list"),
		  "%s", reports);
}

Test(debugobjects_timerwheel, off_means_unseen)
{
	static struct tw_timer t;

	kk_debug_objects_set_printer(capture, NULL);
	tw_wheel_init(&wheel);
	tw_timer_setup(&t, on_expiry);
	tw_add_timer(&wheel, &t, 5);
	tw_timer_setup(&t, on_expiry);		/* the same bug as above, unchecked */
	cr_assert_eq(warnings(), 0);
	cr_assert_eq(rlen, 0);
	cr_assert_eq(wheel.pending, 1, "the wheel is now corrupt: it still counts the timer");
}
