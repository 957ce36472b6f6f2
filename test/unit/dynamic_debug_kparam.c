// SPDX-License-Identifier: MIT
/*
 * Classmap parameters through the kernel's interface: struct kernel_param
 * with param_ops_dyndbg_classes, names written to the _NAMES types, served
 * as control files by kk_module_param_register(), and modname.dyndbg=.
 */
#define KBUILD_MODNAME "kparam_mod"
#include <criterion/criterion.h>

#include "dynamic_debug_util.h"

DECLARE_DYNDBG_CLASSMAP(kp_dnames, DD_CLASS_TYPE_DISJOINT_NAMES, 0, "LOW", "MID", "HI");
DECLARE_DYNDBG_CLASSMAP(kp_lnames, DD_CLASS_TYPE_LEVEL_NAMES, 4, "L0", "L1", "L2", "L3");

static unsigned long dn_bits;
static unsigned int ln_lvl;
static struct ddebug_class_param dn_dcp = { .bits = &dn_bits, .flags = "p", .map = &kp_dnames };
static struct ddebug_class_param ln_dcp = { .lvl = &ln_lvl, .flags = "p", .map = &kp_lnames };
static const struct kernel_param dn_kp = {
	.name = "dnames", .ops = &param_ops_dyndbg_classes, .perm = 0600, .arg = &dn_dcp,
};
static const struct kernel_param ln_kp = {
	.name = "lnames", .ops = &param_ops_dyndbg_classes, .perm = 0444, .arg = &ln_dcp,
};

static void __attribute__((noinline)) sites(void)
{
	pr_debug_cls(0, "kp low\n");
	pr_debug_cls(1, "kp mid\n");
	pr_debug_cls(2, "kp hi\n");
	pr_debug_cls(4, "kp L0\n");
	pr_debug_cls(5, "kp L1\n");
	pr_debug_cls(6, "kp L2\n");
	pr_debug_cls(7, "kp L3\n");
	pr_debug("kp plain\n");
}

Test(dynamic_debug_kparam, enum_values)
{
	cr_assert_eq(DD_CLASS_TYPE_DISJOINT_BITS, 0);
	cr_assert_eq(DD_CLASS_TYPE_LEVEL_NUM, 1);
	cr_assert_eq(DD_CLASS_TYPE_DISJOINT_NAMES, 2);
	cr_assert_eq(DD_CLASS_TYPE_LEVEL_NAMES, 3);
	cr_assert_eq(_DPRINTK_FLAGS_DEFAULT, 0);
}

Test(dynamic_debug_kparam, disjoint_names)
{
	char buf[KK_PARAM_BUFSIZE];
	struct dynamic_debug_capture c;

	cr_assert_eq(param_set_dyndbg_classes("+MID,HI\n", &dn_kp), 0);
	cr_assert_eq(dn_bits, 0x6);
	cr_assert_str_eq(dynamic_debug_flags_of("kp mid"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp hi"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp low"), "_");
	cr_assert_eq(param_get_dyndbg_classes(buf, &dn_kp), 4);
	cr_assert_str_eq(buf, "0x6\n");
	dynamic_debug_capture_start(&c);
	sites();
	cr_assert_eq(c.n, 2, "%s", c.buf);
	kk_dyndbg_set_sink(NULL, NULL);
	/* an unknown name, or a number, changes nothing */
	cr_assert_eq(param_set_dyndbg_classes("-MID,NOPE", &dn_kp), -EINVAL);
	cr_assert_eq(param_set_dyndbg_classes("1", &dn_kp), -EINVAL);
	cr_assert_eq(dn_bits, 0x6);
	cr_assert_str_eq(dynamic_debug_flags_of("kp mid"), "p");
	cr_assert_eq(param_set_dyndbg_classes("-MID,-HI,+LOW", &dn_kp), 0);
	cr_assert_eq(dn_bits, 0x1);
	cr_assert_str_eq(dynamic_debug_flags_of("kp low"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp mid"), "_");
	cr_assert_eq(param_set_dyndbg_classes("-LOW", &dn_kp), 0);
}

Test(dynamic_debug_kparam, level_names)
{
	char buf[KK_PARAM_BUFSIZE];

	cr_assert_eq(param_ops_dyndbg_classes.set("L2", &ln_kp), 0);
	cr_assert_eq(ln_lvl, 3);
	cr_assert_str_eq(dynamic_debug_flags_of("kp L0"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp L2"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp L3"), "_");
	param_ops_dyndbg_classes.get(buf, &ln_kp);
	cr_assert_str_eq(buf, "3\n");
	cr_assert_eq(param_set_dyndbg_classes("-L2", &ln_kp), 0);
	cr_assert_eq(ln_lvl, 2);
	cr_assert_str_eq(dynamic_debug_flags_of("kp L1"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kp L2"), "_");
	cr_assert_eq(param_set_dyndbg_classes("-L0", &ln_kp), 0);
	cr_assert_eq(ln_lvl, 0);
	cr_assert_str_eq(dynamic_debug_flags_of("kp L0"), "_");
}

Test(dynamic_debug_kparam, served_as_control_files)
{
	char *t = NULL, *r = NULL;
	size_t n;

	cr_assert_eq(kk_module_param_register("kparam_mod", &dn_kp), 0);
	cr_assert_eq(kk_module_param_register("kparam_mod", &ln_kp), 0);
	cr_assert_eq(kk_control_write("dynamic_debug/params/kparam_mod.dnames", "HI", 2, &r), 0);
	free(r);
	cr_assert_eq(dn_bits, 0x4);
	cr_assert_eq(kk_control_read("dynamic_debug/params/kparam_mod.dnames", &t, &n), 0);
	cr_assert_str_eq(t, "0x4\n");
	free(t);
	cr_assert_eq(kk_control_write("dynamic_debug/params/kparam_mod.dnames", "XX", 2, &r),
		     -EINVAL);
	cr_assert(strstr(r, "CLASS_NAME"), "%s", r);
	free(r);
	/* 0444: read-only */
	cr_assert_eq(kk_control_write("dynamic_debug/params/kparam_mod.lnames", "L1", 2, &r),
		     -EPERM);
	free(r);
	cr_assert_eq(ln_lvl, 0);
	cr_assert_eq(kk_module_param_unregister("kparam_mod", &dn_kp), 0);
	cr_assert_eq(kk_module_param_unregister("kparam_mod", &ln_kp), 0);
	cr_assert_neq(kk_control_read("dynamic_debug/params/kparam_mod.dnames", &t, &n), 0);
	cr_assert_eq(param_set_dyndbg_classes("-HI", &dn_kp), 0);
}

Test(dynamic_debug_kparam, module_dyndbg_param)
{
	char p1[] = "dyndbg", p2[] = "kparam_mod.dyndbg", p3[] = "debug", v[] = "format plain +p";

	cr_assert_eq(ddebug_dyndbg_module_param_cb(p3, v, "kparam_mod"), -ENOENT);
	cr_assert_eq(ddebug_dyndbg_module_param_cb(p1, v, "kparam_mod"), 0);
	cr_assert_str_eq(dynamic_debug_flags_of("kp plain"), "p");
	cr_assert_eq(ddebug_dyndbg_module_param_cb(p2, NULL, "other_mod"), 0);
	cr_assert_str_eq(dynamic_debug_flags_of("kp low"), "_");
	cr_assert_eq(dynamic_debug_exec_queries("-p", "kparam_mod") >= 1, 1);
	cr_assert_str_eq(dynamic_debug_flags_of("kp plain"), "_");
}
