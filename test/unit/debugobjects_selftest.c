// SPDX-License-Identifier: MIT
/*
 * The kernel's debug-objects self-test sequence: after every step, the
 * object's state, the fixup count and the warning count are checked.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include <kernelkit/debugobjects.h>

struct self_test {
	unsigned long dummy1[6];
	int static_init;
	unsigned long dummy2[3];
};

static const struct debug_obj_descr descr_type_test;

static bool st_is_static(void *addr)
{
	return ((struct self_test *)addr)->static_init;
}

static bool st_fixup_init(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(addr, &descr_type_test);
	debug_object_init(addr, &descr_type_test);
	return true;
}

static bool st_fixup_activate(void *addr, enum debug_obj_state state)
{
	switch (state) {
	case ODEBUG_STATE_NOTAVAILABLE:
		return true;
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(addr, &descr_type_test);
		debug_object_activate(addr, &descr_type_test);
		return true;
	default:
		return false;
	}
}

static bool st_fixup_destroy(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(addr, &descr_type_test);
	debug_object_destroy(addr, &descr_type_test);
	return true;
}

static bool st_fixup_free(void *addr, enum debug_obj_state state)
{
	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	debug_object_deactivate(addr, &descr_type_test);
	debug_object_free(addr, &descr_type_test);
	return true;
}

static const struct debug_obj_descr descr_type_test = {
	.name = "selftest",
	.is_static_object = st_is_static,
	.fixup_init = st_fixup_init,
	.fixup_activate = st_fixup_activate,
	.fixup_destroy = st_fixup_destroy,
	.fixup_free = st_fixup_free,
};

static unsigned long printed;

static void count_print(const char *text, void *arg)
{
	(void)arg;
	(void)text;
	printed++;
}

static void setup(void)
{
	kk_debug_objects_set_printer(count_print, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
}

static void check_results(void *addr, enum debug_obj_state state, unsigned long fixups,
			  unsigned long warnings, const char *step)
{
	struct kk_debug_objects_stats st;
	enum debug_obj_state s = ODEBUG_STATE_NONE;
	bool found = kk_debug_object_lookup(addr, &s, NULL);

	if (state == ODEBUG_STATE_NONE)
		cr_assert(!found, "%s: object still tracked (state %d)", step, s);
	else {
		cr_assert(found, "%s: object not found", step);
		cr_assert_eq(s, state, "%s: state %d, expected %d", step, s, state);
	}
	kk_debug_objects_get_stats(&st);
	cr_assert_eq(st.fixups, fixups, "%s: fixups %lu, expected %lu", step, st.fixups, fixups);
	cr_assert_eq(st.warnings, warnings, "%s: warnings %lu, expected %lu", step, st.warnings,
		     warnings);
}

static struct self_test obj = { .static_init = 0 };

Test(debugobjects_selftest, kernel_sequence, .init = setup)
{
	unsigned long fixups = 0, warnings = 0;

	debug_object_init(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_INIT, fixups, warnings, "init");
	cr_assert_eq(debug_object_activate(&obj, &descr_type_test), 0);
	check_results(&obj, ODEBUG_STATE_ACTIVE, fixups, warnings, "activate");
	cr_assert_eq(debug_object_activate(&obj, &descr_type_test), 0);	/* fixed */
	check_results(&obj, ODEBUG_STATE_ACTIVE, ++fixups, ++warnings, "activate again");
	debug_object_deactivate(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_INACTIVE, fixups, warnings, "deactivate");
	debug_object_destroy(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_DESTROYED, fixups, warnings, "destroy");
	debug_object_init(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_DESTROYED, fixups, ++warnings, "init destroyed");
	cr_assert_eq(debug_object_activate(&obj, &descr_type_test), -EINVAL);
	check_results(&obj, ODEBUG_STATE_DESTROYED, fixups, ++warnings, "activate destroyed");
	debug_object_deactivate(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_DESTROYED, fixups, ++warnings, "deactivate destroyed");
	debug_object_free(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_NONE, fixups, warnings, "free");

	/* the static-object path */
	obj.static_init = 1;
	cr_assert_eq(debug_object_activate(&obj, &descr_type_test), 0);
	check_results(&obj, ODEBUG_STATE_ACTIVE, fixups, warnings, "static activate");
	debug_object_init(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_INIT, ++fixups, ++warnings, "static init active");
	debug_object_free(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_NONE, fixups, warnings, "static free");

	/* the free-range path */
	debug_object_init(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_INIT, fixups, warnings, "range init");
	debug_object_activate(&obj, &descr_type_test);
	check_results(&obj, ODEBUG_STATE_ACTIVE, fixups, warnings, "range activate");
	debug_check_no_obj_freed(&obj, sizeof(obj));
	check_results(&obj, ODEBUG_STATE_NONE, ++fixups, ++warnings, "range check");

	cr_assert_eq(printed, 5, "the first 5 warnings are printed, %lu were", printed);
}

/* The same sequence under every pool policy (the pools must not change behaviour). */
Test(debugobjects_selftest, every_policy, .init = setup)
{
	static const char *const pol[] = { "base", "pcpu2x", "refill", "ewma" };

	for (unsigned int p = 0; p < 4; p++) {
		struct self_test o = { .static_init = 0 };
		struct kk_debug_objects_stats st;

		cr_assert_eq(kk_debug_objects_set_policy(pol[p]), 0);
		cr_assert_str_eq(kk_debug_objects_policy(), pol[p]);
		kk_debug_objects_reset();
		/* many objects, so that batches move between every pool */
		static struct self_test many[3000];
		for (int round = 0; round < 3; round++) {
			for (int i = 0; i < 3000; i++) {
				debug_object_init(&many[i], &descr_type_test);
				debug_object_activate(&many[i], &descr_type_test);
			}
			for (int i = 0; i < 3000; i++) {
				debug_object_deactivate(&many[i], &descr_type_test);
				debug_object_free(&many[i], &descr_type_test);
			}
			kk_debug_objects_run_worker();
		}
		debug_object_init_on_stack(&o, &descr_type_test);
		debug_object_activate(&o, &descr_type_test);
		debug_object_activate(&o, &descr_type_test);
		debug_object_deactivate(&o, &descr_type_test);
		destroy_object_on_stack(&o, &descr_type_test);
		kk_debug_objects_get_stats(&st);
		cr_assert_eq(st.warnings, 1, "%s", pol[p]);
		cr_assert_eq(st.fixups, 1, "%s", pol[p]);
		cr_assert_eq(st.stack_warnings, 0, "%s", pol[p]);
		cr_assert_eq(st.pool_used, 0, "%s: %lu trackers still in use", pol[p], st.pool_used);
		cr_assert_geq(st.objs_allocated, 3000, "%s", pol[p]);
		cr_assert_eq(st.objs_allocated - st.objs_freed,
			     st.pool_free + st.on_free_list, "%s: trackers unaccounted for", pol[p]);
	}
}

Test(debugobjects_selftest, unknown_policy_rejected)
{
	cr_assert_eq(kk_debug_objects_set_policy("fast"), -EINVAL);
	cr_assert_eq(kk_debug_objects_set_policy(NULL), -EINVAL);
	cr_assert_str_eq(kk_debug_objects_policy(), "ewma", "the default policy is ewma");
}
