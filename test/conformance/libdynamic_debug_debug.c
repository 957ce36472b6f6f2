// SPDX-License-Identifier: MIT
/*
 * A second module for test_dynamic_debug: built with DEBUG, so its sites
 * start enabled, as a kernel module's do.  KBUILD_MODNAME is "dynamic_debug_debug".
 */
#define DEBUG
#include <linux/module.h>

void dynamic_debug_debug_hello(int n)
{
	pr_debug("dynamic_debug_debug hello %d\n", n);
}
