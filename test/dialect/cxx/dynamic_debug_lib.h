/* SPDX-License-Identifier: MIT */
/*
 * A header-only C++ library with pr_debug() sites in an inline function, a
 * function template and a member of a class template.  The dialect test
 * includes it in the executable and in two shared objects: every copy the
 * linkers keep must show up as ONE site (one per template instantiation) and
 * flip wherever it runs.
 */
#ifndef KK_DDLIB_H
#define KK_DDLIB_H

#include <kernelkit/dynamic_debug.h>

namespace ddlib {

inline int hdr_inline(int x)
{
	pr_debug("ddlib:inline %d\n", x);
	return x + 1;
}

template <class T> T hdr_twice(T x)
{
	pr_debug("ddlib:twice %d\n", (int)x);
	return x * 2;
}

template <class T> struct box {
	T v;
	T get() const
	{
		pr_debug("ddlib:box %d\n", (int)v);
		return v;
	}
};

/* Everything above, once. */
inline int hdr_all(int x)
{
	box<int> b = { x };

	return hdr_inline(x) + hdr_twice(x) + b.get();
}

}	/* namespace ddlib */

#endif
