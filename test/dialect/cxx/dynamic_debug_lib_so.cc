/* SPDX-License-Identifier: MIT */
/*
 * One of the two shared objects of the C++ dynamic-debug test (built twice,
 * with DDLIB_SO_FN = ddlib_so_a and ddlib_so_b): the header-only library's
 * sites, plus one site of its own in a static function.
 */
#include "ddlib.h"

static int so_own(int x)
{
	pr_debug("so:own %d\n", x);
	return x;
}

extern "C" int DDLIB_SO_FN(int x);

extern "C" int DDLIB_SO_FN(int x)
{
	return ddlib::hdr_all(x) + so_own(x);
}
