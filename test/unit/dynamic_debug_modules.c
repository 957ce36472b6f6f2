// SPDX-License-Identifier: MIT
/*
 * Sites in shared objects: module names (file name vs KK_MODNAME), dlopen and
 * dlclose, per-module load queries (modname.dyndbg=), classmaps and their
 * bitmask/level parameters applied as one batch.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug_util.h"
#include "kktest.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

static void *load(const char *name)
{
	char rel[128];
	void *h;

	snprintf(rel, sizeof(rel), "test/lib/lib%s.so", name);
	h = dlopen(kkt_build_path(rel), RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	return h;
}

static void *sym(void *h, const char *name)
{
	void *p = dlsym(h, name);

	cr_assert_not_null(p, "%s", name);
	return p;
}

Test(dynamic_debug_modules, module_names)
{
	void *h = load("dynamic_debug_mod"), *n = load("dynamic_debug_named");

	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_mod"), 3 + 14);
	cr_assert_eq(kk_dyndbg_count_sites("named_mod"), 2);
	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_named"), 0);
	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_modules"), 0);	/* this program has none */
	char *l = dynamic_debug_listing();

	cr_assert(strstr(l, "[dynamic_debug_mod]ddm_plain =_ \"ddm plain one %d\\n\""), "%s", l);
	cr_assert(strstr(l, "[named_mod]ddn_run =_ \"named one %d\\n\""), "%s", l);
	free(l);
	dlclose(n);
	dlclose(h);
}

Test(dynamic_debug_modules, dlclose_drops_sites)
{
	void *h = load("dynamic_debug_mod");

	cr_assert_eq(dynamic_debug_write("module dynamic_debug_mod +p", NULL), 0);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "p");
	dlclose(h);
	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_mod"), 0);
	char *l = dynamic_debug_listing();

	cr_assert_null(strstr(l, "dynamic_debug_mod"), "%s", l);
	free(l);
	/* a fresh load starts from the compiled state */
	h = load("dynamic_debug_mod");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "_");
	struct dynamic_debug_capture c;

	dynamic_debug_capture_start(&c);
	((void (*)(int))sym(h, "ddm_plain"))(1);
	cr_assert_eq(c.n, 0);
	dlclose(h);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_modules, load_queries_apply_at_every_dlopen)
{
	struct dynamic_debug_capture c;
	void *h;

	cr_assert_eq(kk_dyndbg_set_module_queries("dynamic_debug_mod", "func ddm_plain +p; format two -p"), 0);
	cr_assert_eq(kk_dyndbg_set_module_queries("dynamic_debug_mod", "bogus +p"), -EINVAL);
	h = load("dynamic_debug_mod");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain two"), "_");
	dynamic_debug_capture_start(&c);
	((void (*)(int))sym(h, "ddm_plain"))(5);
	cr_assert_str_eq(c.buf, "ddm plain one 5\nddm ratelimited 5\n");
	/* the module is implied: other modules are not touched */
	void *n = load("dynamic_debug_named");

	cr_assert_str_eq(dynamic_debug_flags_of("named one"), "_");
	cr_assert_eq(dynamic_debug_write("module dynamic_debug_mod -p", NULL), 0);
	dlclose(h);
	h = load("dynamic_debug_mod");		/* again at the next load */
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "p");
	dlclose(h);
	cr_assert_eq(kk_dyndbg_set_module_queries("dynamic_debug_mod", NULL), 0);
	h = load("dynamic_debug_mod");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "_");
	/* "" means +p, as a bare modname.dyndbg does */
	dlclose(h);
	cr_assert_eq(kk_dyndbg_set_module_queries("named_mod", ""), 0);
	dlclose(n);
	n = load("dynamic_debug_named");
	cr_assert_str_eq(dynamic_debug_flags_of("named one"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("named two"), "p");
	dlclose(n);
	kk_dyndbg_set_sink(NULL, NULL);
}

Test(dynamic_debug_modules, classes_change_only_when_named)
{
	void *h = load("dynamic_debug_mod");
	char *l, *r;
	long m, c;

	l = dynamic_debug_listing();
	cr_assert(strstr(l, "\"ddm kms %d\\n\" class:DDM_KMS\n"), "%s", l);
	cr_assert(strstr(l, "\"ddm level2 %d\\n\" class:DDM_L2\n"), "%s", l);
	cr_assert(strstr(l, "\"ddm unmapped class %d\\n\" class unknown, _id:40\n"), "%s", l);
	free(l);
	cr_assert_eq(dynamic_debug_write("module dynamic_debug_mod +p", &r), 0);
	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0);
	cr_assert_eq(m, 3, "%s", r);			/* only the class-less sites */
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm kms"), "_");
	cr_assert_eq(dynamic_debug_write("class DDM_KMS +p", &r), 0);
	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0);
	cr_assert_eq(m, 1, "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm kms"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm core"), "_");
	cr_assert_eq(dynamic_debug_write("module dynamic_debug_mod class DDM_L3 format level3 +p", &r), 0);
	cr_assert(strstr(r, "matched 1 changed 1"), "%s", r);
	free(r);
	cr_assert_eq(dynamic_debug_write("module other class DDM_KMS -p", &r), 0);
	cr_assert(strstr(r, "matched 0 changed 0"), "%s", r);
	free(r);
	/* globs are not class names */
	cr_assert_eq(dynamic_debug_write("class DDM_* +p", &r), 0);
	cr_assert(strstr(r, "matched 0 changed 0"), "%s", r);
	free(r);
	dlclose(h);
}

Test(dynamic_debug_modules, bitmask_param_is_one_batch)
{
	void *h = load("dynamic_debug_mod");
	const struct ddebug_class_param *p = sym(h, "ddm_debug_param");
	unsigned long *bits = sym(h, "ddm_debug");
	struct kk_jump_label_stats a, b;
	char v[32];

	kk_jump_label_get_stats(&a);
	cr_assert_eq(ddebug_classparam_set(p, 0x1ff), 9);
	kk_jump_label_get_stats(&b);
#ifndef KK_NO_JUMP_LABEL
	cr_assert_eq(b.batches - a.batches, 1, "9 classes, %llu batches", b.batches - a.batches);
	if (b.syncs != a.syncs)
		cr_assert_eq(b.syncs - a.syncs, KKT_SYNCS_PER_BATCH);
#endif
	cr_assert_eq(*bits, 0x1ff);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm core"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm dp"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level1"), "_");
	kk_param_get_dyndbg_classes(v, sizeof(v), p);
	cr_assert_str_eq(v, "0x1ff");
	/* only the changed bits are queried */
	cr_assert_eq(kk_param_set_dyndbg_classes("0x104", p), 0);
	cr_assert_eq(*bits, 0x104);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm kms"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm dp"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm core"), "_");
	cr_assert_eq(ddebug_classparam_set(p, 0x104), 0);
	/* bits beyond the map are ignored */
	cr_assert_eq(ddebug_classparam_set(p, 0xffff0000ul | 0x104), 0);
	cr_assert_eq(*bits, 0x104);
	cr_assert_eq(kk_param_set_dyndbg_classes("nonsense", p), -EINVAL);
	cr_assert_eq(kk_param_set_dyndbg_classes("-1", p), -EINVAL);
	/* as a control file */
	cr_assert_eq(kk_dyndbg_register_param("ddm.debug", p), 0);
	char *t, *r;
	size_t n;

	cr_assert_eq(kk_control_read("dynamic_debug/params/ddm.debug", &t, &n), 0);
	cr_assert_str_eq(t, "0x104\n");
	free(t);
	cr_assert_eq(kk_control_write("dynamic_debug/params/ddm.debug", "0", 1, &r), 0);
	free(r);
	cr_assert_eq(*bits, 0);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm kms"), "_");
	cr_assert_eq(kk_control_write("dynamic_debug/params/ddm.debug", "zz", 2, &r), -EINVAL);
	free(r);
	cr_assert_eq(kk_dyndbg_unregister_param("ddm.debug"), 0);
	dlclose(h);
}

Test(dynamic_debug_modules, level_param)
{
	void *h = load("dynamic_debug_mod");
	const struct ddebug_class_param *p = sym(h, "ddm_level_param");
	unsigned int *lvl = sym(h, "ddm_level");

	cr_assert_eq(ddebug_classparam_set(p, 2), 2);
	cr_assert_eq(*lvl, 2);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level1"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level2"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level3"), "_");
	cr_assert_eq(ddebug_classparam_set(p, 99), 2);	/* clamped to 4 */
	cr_assert_eq(*lvl, 4);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level4"), "p");
	cr_assert_eq(ddebug_classparam_set(p, 1), 3);
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level1"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm level2"), "_");
	char v[16];

	kk_param_get_dyndbg_classes(v, sizeof(v), p);
	cr_assert_str_eq(v, "1");
	dlclose(h);
}
