#!/bin/sh
# SPDX-License-Identifier: MIT
# Static keys in a header-only C++ library used from -fPIC shared objects
# (issue 23): every C++ shape of site (inline function, function template,
# class template member, member function of a class, lambda, named and
# unnamed namespaces) in a header that two shared objects and the
# executable include, each from two translation units.  The key is defined
# in one shared object (libkey.so) and declared extern in the header.
# With g++ and clang++, C++11 to C++2b, -Wall -Wextra -Werror -pedantic:
#  - it builds (the asm takes the key as a symbol, no interposable per-site
#    slot: before, g++ said "asm operand 0 probably does not match
#    constraints" and clang++ "invalid operand for inline asm constraint 'i'");
#  - each object registers one entry per site of the copies the linker kept
#    (COMDAT: the entries of dropped copies go with them) and the library's
#    site count is the sum, also in the static_keys listing (what
#    `kkctl read static_keys` prints);
#  - flipping the key flips every copy, called through each object;
#  - each disabled site is the 5-byte NOP (in the running process and, for
#    libkey.so, in objdump of the file), each enabled one a jmp.
# Also C (c99..c2x, gcc and clang): a key declared in a header, used by
# static inline and C99 inline functions in a -fPIC shared object.
set -u
B=${KK_BUILD:?}
case "${KK_TEST_LABEL:-default}" in
default) ;;
*) echo "skip: builds its own programs; checked in the default build"; exit 77 ;;
esac
[ "$(uname -m)" = x86_64 ] || { echo "skip: the byte checks are x86_64's"; exit 77; }
[ -f "$B/libkernelkit.so" ] || { echo "skip: not built"; exit 77; }
src=$(pwd)
tmp=$(mktemp -d /tmp/kk-skpic.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 1

# The header-only library.  noinline keeps one out-of-line copy of each
# vague-linkage function per object, so that the linker has duplicates to
# fold; the argument comes from the caller so that no copy is cloned for a
# constant.  Sites per object: hot, thot<1>, thot<2>, box<int>::get,
# meter::on, ns::nhot, the lambda (in lam's copy or its own) = 7 COMDAT
# sites, plus one anon per translation unit (internal: never folded).
cat > lib.h <<'H'
#include <kernelkit/jump_label.h>
DECLARE_STATIC_KEY_FALSE(hk);
#define NI __attribute__((__noinline__))
NI inline int hot(int x) { if (static_branch_unlikely(&hk)) return 2 * x; return x; }
template <int N> NI int thot(int x) { if (static_branch_unlikely(&hk)) return N * x; return x; }
template <class T> struct box {
	T v;
	NI T get() const { return static_branch_unlikely(&hk) ? 2 * v : v; }
};
struct meter {
	NI int on() const { return static_branch_likely(&hk) ? 1 : 0; }
};
NI inline int lam(int x)
{
	auto l = [](int y) { return static_branch_likely(&hk) ? -y : y; };
	return l(x);
}
namespace ns {
NI inline int nhot(int x) { return static_branch_unlikely(&hk) ? 2 * x : x; }
}
namespace {
NI int anon(int x) { return static_branch_unlikely(&hk) ? 2 * x : x; }
}
/* x = 1: 1+1+1+1+0+1+1+1 = 7 with the key off; 2+1+2+2+1-1+2+2 = 11 on */
inline int all(int x)
{
	box<int> b = { x };
	return hot(x) + thot<1>(x) + thot<2>(x) + b.get() + meter().on() + lam(x) + ns::nhot(x) + anon(x);
}
/* every object: its own table, for the checks */
#define OBJ_TABLE(name)								\
	extern "C" const struct jump_entry *name##_tab(const struct jump_entry **stop) \
	{ *stop = __stop_kk_jump_table; return __start_kk_jump_table; }
H
for o in key b m; do
	cat > ${o}1.cc <<C
#include "lib.h"
int ${o}_tu1(int x) { return all(x); }
C
	cat > ${o}2.cc <<C
#include "lib.h"
int ${o}_tu2(int x) { return all(x); }
OBJ_TABLE($o)
C
done
echo 'DEFINE_STATIC_KEY_FALSE(hk);' >> key1.cc

cat > main.cc <<'M'
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <kernelkit/control.h>
#include "lib.h"
int key_tu1(int); int key_tu2(int); int b_tu1(int); int b_tu2(int);
int m_tu1(int); int m_tu2(int);
extern "C" const struct jump_entry *key_tab(const struct jump_entry **);
extern "C" const struct jump_entry *b_tab(const struct jump_entry **);
extern "C" const struct jump_entry *m_tab(const struct jump_entry **);
static int fails;
#define CHECK(c, ...) do { if (!(c)) { std::printf("check failed: %s: ", #c); \
	std::printf(__VA_ARGS__); std::printf("\n"); fails++; } } while (0)
static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

/* Every entry of one object: its key is hk, its site is the NOP exactly
 * when the key does not make it jump, the jmp to its target otherwise. */
static void check_table(const char *obj, const struct jump_entry *e,
			const struct jump_entry *stop, bool on)
{
	for (; e < stop; e++) {
		const unsigned char *code = (const unsigned char *)&e->code + e->code;
		const unsigned char *target = (const unsigned char *)&e->target + e->target;
		bool branch = e->key & 1, jump = on ^ branch;
		int rel;

		CHECK(e->key & 2 && (struct static_key *)(e->key & ~3LL) == &hk.key,
		      "%s: entry key %#llx, hk at %p", obj, (unsigned long long)e->key, (void *)&hk);
		std::memcpy(&rel, code + 1, 4);
		if (jump)
			CHECK(code[0] == 0xe9 && code + 5 + rel == target, "%s: site %p", obj,
			      (const void *)code);
		else
			CHECK(!std::memcmp(code, nop5, 5), "%s: site %p", obj, (const void *)code);
	}
}

int main(int argc, char **argv)
{
	const struct jump_entry *t[3], *stop[3];
	const char *name[3] = { "libkey.so", "libb.so", "main" };
	long want = argc > 1 ? std::atol(argv[1]) : -1, total = 0;
	struct kk_jump_label_stats st;

	t[0] = key_tab(&stop[0]);
	t[1] = b_tab(&stop[1]);
	t[2] = m_tab(&stop[2]);
	for (int i = 0; i < 3; i++) {
		std::printf("%s: %ld entries\n", name[i], (long)(stop[i] - t[i]));
		CHECK(stop[i] - t[i] == want, "%s: want %ld entries", name[i], want);
		total += stop[i] - t[i];
	}
	kk_jump_label_get_stats(&st);
	std::printf("registered: %llu sites in %llu objects\n", st.sites, st.objects);
	CHECK(st.sites == (unsigned long long)total && st.objects == 3, "stats");
	/* what `kkctl read static_keys` prints: name enabled count sites module */
	char *txt = NULL, want_line[64];
	std::snprintf(want_line, sizeof(want_line), "\nhk 0 0 %ld ", total);
	CHECK(kk_control_read("static_keys", &txt, NULL) == 0 && txt &&
	      std::strstr(txt, want_line), "static_keys listing wants '%s':\n%s", want_line + 1,
	      txt ? txt : "(none)");
	if (txt)
		std::printf("listing: %s", std::strstr(txt, "\nhk ") ? std::strstr(txt, "\nhk ") + 1 : "?\n");
	std::free(txt);
	for (int on = 0; on < 2; on++) {
		int v = on ? 11 : 7;
		CHECK(key_tu1(1) == v && key_tu2(1) == v, "libkey.so, key %d", on);
		CHECK(b_tu1(1) == v && b_tu2(1) == v, "libb.so, key %d", on);
		CHECK(m_tu1(1) == v && m_tu2(1) == v, "main, key %d", on);
		for (int i = 0; i < 3; i++)
			check_table(name[i], t[i], stop[i], on);
		if (!on)
			CHECK(static_branch_enable(&hk) == 0, "%s", kk_jump_label_strerror());
	}
	CHECK(static_branch_disable(&hk) == 0, "%s", kk_jump_label_strerror());
	CHECK(key_tu1(1) == 7 && b_tu2(1) == 7 && m_tu1(1) == 7, "off again");
	for (int i = 0; i < 3; i++)
		check_table(name[i], t[i], stop[i], false);
	std::printf(fails ? "FAILED\n" : "ok\n");
	return fails != 0;
}
M

# The entries an object must have: one per site of the copies it keeps,
# counted from its symbol table, independently of kk_jump_table: one per
# kept function with a site (W: a folded vague-linkage copy; t: an anon
# copy, or a local clone gcc made, such as meter::on [clone .isra.0], one
# per unit), and one for the lambda, which is in lam's copy or in its own.
# At least 7 + 2.
expect_entries() {	# object
	nm -C "$1" | awk '
		/ [WTt] / && /hot\(int\)|thot<[12]>\(int\)|box<int>::get|meter::on|nhot\(int\)|anonymous namespace\)::anon/ { n++ }
		END { print n + 1 }'
}

fail=0 n=0
link="-L$B -lkernelkit -Wl,-rpath,$B"
for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || { echo "SKIP: $cxx (C++ standards) not checked: not installed"; continue; }
	for std in c++11 c++14 c++17 c++20 c++2b; do
		n=$((n + 1))
		f="-std=$std -O2 -Wall -Wextra -Werror -pedantic -I$src/include"
		rm -f libkey.so libb.so m
		if ! { $cxx $f -fPIC -shared -o libkey.so key1.cc key2.cc $link &&
		       $cxx $f -fPIC -shared -o libb.so b1.cc b2.cc -L. -lkey $link &&
		       $cxx $f -o m main.cc m1.cc m2.cc -L. -lkey -lb -Wl,-rpath,"$tmp" $link; } > log 2>&1; then
			echo "FAIL: $cxx -std=$std: did not build:"
			grep -m3 -E 'error|warning' log
			fail=1
			continue
		fi
		ek=$(expect_entries libkey.so) eb=$(expect_entries libb.so) em=$(expect_entries m)
		if [ "$ek" != "$eb" ] || [ "$ek" != "$em" ] || [ "$ek" -lt 9 ]; then
			echo "FAIL: $cxx -std=$std: kept copies differ: libkey.so $ek, libb.so $eb, m $em"
			fail=1
			continue
		fi
		if ! ./m "$ek" > out 2>&1; then
			echo "FAIL: $cxx -std=$std:"; cat out; fail=1; continue
		fi
		echo "$cxx -std=$std: $(tr '\n' ' ' < out)"
	done
	# the file itself: each entry of libkey.so names a 5-byte NOP or a jmp
	[ -f libkey.so ] || continue
	tab=$(readelf -SW libkey.so | awk '$2 == "kk_jump_table" { print $4, $6 }')
	objcopy -O binary --only-section=kk_jump_table libkey.so tab.bin
	nops=0 jmps=0 other=0
	for a in $(od -An -v -t d4 -w16 tab.bin | awk -v base=$((0x${tab% *})) \
			'{ printf "%d\n", base + (NR - 1) * 16 + $1 }'); do
		line=$(objdump -d --start-address=$a --stop-address=$((a + 5)) libkey.so | tail -n 1)
		case "$line" in
		*"0f 1f 44 00 00"*nopl*) nops=$((nops + 1)) ;;
		*"e9 "*jmp*) jmps=$((jmps + 1)) ;;
		*) other=$((other + 1)); echo "FAIL: $cxx: libkey.so site at $a: $line" ;;
		esac
	done
	echo "$cxx: objdump libkey.so: $nops NOP sites, $jmps jmp sites, $other other"
	[ "$other" -eq 0 ] && [ "$nops" -gt 0 ] || fail=1
done
[ "$n" -gt 0 ] || { echo "skip: no C++ compiler"; exit 77; }

# C: a key declared in a header, defined in another object, used by static
# inline and C99 inline functions in a -fPIC shared object.
cat > c.h <<'H'
#include <kernelkit/jump_label.h>
DECLARE_STATIC_KEY_FALSE(ck);
static inline int c_static(int x) { return static_branch_unlikely(&ck) ? 2 * x : x; }
inline int c_inline(int x) { return static_branch_likely(&ck) ? -x : x; }
H
printf '#include "c.h"\nDEFINE_STATIC_KEY_FALSE(ck);\n' > ckey.c
printf '#include "c.h"\nextern inline int c_inline(int x);\nint c_use(int x) { return c_static(x) + c_inline(x); }\n' > cuse.c
cat > cmain.c <<'M'
#include <stdio.h>
#include "c.h"
int c_use(int x);
int main(void)
{
	int a = c_use(1), b, c;

	if (static_branch_enable(&ck))
		return 1;
	b = c_use(1);
	static_branch_disable(&ck);
	c = c_use(1);
	printf("%d %d %d\n", a, b, c);
	return !(a == 2 && b == 1 && c == 2);
}
M
for cc in gcc clang; do
	command -v $cc >/dev/null 2>&1 || { echo "SKIP: $cc (C standards) not checked: not installed"; continue; }
	for std in c99 c11 c17 c2x; do
		f="-std=$std -O2 -Wall -Wextra -Werror -pedantic -I$src/include"
		rm -f libck.so libcuse.so cm
		if ! { $cc $f -fPIC -shared -o libck.so ckey.c $link &&
		       $cc $f -fPIC -shared -o libcuse.so cuse.c -L. -lck $link &&
		       $cc $f -o cm cmain.c -L. -lcuse -lck -Wl,-rpath,"$tmp" $link; } > log 2>&1; then
			echo "FAIL: $cc -std=$std: did not build:"; grep -m3 -E 'error|warning' log; fail=1; continue
		fi
		out=$(./cm 2>&1) || { echo "FAIL: $cc -std=$std: $out"; fail=1; continue; }
		echo "$cc -std=$std (C, -fPIC): $out"
	done
done
[ "$fail" -eq 0 ] && echo "ok"
exit $fail
