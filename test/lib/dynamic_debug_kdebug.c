// SPDX-License-Identifier: MIT
/*
 * A kernel-style "module" for test/unit/dynamic_debug_kernel.c: built with DEBUG
 * (its sites start enabled, as in the kernel) and KBUILD_MODNAME (the module
 * name of its sites), with hex dumps whose format is their prefix.  The three
 * sites of kdebug_run() are on consecutive lines: the listing must show them
 * in ascending line order.
 */
#define DEBUG
#define KBUILD_MODNAME "kdebug_mod"
#include <stddef.h>
#include <kernelkit/dynamic_debug.h>

void kdebug_run(int v)
{
	pr_debug("kdebug first %d\n", v);
	pr_debug("kdebug second %d\n", v);
	pr_debug("kdebug third %d\n", v);
}

void kdebug_hex(const char *var_prefix, const void *buf, size_t len)
{
	print_hex_dump_debug("kdhex: ", DUMP_PREFIX_OFFSET, 16, 1, buf, len, 1);
	print_hex_dump_bytes(var_prefix, DUMP_PREFIX_NONE, buf, len);
}
