// SPDX-License-Identifier: MIT
/*
 * The debug-objects self-test (the kernel's debug_objects_selftest() in
 * lib/debugobjects.c) as a module: one test type with fixups, a walk through
 * the state machine with the expected state, fixup count and warning count
 * after every step, the static-object path, the free check, and beyond the
 * kernel's self-test the on-stack annotation, assert_init and the active
 * state.  Written from the kernel's documented behaviour.
 *
 * Plumbing, not API: the kernel switches tracking on at boot
 * (debug_objects=on); here module_init switches it on.  The kernel's test
 * reads the tracker and the counters from inside lib/debugobjects.c; here
 * kk_debug_object_get() and kk_debug_objects_get_stats() read them.
 * Build with -DODEBUG_SELFTEST_BREAK to check that a wrong expectation fails.
 */
#define pr_fmt(fmt) "ODEBUG selftest: " fmt

#include <linux/module.h>
#include <linux/kernel.h>
#include <linux/printk.h>
#include <linux/debugobjects.h>

struct self_test {
	unsigned long dummy1[6];
	int static_init;
	unsigned long dummy2[3];
};

static const struct debug_obj_descr descr_type_test;

static bool is_static_object(void *addr)
{
	struct self_test *obj = addr;

	return obj->static_init;
}

/* fixup_init is called when: an active object is initialized */
static bool fixup_init(void *addr, enum debug_obj_state state)
{
	struct self_test *obj = addr;

	switch (state) {
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(obj, &descr_type_test);
		debug_object_init(obj, &descr_type_test);
		return true;
	default:
		return false;
	}
}

/* fixup_activate is called when: an active object is activated, or an
 * unknown non-static object is activated */
static bool fixup_activate(void *addr, enum debug_obj_state state)
{
	struct self_test *obj = addr;

	switch (state) {
	case ODEBUG_STATE_NOTAVAILABLE:
		return true;
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(obj, &descr_type_test);
		debug_object_activate(obj, &descr_type_test);
		return true;
	default:
		return false;
	}
}

/* fixup_destroy is called when: an active object is destroyed */
static bool fixup_destroy(void *addr, enum debug_obj_state state)
{
	struct self_test *obj = addr;

	switch (state) {
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(obj, &descr_type_test);
		debug_object_destroy(obj, &descr_type_test);
		return true;
	default:
		return false;
	}
}

/* fixup_free is called when: an active object is freed */
static bool fixup_free(void *addr, enum debug_obj_state state)
{
	struct self_test *obj = addr;

	switch (state) {
	case ODEBUG_STATE_ACTIVE:
		debug_object_deactivate(obj, &descr_type_test);
		debug_object_free(obj, &descr_type_test);
		return true;
	default:
		return false;
	}
}

/* fixup_assert_init is called when: an untracked object is asserted */
static int assert_fixups;

static bool fixup_assert_init(void *addr, enum debug_obj_state state)
{
	struct self_test *obj = addr;

	if (state != ODEBUG_STATE_NOTAVAILABLE)
		return false;
	assert_fixups++;
	debug_object_init(obj, &descr_type_test);
	return true;
}

static const struct debug_obj_descr descr_type_test = {
	.name			= "selftest",
	.is_static_object	= is_static_object,
	.fixup_init		= fixup_init,
	.fixup_activate		= fixup_activate,
	.fixup_destroy		= fixup_destroy,
	.fixup_free		= fixup_free,
	.fixup_assert_init	= fixup_assert_init,
};

static struct self_test obj = { .static_init = 0 };
static unsigned long base_fixups, base_warnings;

static int check_results(void *addr, enum debug_obj_state state, unsigned long fixups,
			 unsigned long warnings, int line)
{
	struct kk_debug_objects_stats st;
	struct debug_obj o;
	enum debug_obj_state now = ODEBUG_STATE_NONE;

	if (kk_debug_object_get(addr, &o)) {
		if (o.object != addr || o.descr != &descr_type_test) {
			pr_err("line %d: tracker of %p names %p/%p\n", line, addr, o.object,
			       (const void *)o.descr);
			return -EINVAL;
		}
		now = o.state;
	}
	if (now != state) {
		pr_err("line %d: state %d, expected %d\n", line, now, state);
		return -EINVAL;
	}
	kk_debug_objects_get_stats(&st);
	if (st.fixups - base_fixups != fixups) {
		pr_err("line %d: fixups %lu, expected %lu\n", line, st.fixups - base_fixups, fixups);
		return -EINVAL;
	}
	if (st.warnings - base_warnings != warnings) {
		pr_err("line %d: warnings %lu, expected %lu\n", line,
		       st.warnings - base_warnings, warnings);
		return -EINVAL;
	}
	return 0;
}

#define CHECK(state, fixups, warnings) do {					\
	if (check_results(&obj, state, fixups, warnings, __LINE__))		\
		return -EINVAL;							\
} while (0)

#ifdef ODEBUG_SELFTEST_BREAK
#define BROKEN 1
#else
#define BROKEN 0
#endif

static int selftest_states(void)
{
	unsigned long fixups = 0, warnings = 0;

	debug_object_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INIT, fixups, warnings);
	debug_object_activate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, warnings + BROKEN);
	debug_object_activate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_ACTIVE, ++fixups, ++warnings);
	debug_object_deactivate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INACTIVE, fixups, warnings);
	debug_object_destroy(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_DESTROYED, fixups, warnings);
	debug_object_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_DESTROYED, fixups, ++warnings);
	if (debug_object_activate(&obj, &descr_type_test) != -EINVAL)
		return -EINVAL;
	CHECK(ODEBUG_STATE_DESTROYED, fixups, ++warnings);
	debug_object_deactivate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_DESTROYED, fixups, ++warnings);
	debug_object_free(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_NONE, fixups, warnings);

	/* a statically initialized object needs no init */
	obj.static_init = 1;
	debug_object_activate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, warnings);
	debug_object_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INIT, ++fixups, ++warnings);
	debug_object_free(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_NONE, fixups, warnings);
	obj.static_init = 0;

	/* freeing memory that holds an active object */
	debug_object_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INIT, fixups, warnings);
	debug_object_activate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, warnings);
	debug_check_no_obj_freed(&obj, sizeof(obj));
	CHECK(ODEBUG_STATE_NONE, ++fixups, ++warnings);

	/* an active object destroyed is fixed up: deactivated, then destroyed */
	debug_object_init(&obj, &descr_type_test);
	debug_object_activate(&obj, &descr_type_test);
	debug_object_destroy(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_DESTROYED, ++fixups, ++warnings);
	debug_object_free(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_NONE, fixups, warnings);

	/* an active object freed is fixed up: deactivated, then freed */
	debug_object_init(&obj, &descr_type_test);
	debug_object_activate(&obj, &descr_type_test);
	debug_object_free(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_NONE, ++fixups, ++warnings);

	/* assert_init of an untracked object: NOTAVAILABLE goes to the fixup */
	debug_object_assert_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INIT, ++fixups, ++warnings);
	if (assert_fixups != 1)
		return -EINVAL;
	debug_object_assert_init(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INIT, fixups, warnings);

	/* the active state: 0 on activation, must be 0 again to deactivate */
	debug_object_activate(&obj, &descr_type_test);
	debug_object_active_state(&obj, &descr_type_test, 0, 1);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, warnings);
	debug_object_active_state(&obj, &descr_type_test, 0, 2);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, ++warnings);
	debug_object_deactivate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_ACTIVE, fixups, ++warnings);
	debug_object_active_state(&obj, &descr_type_test, 1, 0);
	debug_object_deactivate(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_INACTIVE, fixups, warnings);
	debug_object_free(&obj, &descr_type_test);
	CHECK(ODEBUG_STATE_NONE, fixups, warnings);
	return 0;
}

/* Objects on the stack are annotated: init_on_stack, destroy_object_on_stack. */
static int __attribute__((__noinline__)) selftest_on_stack(void)
{
	struct self_test onstack = { .static_init = 0 };
	struct kk_debug_objects_stats st;
	unsigned long before;

	kk_debug_objects_get_stats(&st);
	before = st.stack_warnings;
	base_fixups = st.fixups;
	base_warnings = st.warnings;
	debug_object_init_on_stack(&onstack, &descr_type_test);
	if (check_results(&onstack, ODEBUG_STATE_INIT, 0, 0, __LINE__))
		return -EINVAL;
	debug_object_activate(&onstack, &descr_type_test);
	debug_object_deactivate(&onstack, &descr_type_test);
	destroy_object_on_stack(&onstack, &descr_type_test);
	if (check_results(&onstack, ODEBUG_STATE_NONE, 0, 0, __LINE__))
		return -EINVAL;
	kk_debug_objects_get_stats(&st);
	if (st.stack_warnings != before) {
		pr_err("annotated on-stack object warned\n");
		return -EINVAL;
	}
	/* not annotated: "object is on stack, but not annotated" */
	debug_object_init(&onstack, &descr_type_test);
	kk_debug_objects_get_stats(&st);
	if (st.stack_warnings != before + 1) {
		pr_err("unannotated on-stack object: %lu stack warnings, expected %lu\n",
		       st.stack_warnings - before, 1ul);
		return -EINVAL;
	}
	debug_object_free(&onstack, &descr_type_test);
	/* a static object annotated as on-stack */
	debug_object_init_on_stack(&obj, &descr_type_test);
	kk_debug_objects_get_stats(&st);
	if (st.stack_warnings != before + 2) {
		pr_err("off-stack object annotated on-stack did not warn\n");
		return -EINVAL;
	}
	debug_object_free(&obj, &descr_type_test);
	return 0;
}

static int __init test_debugobjects_init(void)
{
	struct kk_debug_objects_stats st;

	debug_objects_early_init();
	debug_objects_mem_init();
	if (kk_debug_objects_enable())
		return -EINVAL;
	kk_debug_objects_get_stats(&st);
	base_fixups = st.fixups;
	base_warnings = st.warnings;
	if (selftest_states())
		return -EINVAL;
	if (selftest_on_stack())
		return -EINVAL;
	pr_info("selftest passed\n");
	return 0;
}

static void __exit test_debugobjects_exit(void)
{
	kk_debug_objects_disable();
}

module_init(test_debugobjects_init);
module_exit(test_debugobjects_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("debug objects self-test");
