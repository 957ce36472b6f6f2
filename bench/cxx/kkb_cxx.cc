// SPDX-License-Identifier: MIT
/*
 * kk-bench jump_label: a disabled site in C++ as real C++ is written, in a
 * -fPIC shared object (bench-mods/libkkbcxx.so, dlopen()ed by kk-bench):
 * a static key and a pr_debug in a member of a class template, reached
 * through an inline function.  Counted under callgrind next to the C site
 * of bench/jump_label.c, in the same run: both should be one NOP.
 */
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(kkb_cxx_key);

namespace {

template <class T> struct loop {
	__attribute__((noinline)) static T key_site(T n)
	{
		T s = 0;

		for (T i = 0; i < n; i++) {
			if (static_branch_unlikely(&kkb_cxx_key))
				s += 3;
			__asm__ volatile("" : "+r"(s));
		}
		return s;
	}

	__attribute__((noinline)) static T debug_site(T n)
	{
		T s = 0;

		for (T i = 0; i < n; i++) {
			pr_debug("kkb_cxx %ld\n", (long)i);
			__asm__ volatile("" : "+r"(s));
		}
		return s;
	}
};

inline long via_inline(long n, bool debug)
{
	return debug ? loop<long>::debug_site(n) : loop<long>::key_site(n);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) long kkb_cxx_template_key(long n)
{
	return via_inline(n, false);
}

extern "C" __attribute__((visibility("default"))) long kkb_cxx_template_debug(long n)
{
	return via_inline(n, true);
}
