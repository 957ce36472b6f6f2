/* SPDX-License-Identifier: MIT */
/*
 * Debug objects from every dialect: every hook, with fixups, and the
 * kernel's struct debug_obj.
 */
#include <string.h>
#include <kernelkit/debugobjects.h>
#include "dialect.h"

struct dialect_timer {
	int armed;
	int static_init;
};

static int reports, free_reports;
static int fixed[5];	/* init, activate, destroy, free, assert_init */

static void printer(const char *text, void *arg)
{
	(void)arg;
	if (strstr(text, "ODEBUG: "))
		reports++;
	if (strstr(text, "ODEBUG: free active"))
		free_reports++;
}

static struct debug_obj_descr timer_descr;

static void *hint(void *addr)
{
	return addr;
}

static bool is_static(void *addr)
{
	return ((struct dialect_timer *)addr)->static_init != 0;
}

static bool fixup_init(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	fixed[0]++;
	debug_object_deactivate(addr, &timer_descr);
	debug_object_init(addr, &timer_descr);
	return true;
}

static bool fixup_activate(void *addr, enum debug_obj_state state)
{
	(void)addr;
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	fixed[1]++;
	return true;
}

static bool fixup_destroy(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	fixed[2]++;
	debug_object_deactivate(addr, &timer_descr);
	debug_object_destroy(addr, &timer_descr);
	return true;
}

static bool fixup_free(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	fixed[3]++;
	debug_object_deactivate(addr, &timer_descr);
	debug_object_free(addr, &timer_descr);
	return true;
}

static bool fixup_assert_init(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_NOTAVAILABLE)
		return false;
	fixed[4]++;
	debug_object_init(addr, &timer_descr);
	return true;
}

static enum debug_obj_state state_of(const void *addr)
{
	struct debug_obj o;

	if (!kk_debug_object_get(addr, &o))
		return ODEBUG_STATE_NONE;
	if (o.object != addr || o.descr != &timer_descr)
		return ODEBUG_STATE_MAX;
	return o.state;
}

static int __attribute__((__noinline__)) on_stack(void)
{
	struct dialect_timer t;
	struct kk_debug_objects_stats st;
	unsigned long before;

	memset(&t, 0, sizeof(t));
	kk_debug_objects_get_stats(&st);
	before = st.stack_warnings;
	debug_object_init_on_stack(&t, &timer_descr);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_INIT);
	destroy_object_on_stack(&t, &timer_descr);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_NONE);
	kk_debug_objects_get_stats(&st);
	DIALECT_CHECK(st.stack_warnings == before);
	return 0;
}

int dialect_debugobjects(void)
{
	static struct dialect_timer t, s;
	struct kk_debug_objects_stats st;
	unsigned int astate = 99;
	enum debug_obj_state state = ODEBUG_STATE_MAX;

	/* every field is set: no memset (in C++14 and later the struct has default
	 * member initializers, and g++ -Wall warns about memset on such a type) */
	timer_descr.name = "dialect_timer";
	timer_descr.debug_hint = hint;
	timer_descr.is_static_object = is_static;
	timer_descr.fixup_init = fixup_init;
	timer_descr.fixup_activate = fixup_activate;
	timer_descr.fixup_destroy = fixup_destroy;
	timer_descr.fixup_free = fixup_free;
	timer_descr.fixup_assert_init = fixup_assert_init;
	kk_debug_objects_set_printer(printer, NULL);
	debug_objects_early_init();
	debug_objects_mem_init();

	/* off: every hook is a no-op */
	DIALECT_CHECK(!kk_debug_objects_enabled());
	debug_object_init(&t, &timer_descr);
	DIALECT_CHECK(debug_object_activate(&t, &timer_descr) == 0);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_NONE);

	DIALECT_CHECK(kk_debug_objects_enable() == 0);
	DIALECT_CHECK(kk_debug_objects_enabled());
	kk_debug_objects_get_stats(&st);
	DIALECT_CHECK(st.warnings == 0 && st.fixups == 0);

	debug_object_init(&t, &timer_descr);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_INIT);
	DIALECT_CHECK(debug_object_activate(&t, &timer_descr) == 0);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_ACTIVE);
	debug_object_activate(&t, &timer_descr);		/* active: fixup_activate */
	DIALECT_CHECK(fixed[1] == 1);
	debug_object_init(&t, &timer_descr);			/* active: fixup_init */
	DIALECT_CHECK(fixed[0] == 1 && state_of(&t) == ODEBUG_STATE_INIT);
	DIALECT_CHECK(debug_object_activate(&t, &timer_descr) == 0);
	debug_object_active_state(&t, &timer_descr, 0, 1);
	DIALECT_CHECK(kk_debug_object_lookup(&t, &state, &astate));
	DIALECT_CHECK(state == ODEBUG_STATE_ACTIVE && astate == 1);
	debug_object_active_state(&t, &timer_descr, 1, 0);
	debug_object_destroy(&t, &timer_descr);			/* active: fixup_destroy */
	DIALECT_CHECK(fixed[2] == 1 && state_of(&t) == ODEBUG_STATE_DESTROYED);
	DIALECT_CHECK(debug_object_activate(&t, &timer_descr) != 0);
	debug_object_free(&t, &timer_descr);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_NONE);

	debug_object_init(&t, &timer_descr);
	debug_object_activate(&t, &timer_descr);
	debug_object_free(&t, &timer_descr);			/* active: fixup_free */
	DIALECT_CHECK(fixed[3] == 1 && free_reports == 1);
	DIALECT_CHECK(state_of(&t) == ODEBUG_STATE_NONE);

	debug_object_assert_init(&t, &timer_descr);		/* untracked: fixup */
	DIALECT_CHECK(fixed[4] == 1 && state_of(&t) == ODEBUG_STATE_INIT);
	debug_object_deactivate(&t, &timer_descr);
	debug_object_free(&t, &timer_descr);

	s.static_init = 1;					/* static: no init needed */
	DIALECT_CHECK(debug_object_activate(&s, &timer_descr) == 0);
	DIALECT_CHECK(state_of(&s) == ODEBUG_STATE_ACTIVE);
	debug_check_no_obj_freed(&s, sizeof(s));		/* freed while active */
	DIALECT_CHECK(fixed[3] == 2 && state_of(&s) == ODEBUG_STATE_NONE);

	if (on_stack())
		return 1;
	kk_debug_objects_get_stats(&st);
	DIALECT_CHECK(st.fixups == 6);
	DIALECT_CHECK(reports >= 5);
	DIALECT_CHECK(kk_debug_objects_report_active() == 0);
	DIALECT_CHECK(kk_debug_objects_disable() == 0);
	kk_debug_objects_set_printer(NULL, NULL);
	return 0;
}
