#!/bin/sh
# SPDX-License-Identifier: MIT
# Static keys in C++ programs built the ways C++ code is built:
#  - a site in an inline function and in a function template used by two
#    translation units: the linker keeps one copy of each (COMDAT), and the
#    jump-table entries of the dropped copies must go with them ("aw?"), or
#    the table would point into discarded code;
#  - sites in a C++ shared object (-fPIC) on a key defined in the program
#    and on one defined in the object, and an array of keys in the object;
#  - the program flips the keys and every site follows.
# With g++ and clang++, in the default and the KK_NO_JUMP_LABEL builds.
set -u
B=${KK_BUILD:?}
case "${KK_TEST_LABEL:-default}" in
fallback) flags="-DKK_NO_JUMP_LABEL" ;;
default) flags="" ;;
*) echo "skip: builds its own programs without the ${KK_TEST_LABEL} flags"; exit 77 ;;
esac
[ -f "$B/libkernelkit.so" ] || { echo "skip: not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-skcxx.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
src=$(pwd)
cd "$tmp" || exit 1

cat > h.h <<'H'
#include <kernelkit/jump_label.h>
DECLARE_STATIC_KEY_FALSE(prog_key);
DECLARE_STATIC_KEY_TRUE(obj_key);
DECLARE_STATIC_KEY_ARRAY_FALSE(obj_keys, 4);
__attribute__((__noinline__)) inline int hot(void) { return static_branch_unlikely(&prog_key) ? 1 : 0; }
template <int N> __attribute__((__noinline__)) int thot(void) { return static_branch_likely(&prog_key) ? N : 0; }
int a1(void);
int a2(void);
int obj_sites(void);
H
cat > a.cc <<'A'
#include "h.h"
DEFINE_STATIC_KEY_FALSE(prog_key);
int a1(void) { return hot() + thot<2>(); }
A
cat > b.cc <<'BB'
#include "h.h"
int a2(void) { return hot() + thot<2>(); }
BB
cat > obj.cc <<'O'
#include "h.h"
DEFINE_STATIC_KEY_TRUE(obj_key);
DEFINE_STATIC_KEY_ARRAY_FALSE(obj_keys, 4);
namespace {
int site_prog() { return static_branch_unlikely(&prog_key) ? 1 : 0; }
}
static int site_obj() { return static_branch_likely(&obj_key) ? 2 : 0; }
static int site_arr() { return static_branch_unlikely(&obj_keys[3]) ? 4 : 0; }
int obj_sites(void) { return site_prog() + site_obj() + site_arr(); }
O
cat > m.cc <<'M'
#include <cstdio>
#include "h.h"
#define CHECK(c) do { if (!(c)) { std::printf("check failed: %s\n", #c); return 1; } } while (0)
int main()
{
	CHECK(a1() == 0 && a2() == 0 && obj_sites() == 2);
#ifndef KK_NO_JUMP_LABEL
	/* this executable: one copy each of hot and thot<2> (not inlined)
	 * after COMDAT folding, so 2 entries, both in live code */
	CHECK(__stop_kk_jump_table - __start_kk_jump_table == 2);
#endif
	CHECK(static_branch_enable(&prog_key) == 0);
	CHECK(a1() == 3 && a2() == 3 && obj_sites() == 3);
	CHECK(static_branch_disable(&obj_key) == 0 && static_branch_enable(&obj_keys[3]) == 0);
	CHECK(obj_sites() == 5);
	CHECK(static_branch_disable(&prog_key) == 0);
	CHECK(a1() == 0 && a2() == 0 && obj_sites() == 4);
	CHECK(!static_key_enabled(&obj_keys[2]) && static_key_enabled(&obj_keys[3]));
	std::printf("ok\n");
	return 0;
}
M
fail=0
for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || { echo "SKIP: $cxx not checked: not installed"; continue; }
	common="-std=c++17 -O2 -Wall -Wextra -Werror -pedantic $flags -I$src/include"
	link="-L$B -lkernelkit -Wl,-rpath,$B"
	rm -f libobj.so m
	if ! $cxx $common -fPIC -shared -o libobj.so obj.cc $link > log 2>&1 ||
	   ! $cxx $common -o m m.cc a.cc b.cc -L. -lobj -Wl,-rpath,"$tmp" $link >> log 2>&1; then
		echo "FAIL: $cxx $flags: did not build:"
		head -n 20 log
		fail=1
		continue
	fi
	out=$(./m 2>&1)
	rc=$?
	echo "$cxx $flags: $out"
	[ "$rc" -eq 0 ] || fail=1
done
[ "$fail" -eq 0 ] && echo "ok"
exit $fail
