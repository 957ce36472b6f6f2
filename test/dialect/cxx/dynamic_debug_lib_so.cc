/* SPDX-License-Identifier: MIT */
/*
 * One of the two shared objects of the C++ dynamic-debug test (built twice,
 * with DYNAMIC_DEBUG_LIB_SO_FN = dynamic_debug_lib_so_a and dynamic_debug_lib_so_b): the header-only library's
 * sites, plus one site of its own in a static function.
 */
#include "dynamic_debug_lib.h"

static int so_own(int x)
{
	pr_debug("so:own %d\n", x);
	return x;
}

extern "C" int DYNAMIC_DEBUG_LIB_SO_FN(int x);

extern "C" int DYNAMIC_DEBUG_LIB_SO_FN(int x)
{
	return dynamic_debug_lib::hdr_all(x) + so_own(x);
}
