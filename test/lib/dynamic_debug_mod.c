// SPDX-License-Identifier: MIT
/*
 * A "module" for the dynamic-debug tests: plain sites (module name from the
 * file name: libdynamic_debug_mod.so -> dynamic_debug_mod), and classed sites over two
 * classmaps with their parameters.
 */
#include <kernelkit/dynamic_debug.h>

DECLARE_DYNDBG_CLASSMAP(ddm_bits_map, DD_CLASS_TYPE_DISJOINT_BITS, 0,
			"DDM_CORE", "DDM_DRIVER", "DDM_KMS", "DDM_PRIME", "DDM_ATOMIC",
			"DDM_VBL", "DDM_STATE", "DDM_LEASE", "DDM_DP");
DECLARE_DYNDBG_CLASSMAP(ddm_level_map, DD_CLASS_TYPE_LEVEL_NUM, 10,
			"DDM_L1", "DDM_L2", "DDM_L3", "DDM_L4");

unsigned long ddm_debug;
unsigned int ddm_level;
const struct ddebug_class_param ddm_debug_param = {
	.bits = &ddm_debug, .flags = "p", .map = &ddm_bits_map,
};
const struct ddebug_class_param ddm_level_param = {
	.lvl = &ddm_level, .flags = "p", .map = &ddm_level_map,
};

void ddm_plain(int v)
{
	pr_debug("ddm plain one %d\n", v);
	pr_debug("ddm plain two %d\n", v);
	pr_debug_ratelimited("ddm ratelimited %d\n", v);
}

void ddm_classed(int v)
{
	pr_debug_cls(0, "ddm core %d\n", v);
	pr_debug_cls(1, "ddm driver %d\n", v);
	pr_debug_cls(2, "ddm kms %d\n", v);
	pr_debug_cls(3, "ddm prime %d\n", v);
	pr_debug_cls(4, "ddm atomic %d\n", v);
	pr_debug_cls(5, "ddm vbl %d\n", v);
	pr_debug_cls(6, "ddm state %d\n", v);
	pr_debug_cls(7, "ddm lease %d\n", v);
	pr_debug_cls(8, "ddm dp %d\n", v);
	pr_debug_cls(10, "ddm level1 %d\n", v);
	pr_debug_cls(11, "ddm level2 %d\n", v);
	pr_debug_cls(12, "ddm level3 %d\n", v);
	pr_debug_cls(13, "ddm level4 %d\n", v);
	pr_debug_cls(40, "ddm unmapped class %d\n", v);
}
