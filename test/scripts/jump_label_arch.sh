#!/bin/sh
# SPDX-License-Identifier: MIT
# The jump-label site of each architecture, as compilers emit it:
#  1. objdump: a disabled site is one NOP at the address its kk_jump_table
#     entry names: 0f 1f 44 00 00 on x86_64, d503201f on aarch64; a site
#     that starts enabled is one jmp / b.  With gcc and clang, as PIC, PIE
#     and non-PIC code.
#  2. the aarch64 header compiles warning-free (-Wall -Wextra -Werror
#     -pedantic) in every C and C++ standard, with aarch64-linux-gnu-gcc/g++
#     and clang --target=aarch64-linux-gnu, as PIC, PIE and non-PIC code:
#     test/dialect/jump_label.c, every macro family, compiled to objects;
#     and sites in C++ inline functions, templates and lambdas as -fPIC code.
# x86_64 is checked on the host; aarch64 with the cross compilers that
# make check-aarch64 installs (skipped, and said, where they are missing).
set -u
case "${KK_TEST_LABEL:-default}" in
default) ;;
*) echo "skip: compiles its own objects; checked in the default build"; exit 77 ;;
esac
src=$(pwd)
tmp=$(mktemp -d /tmp/kk-jlarch.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0 checked=0

cat > "$tmp/site.c" <<'C'
#include <kernelkit/jump_label.h>
DEFINE_STATIC_KEY_FALSE(od_off);
DEFINE_STATIC_KEY_TRUE(od_on);
int od_slow(int);
int od_site_off(int x) { if (static_branch_unlikely(&od_off)) return od_slow(x); return x; }
int od_site_on(int x) { if (static_branch_unlikely(&od_on)) return od_slow(x); return x + 1; }
C

# The offset in .text of kk_jump_table entry N's site (its first PREL32).
site_offset() {	# objdump object N
	"$1" -r -j kk_jump_table "$2" | awk '$2 ~ /PREL32|PC32/ {print $3}' |
		sed -n "$(($3 * 2 + 1))p" | sed -e 's/^\.text//' -e 's/^+0x//' -e 's/^$/0/'
}

# The instruction line at .text offset OFF (hex, no 0x).
insn_at() {	# objdump object off
	"$1" -d -j .text "$2" | awk -v want="$(printf '%x:' $((0x$3)))" '$1 == want { print; exit }'
}

# check_site label objdump object nop-regex jump-regex
check_site() {
	off0=$(site_offset "$2" "$3" 0) off1=$(site_offset "$2" "$3" 1)
	i0=$(insn_at "$2" "$3" "$off0") i1=$(insn_at "$2" "$3" "$off1")
	checked=$((checked + 1))
	if ! echo "$i0" | grep -Eq "$4"; then
		echo "FAIL $1: disabled site at .text+0x$off0 is not the NOP: '$i0'"; fail=1
	elif ! echo "$i1" | grep -Eq "$5"; then
		echo "FAIL $1: enabled site at .text+0x$off1 is not the jump: '$i1'"; fail=1
	else
		echo "ok   $1: $(echo "$i0" | sed 's/^ *//') | $(echo "$i1" | sed 's/^ *//')"
	fi
}

have() { command -v "$1" >/dev/null 2>&1; }

# 1. objdump, per arch and compiler
if [ "$(uname -m)" = x86_64 ]; then
	for cc in gcc clang; do
		have $cc || continue
		for pic in -fPIC -fPIE -fno-pic; do
			o=$tmp/x86-$cc$pic.o
			$cc -O2 $pic -I"$src/include" -c -o "$o" "$tmp/site.c" || { fail=1; continue; }
			check_site "x86_64 $cc $pic" objdump "$o" \
				'0f 1f 44 00 00[[:space:]]+nopl' 'e9 .. .. .. ..[[:space:]]+jmp'
		done
	done
fi
a64_gcc=aarch64-linux-gnu-gcc a64_gxx=aarch64-linux-gnu-g++ a64_od=aarch64-linux-gnu-objdump
if have $a64_gcc && have $a64_od; then
	for cc in "$a64_gcc" "clang --target=aarch64-linux-gnu"; do
		have ${cc%% *} || continue
		for pic in -fPIC -fPIE -fno-pic; do
			o=$tmp/a64-$(echo "$cc" | tr ' =' '__')$pic.o
			$cc -O2 $pic -I"$src/include" -c -o "$o" "$tmp/site.c" || { fail=1; continue; }
			check_site "aarch64 $cc $pic" $a64_od "$o" 'd503201f[[:space:]]+nop' '1[4-7]......[[:space:]]+b[[:space:]]'
		done
	done
else
	echo "SKIP: aarch64 not checked: no aarch64 cross compiler ($a64_gcc)"
fi

# 2. the aarch64 header in every dialect
n=0 bad=0
if have $a64_gcc && have $a64_gxx; then
	flags="-Wall -Wextra -Werror -pedantic -O2 -I$src/include -I$src/test/dialect"
	for pic in -fPIC -fPIE -fno-pic; do
		for std in c99 c11 c17 c2x gnu11; do
			for cc in "$a64_gcc" "clang --target=aarch64-linux-gnu"; do
				have ${cc%% *} || continue
				n=$((n + 1))
				$cc -x c -std=$std $flags $pic -c -o "$tmp/d.o" \
					"$src/test/dialect/jump_label.c" 2>"$tmp/err" ||
					{ bad=$((bad + 1)); echo "FAIL aarch64 $cc -std=$std $pic:"; head -5 "$tmp/err"; }
			done
		done
		for std in c++11 c++14 c++17 c++20 c++2b; do
			for cxx in "$a64_gxx" "clang++ --target=aarch64-linux-gnu"; do
				have ${cxx%% *} || continue
				n=$((n + 1))
				$cxx -x c++ -std=$std $flags $pic -c -o "$tmp/d.o" \
					"$src/test/dialect/jump_label.c" 2>"$tmp/err" ||
					{ bad=$((bad + 1)); echo "FAIL aarch64 $cxx -std=$std $pic:"; head -5 "$tmp/err"; }
			done
		done
	done
	# Sites in C++ inline functions, templates and lambdas in -fPIC code
	# (issue 23): the key is an interposable symbol there.
	cat > "$tmp/pic.cc" <<'CC'
#include <kernelkit/jump_label.h>
DECLARE_STATIC_KEY_FALSE(hk);
inline int hi(int x) { if (static_branch_unlikely(&hk)) return 2 * x; return x; }
template <class T> T ht(T x) { if (static_branch_unlikely(&hk)) return 2 * x; return x; }
template <class T> struct hs { T get(T x) const { return static_branch_likely(&hk) ? x : -x; } };
int probe(int x) { auto l = [](int y) { return static_branch_likely(&hk) ? y : -y; }; return hi(x) + ht(x) + l(x) + hs<int>().get(x); }
CC
	for std in c++11 c++14 c++17 c++20 c++2b; do
		for cxx in "$a64_gxx" "clang++ --target=aarch64-linux-gnu"; do
			have ${cxx%% *} || continue
			for o in -O0 -O2; do
				n=$((n + 1))
				$cxx -std=$std $flags $o -fPIC -c -o "$tmp/pic.o" "$tmp/pic.cc" 2>"$tmp/err" ||
					{ bad=$((bad + 1)); echo "FAIL aarch64 $cxx -std=$std $o -fPIC (C++ inline sites):"; head -5 "$tmp/err"; }
			done
		done
	done
	echo "aarch64 header: $n compilations, $bad failed"
	[ "$bad" -eq 0 ] || fail=1
else
	echo "SKIP: the aarch64 header matrix not checked: no $a64_gcc/$a64_gxx"
fi

[ "$checked" -gt 0 ] || { echo "skip: no compiler to check"; exit 77; }
[ "$fail" -eq 0 ] && echo "jump_label_arch: ok"
exit "$fail"
