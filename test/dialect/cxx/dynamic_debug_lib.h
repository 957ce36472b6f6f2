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

#if __cplusplus >= 201703L
/* A C++17 inline variable: every object that includes the header defines
 * the key, the dynamic linker makes them one. */
inline DEFINE_STATIC_KEY_FALSE(hdr_key);
#endif

/* Everything above, once; 1000 more while hdr_key is on. */
inline int hdr_all(int x)
{
	box<int> b = { x };
	int r = hdr_inline(x) + hdr_twice(x) + b.get();

#if __cplusplus >= 201703L
	if (static_branch_unlikely(&hdr_key))
		r += 1000;
#endif
	return r;
}

}	/* namespace dynamic_debug_lib */

#endif
