/* SPDX-License-Identifier: MIT */
/*
 * A header-only C++ library with pr_debug() sites in an inline function, a
 * function template and a member of a class template.  The dialect test
 * includes it in the executable and in two shared objects: every copy the
 * linkers keep must show up as ONE site (one per template instantiation) and
 * flip wherever it runs.
 */
#ifndef KK_DYNAMIC_DEBUG_LIB_H
#define KK_DYNAMIC_DEBUG_LIB_H

#include <kernelkit/dynamic_debug.h>

namespace dynamic_debug_lib {

inline int hdr_inline(int x)
{
	pr_debug("dynamic_debug_lib:inline %d\n", x);
	return x + 1;
}

template <class T> T hdr_twice(T x)
{
	pr_debug("dynamic_debug_lib:twice %d\n", (int)x);
	return x * 2;
}

template <class T> struct box {
	T v;
	T get() const
	{
		pr_debug("dynamic_debug_lib:box %d\n", (int)v);
		return v;
	}
};

/* Everything above, once. */
inline int hdr_all(int x)
{
	box<int> b = { x };

	return hdr_inline(x) + hdr_twice(x) + b.get();
}

}	/* namespace dynamic_debug_lib */

#endif
