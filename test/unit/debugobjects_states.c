// SPDX-License-Identifier: MIT
/*
 * Every row of the kernel's state table: the resulting state, the warning
 * (and its exact text), which fixup ran with which state, and the return
 * value of activate.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <kernelkit/debugobjects.h>

struct thing {
	int is_static;
	long payload[7];
};

/* what the fixups saw and what they answer */
static struct {
	int calls[5];
	enum debug_obj_state seen[5];
	bool answer;
	bool repair;		/* deactivate (and re-do) like a real fixup */
} fx;
enum { FX_INIT, FX_ACTIVATE, FX_DESTROY, FX_FREE, FX_ASSERT };

static char last_report[1024];
static unsigned long nreports;

static void capture(const char *text, void *arg)
{
	(void)arg;
	snprintf(last_report, sizeof(last_report), "%s", text);
	nreports++;
}

/* exported, so that the report's hint can name it */
void thing_callback(void);
void thing_callback(void)
{
}

static void *thing_hint(void *addr)
{
	(void)addr;
	return (void *)thing_callback;
}

static bool thing_is_static(void *addr)
{
	return ((struct thing *)addr)->is_static;
}

static const struct debug_obj_descr thing_descr;

static bool fix(int which, void *addr, enum debug_obj_state state)
{
	fx.calls[which]++;
	fx.seen[which] = state;
	if (fx.repair && state == ODEBUG_STATE_ACTIVE) {
		debug_object_deactivate(addr, &thing_descr);
		if (which == FX_FREE)
			debug_object_free(addr, &thing_descr);
	}
	return fx.answer;
}

static bool fixup_init(void *a, enum debug_obj_state s) { return fix(FX_INIT, a, s); }
static bool fixup_activate(void *a, enum debug_obj_state s) { return fix(FX_ACTIVATE, a, s); }
static bool fixup_destroy(void *a, enum debug_obj_state s) { return fix(FX_DESTROY, a, s); }
static bool fixup_free(void *a, enum debug_obj_state s) { return fix(FX_FREE, a, s); }
static bool fixup_assert_init(void *a, enum debug_obj_state s) { return fix(FX_ASSERT, a, s); }

static const struct debug_obj_descr thing_descr = {
	.name = "thing",
	.debug_hint = thing_hint,
	.is_static_object = thing_is_static,
	.fixup_init = fixup_init,
	.fixup_activate = fixup_activate,
	.fixup_destroy = fixup_destroy,
	.fixup_free = fixup_free,
	.fixup_assert_init = fixup_assert_init,
};

static struct thing objs[8];

static void setup(void)
{
	memset(&fx, 0, sizeof(fx));
	kk_debug_objects_set_printer(capture, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
}

static unsigned long warnings(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st.warnings;
}

static unsigned long fixups(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st.fixups;
}

static void expect_state(void *addr, int state)
{
	enum debug_obj_state s;
	bool found = kk_debug_object_lookup(addr, &s, NULL);

	if (state < 0)
		cr_assert(!found, "expected untracked, found state %d", s);
	else {
		cr_assert(found, "expected state %d, untracked", state);
		cr_assert_eq((int)s, state, "state %d, expected %d", (int)s, state);
	}
}

/* the last report starts with @prefix and names the object, the type and the hint */
static void expect_report(const char *prefix, void *addr)
{
	char tail[256];

	cr_assert(!strncmp(last_report, prefix, strlen(prefix)), "report \"%s\", expected \"%s...\"",
		  last_report, prefix);
	snprintf(tail, sizeof(tail), " object: %p object type: thing hint: thing_callback+0x0/0x",
		 addr);
	cr_assert(strstr(last_report, tail), "report \"%s\" lacks \"%s\"", last_report, tail);
}

/* ---- init ---------------------------------------------------------------------------- */

Test(debugobjects_states, init_from_untracked_init_inactive, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INIT);
	debug_object_init(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INIT);
	debug_object_activate(o, &thing_descr);
	debug_object_deactivate(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INACTIVE);
	debug_object_init(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INIT);
	cr_assert_eq(warnings(), 0);
	cr_assert_eq(nreports, 0);
}

Test(debugobjects_states, init_active_warns_and_calls_fixup_init, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_activate(o, &thing_descr);
	debug_object_init(o, &thing_descr);
	expect_report("ODEBUG: init active (active state 0)", o);
	cr_assert_eq(fx.calls[FX_INIT], 1);
	cr_assert_eq(fx.seen[FX_INIT], ODEBUG_STATE_ACTIVE);
	expect_state(o, ODEBUG_STATE_ACTIVE);		/* the fixup did nothing */
	cr_assert_eq(warnings(), 1);
	cr_assert_eq(fixups(), 0, "a fixup that answers false is not counted");
}

Test(debugobjects_states, init_destroyed_warns_without_fixup, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_destroy(o, &thing_descr);
	debug_object_init(o, &thing_descr);
	expect_report("ODEBUG: init destroyed (active state 0)", o);
	cr_assert_eq(fx.calls[FX_INIT], 0);
	expect_state(o, ODEBUG_STATE_DESTROYED);
	cr_assert_eq(warnings(), 1);
}

/* ---- activate --------------------------------------------------------------------------- */

Test(debugobjects_states, activate_init_and_inactive, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0);
	expect_state(o, ODEBUG_STATE_ACTIVE);
	debug_object_deactivate(o, &thing_descr);
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0);
	expect_state(o, ODEBUG_STATE_ACTIVE);
	cr_assert_eq(warnings(), 0);
}

Test(debugobjects_states, activate_untracked_static_is_silent, .init = setup)
{
	struct thing *o = &objs[1];

	o->is_static = 1;
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0);
	expect_state(o, ODEBUG_STATE_ACTIVE);
	cr_assert_eq(warnings(), 0);
	cr_assert_eq(fx.calls[FX_ACTIVATE], 0);
}

Test(debugobjects_states, activate_active, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_activate(o, &thing_descr);
	fx.answer = false;
	cr_assert_eq(debug_object_activate(o, &thing_descr), -EINVAL);
	expect_report("ODEBUG: activate active (active state 0)", o);
	cr_assert_eq(fx.calls[FX_ACTIVATE], 1);
	cr_assert_eq(fx.seen[FX_ACTIVATE], ODEBUG_STATE_ACTIVE);
	fx.answer = true;
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0, "fixed: 0");
	cr_assert_eq(fx.calls[FX_ACTIVATE], 2);
	cr_assert_eq(warnings(), 2);
	cr_assert_eq(fixups(), 1);
}

Test(debugobjects_states, activate_untracked_not_static, .init = setup)
{
	struct thing *o = &objs[2];

	fx.answer = false;
	cr_assert_eq(debug_object_activate(o, &thing_descr), -EINVAL);
	expect_report("ODEBUG: activate not available (active state 0)", o);
	cr_assert_eq(fx.calls[FX_ACTIVATE], 1);
	cr_assert_eq(fx.seen[FX_ACTIVATE], ODEBUG_STATE_NOTAVAILABLE);
	expect_state(o, -1);
	fx.answer = true;
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0);
	cr_assert_eq(warnings(), 2);
	cr_assert_eq(fixups(), 1);
}

Test(debugobjects_states, activate_destroyed, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_destroy(o, &thing_descr);
	fx.answer = true;
	cr_assert_eq(debug_object_activate(o, &thing_descr), -EINVAL);
	expect_report("ODEBUG: activate destroyed (active state 0)", o);
	cr_assert_eq(fx.calls[FX_ACTIVATE], 0, "no fixup for a destroyed object");
	expect_state(o, ODEBUG_STATE_DESTROYED);
	cr_assert_eq(warnings(), 1);
}

/* ---- deactivate ---------------------------------------------------------------------- */

Test(debugobjects_states, deactivate_ok_from_init_inactive_active, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_deactivate(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INACTIVE);
	debug_object_deactivate(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INACTIVE);
	debug_object_activate(o, &thing_descr);
	debug_object_deactivate(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INACTIVE);
	cr_assert_eq(warnings(), 0);
}

Test(debugobjects_states, deactivate_warnings, .init = setup)
{
	struct thing *a = &objs[0], *b = &objs[1], *c = &objs[2];

	debug_object_init(a, &thing_descr);
	debug_object_destroy(a, &thing_descr);
	debug_object_deactivate(a, &thing_descr);
	expect_report("ODEBUG: deactivate destroyed (active state 0)", a);

	debug_object_init(b, &thing_descr);
	debug_object_activate(b, &thing_descr);
	debug_object_active_state(b, &thing_descr, 0, 1);
	debug_object_deactivate(b, &thing_descr);
	expect_report("ODEBUG: deactivate active (active state 1)", b);
	expect_state(b, ODEBUG_STATE_ACTIVE);

	debug_object_deactivate(c, &thing_descr);
	expect_report("ODEBUG: deactivate not available (active state 0)", c);
	expect_state(c, -1);
	cr_assert_eq(warnings(), 3);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(fx.calls[i], 0);
}

/* ---- destroy --------------------------------------------------------------------------- */

Test(debugobjects_states, destroy, .init = setup)
{
	struct thing *a = &objs[0], *b = &objs[1], *c = &objs[2];

	debug_object_init(a, &thing_descr);
	debug_object_destroy(a, &thing_descr);
	expect_state(a, ODEBUG_STATE_DESTROYED);
	debug_object_init(b, &thing_descr);
	debug_object_activate(b, &thing_descr);
	debug_object_deactivate(b, &thing_descr);
	debug_object_destroy(b, &thing_descr);
	expect_state(b, ODEBUG_STATE_DESTROYED);
	debug_object_destroy(c, &thing_descr);		/* untracked: ignored */
	expect_state(c, -1);
	cr_assert_eq(warnings(), 0);

	debug_object_destroy(a, &thing_descr);
	expect_report("ODEBUG: destroy destroyed (active state 0)", a);
	cr_assert_eq(fx.calls[FX_DESTROY], 0);
	cr_assert_eq(warnings(), 1);
}

Test(debugobjects_states, destroy_active_calls_fixup_destroy, .init = setup)
{
	struct thing *o = &objs[0];

	debug_object_init(o, &thing_descr);
	debug_object_activate(o, &thing_descr);
	fx.answer = true;
	debug_object_destroy(o, &thing_descr);
	expect_report("ODEBUG: destroy active (active state 0)", o);
	cr_assert_eq(fx.calls[FX_DESTROY], 1);
	cr_assert_eq(fx.seen[FX_DESTROY], ODEBUG_STATE_ACTIVE);
	cr_assert_eq(fixups(), 1);
	cr_assert_eq(warnings(), 1);
}

/* ---- free -------------------------------------------------------------------------------- */

Test(debugobjects_states, free, .init = setup)
{
	struct thing *a = &objs[0], *b = &objs[1], *c = &objs[2];

	debug_object_init(a, &thing_descr);
	debug_object_free(a, &thing_descr);
	expect_state(a, -1);
	debug_object_init(b, &thing_descr);
	debug_object_destroy(b, &thing_descr);
	debug_object_free(b, &thing_descr);
	expect_state(b, -1);
	debug_object_free(c, &thing_descr);
	cr_assert_eq(warnings(), 0);

	debug_object_init(a, &thing_descr);
	debug_object_activate(a, &thing_descr);
	debug_object_free(a, &thing_descr);
	expect_report("ODEBUG: free active (active state 0)", a);
	cr_assert_eq(fx.calls[FX_FREE], 1);
	cr_assert_eq(fx.seen[FX_FREE], ODEBUG_STATE_ACTIVE);
	expect_state(a, ODEBUG_STATE_ACTIVE);		/* fixup did nothing */
	fx.repair = fx.answer = true;
	debug_object_free(a, &thing_descr);
	expect_state(a, -1);
	cr_assert_eq(fixups(), 1);
	cr_assert_eq(warnings(), 2);
}

/* ---- assert_init --------------------------------------------------------------------------- */

Test(debugobjects_states, assert_init, .init = setup)
{
	struct thing *a = &objs[0], *b = &objs[1], *c = &objs[2];

	debug_object_init(a, &thing_descr);
	debug_object_assert_init(a, &thing_descr);
	expect_state(a, ODEBUG_STATE_INIT);
	b->is_static = 1;
	debug_object_assert_init(b, &thing_descr);
	expect_state(b, ODEBUG_STATE_INIT);
	cr_assert_eq(warnings(), 0);

	fx.answer = true;
	debug_object_assert_init(c, &thing_descr);
	expect_report("ODEBUG: assert_init not available (active state 0)", c);
	cr_assert_eq(fx.calls[FX_ASSERT], 1);
	cr_assert_eq(fx.seen[FX_ASSERT], ODEBUG_STATE_NOTAVAILABLE);
	expect_state(c, -1);
	cr_assert_eq(warnings(), 1);
	cr_assert_eq(fixups(), 1);
}

/* ---- active_state ---------------------------------------------------------------------------- */

Test(debugobjects_states, active_state, .init = setup)
{
	struct thing *o = &objs[0], *u = &objs[3];
	unsigned int as;

	debug_object_init(o, &thing_descr);
	debug_object_active_state(o, &thing_descr, 0, 1);
	expect_report("ODEBUG: active_state initialized (active state 0)", o);
	debug_object_activate(o, &thing_descr);
	debug_object_active_state(o, &thing_descr, 0, 7);
	cr_assert(kk_debug_object_lookup(o, NULL, &as));
	cr_assert_eq(as, 7);
	cr_assert_eq(warnings(), 1);
	debug_object_active_state(o, &thing_descr, 0, 1);	/* expected 0, is 7 */
	expect_report("ODEBUG: active_state active (active state 7)", o);
	cr_assert(kk_debug_object_lookup(o, NULL, &as));
	cr_assert_eq(as, 7);
	debug_object_active_state(u, &thing_descr, 0, 1);
	expect_report("ODEBUG: active_state not available (active state 0)", u);
	debug_object_active_state(o, &thing_descr, 7, 0);
	debug_object_deactivate(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INACTIVE);
	cr_assert_eq(warnings(), 3);
}

/* ---- check_no_obj_freed ----------------------------------------------------------------------- */

Test(debugobjects_states, check_no_obj_freed_drops_inactive_in_range, .init = setup)
{
	debug_object_init(&objs[0], &thing_descr);
	debug_object_init(&objs[1], &thing_descr);
	debug_object_activate(&objs[1], &thing_descr);
	debug_object_deactivate(&objs[1], &thing_descr);
	debug_object_init(&objs[2], &thing_descr);
	debug_object_destroy(&objs[2], &thing_descr);
	debug_object_init(&objs[3], &thing_descr);	/* out of range */
	debug_check_no_obj_freed(&objs[0], 3 * sizeof(objs[0]));
	for (int i = 0; i < 3; i++)
		expect_state(&objs[i], -1);
	expect_state(&objs[3], ODEBUG_STATE_INIT);
	cr_assert_eq(warnings(), 0);
}

Test(debugobjects_states, check_no_obj_freed_active, .init = setup)
{
	fx.repair = fx.answer = true;
	for (int i = 0; i < 3; i++) {
		debug_object_init(&objs[i], &thing_descr);
		debug_object_activate(&objs[i], &thing_descr);
	}
	debug_check_no_obj_freed(&objs[0], 2 * sizeof(objs[0]));
	cr_assert_eq(fx.calls[FX_FREE], 2);
	cr_assert_eq(fx.seen[FX_FREE], ODEBUG_STATE_ACTIVE);
	cr_assert_eq(warnings(), 2);
	cr_assert_eq(fixups(), 2);
	expect_state(&objs[0], -1);
	expect_state(&objs[1], -1);
	expect_state(&objs[2], ODEBUG_STATE_ACTIVE);
	cr_assert(strstr(last_report, "ODEBUG: free active (active state 0)"));
}

Test(debugobjects_states, check_no_obj_freed_without_fixup_terminates, .init = setup)
{
	fx.answer = false;		/* the fixup leaves the object active */
	debug_object_init(&objs[0], &thing_descr);
	debug_object_activate(&objs[0], &thing_descr);
	debug_check_no_obj_freed(&objs[0], sizeof(objs[0]));
	cr_assert_eq(fx.calls[FX_FREE], 1, "reported once, not in a loop");
	cr_assert_eq(warnings(), 1);
	expect_state(&objs[0], -1);	/* the memory is gone: so is the tracker */
}

/* A range over many pages visits only the buckets of those pages; a huge one all. */
Test(debugobjects_states, check_no_obj_freed_large_ranges, .init = setup)
{
	static char big[64 * 4096];
	void *in = big + 40 * 4096 + 128;

	fx.repair = fx.answer = true;
	debug_object_init(in, &thing_descr);
	debug_object_activate(in, &thing_descr);
	debug_check_no_obj_freed(big, 40 * 4096 + 128);	/* ends just before it */
	expect_state(in, ODEBUG_STATE_ACTIVE);
	debug_check_no_obj_freed(big, sizeof(big));
	expect_state(in, -1);
	cr_assert_eq(fx.calls[FX_FREE], 1);

	debug_object_init(in, &thing_descr);
	debug_object_activate(in, &thing_descr);
	debug_check_no_obj_freed((void *)4096, ~0ul - 8192);	/* every bucket */
	expect_state(in, -1);
	cr_assert_eq(fx.calls[FX_FREE], 2);
}

/* ---- off ------------------------------------------------------------------------------------- */

Test(debugobjects_states, disabled_hooks_do_nothing)
{
	struct thing *o = &objs[0];

	cr_assert(!kk_debug_objects_enabled());
	debug_object_init(o, &thing_descr);
	cr_assert_eq(debug_object_activate(o, &thing_descr), 0);
	debug_object_free(o, &thing_descr);
	expect_state(o, -1);
	cr_assert_eq(kk_debug_objects_enable(), 0);
	debug_object_init(o, &thing_descr);
	expect_state(o, ODEBUG_STATE_INIT);
	cr_assert_eq(kk_debug_objects_disable(), 0);
	cr_assert(!kk_debug_objects_enabled());
	expect_state(o, -1);		/* switching off forgets every object */
	cr_assert_eq(debug_object_activate(&objs[5], &thing_descr), 0);
	cr_assert_eq(warnings(), 0);
}
