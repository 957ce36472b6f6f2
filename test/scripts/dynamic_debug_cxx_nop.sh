#!/bin/sh
# SPDX-License-Identifier: MIT
# A disabled C++ pr_debug site is one NOP (x86_64: 0f 1f 44 00 00), whatever
# its shape: static and inline functions, a function template (two
# instantiations), a class-template member, a lambda, namespaces.  Built with
# g++ and clang++ as a PIE program, and (only internal-linkage shapes: inline
# functions and templates need the cxx-pic branch there) as a -fPIC shared
# object, linked; every kk_jump_table entry of the result must name a NOP,
# and kk_dyndbg_ptrs must list the sites (the C++ registration).
# And a format that is not a constant (a forwarding function template, as
# C++ users write) is a compile error, as it is in C: C++ used to take it,
# as a dynamic initialisation of the descriptor at its first run, after the
# constructor had registered it zeroed (listed with an empty format); that
# run wiped the key's link to its sites (+p then printed nothing with g++,
# and crashed with clang++).
set -u
case "${KK_TEST_LABEL:-default}" in
default) ;;
*) echo "skip: compiles its own objects; checked in the default build"; exit 77 ;;
esac
[ "$(uname -m)" = x86_64 ] || { echo "skip: x86_64 only (aarch64: jump_label_arch.sh)"; exit 77; }
command -v python3 >/dev/null 2>&1 || { echo "skip: no python3 to read the tables"; exit 77; }
src=${KK_SRC:-$(pwd)} B=${KK_BUILD:?}
tmp=$(mktemp -d /tmp/kk-ddcxx.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0

cat > "$tmp/shapes.cc" <<'CXX'
#include <kernelkit/dynamic_debug.h>
static int f_static(int x) { pr_debug("static %d\n", x); return x; }
namespace { int f_anon(int x) { pr_debug("anon %d\n", x); return x; } }
#ifndef INTERNAL_ONLY
inline int f_inline(int x) { pr_debug("inline %d\n", x); return x; }
template <class T> T twice(T x) { pr_debug("twice %d\n", (int)x); return 2 * x; }
template <class T> struct holder { T v; T get() const { pr_debug("get %d\n", (int)v); return v; } };
namespace named { int f_named(int x) { pr_debug("named %d\n", x); return x; } }
#endif
int use(int x);
int use(int x)
{
	int (*lam)(int) = [](int y) { pr_debug("lambda %d\n", y); return y; };
	int r = f_static(x) + f_anon(x) + lam(x);
#ifndef INTERNAL_ONLY
	holder<int> h = { x };
	r += f_inline(x) + twice(x) + (int)twice(2L) + h.get() + named::f_named(x);
#endif
	return r;
}
#ifndef SHARED
int main(int argc, char **argv) { (void)argv; return use(argc) & 0; }
#endif
CXX

# check LABEL FILE MIN_SITES: every jump entry names the 5-byte NOP
check() {
	python3 - "$2" "$3" "$1" <<'PY'
import struct, subprocess, sys
path, want, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
secs = {}
for line in subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout.splitlines():
    f = line.replace("[ ", "[").split()
    if len(f) > 5 and f[0].startswith("[") and f[0][1:-1].isdigit():
        secs[f[1]] = (int(f[3], 16), int(f[4], 16), int(f[5], 16))
data = open(path, "rb").read()
def at(vaddr, n):
    for a, off, size in secs.values():
        if a and a <= vaddr < a + size:
            return data[off + vaddr - a: off + vaddr - a + n]
    return b""
if "kk_jump_table" not in secs or "kk_dyndbg_ptrs" not in secs:
    print("FAIL %s: no kk_jump_table or kk_dyndbg_ptrs section" % label); sys.exit(1)
a, off, size = secs["kk_jump_table"]
bad = 0
for i in range(0, size, 16):
    code = struct.unpack_from("<i", data, off + i)[0]
    insn = at(a + i + code, 5)
    if insn != bytes.fromhex("0f1f440000"):
        print("FAIL %s: site %#x is %s, not the NOP" % (label, a + i + code, insn.hex())); bad = 1
n, ptrs = size // 16, secs["kk_dyndbg_ptrs"][2] // 8
if n < want or ptrs < want:
    print("FAIL %s: %d sites, %d listed descriptors, expected at least %d" % (label, n, ptrs, want)); bad = 1
if not bad:
    print("ok   %s: %d sites, all 0f 1f 44 00 00; %d entries in kk_dyndbg_ptrs" % (label, n, ptrs))
sys.exit(bad)
PY
}

for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || { echo "SKIP: $cxx not checked: not installed"; continue; }
	flags="-std=c++17 -O2 -Wall -Wextra -Werror -I$src/include"
	if $cxx $flags -fPIE -pie -o "$tmp/prog-$cxx" "$tmp/shapes.cc" -L"$B" -lkernelkit; then
		check "$cxx PIE program" "$tmp/prog-$cxx" 8 || fail=1
	else
		echo "FAIL $cxx: the PIE program does not build"; fail=1
	fi
	if $cxx $flags -fPIC -shared -DSHARED -DINTERNAL_ONLY -o "$tmp/lib-$cxx.so" "$tmp/shapes.cc" \
		-L"$B" -lkernelkit; then
		check "$cxx -fPIC shared object" "$tmp/lib-$cxx.so" 3 || fail=1
	else
		echo "FAIL $cxx: the shared object does not build"; fail=1
	fi
done
cat > "$tmp/nonconst.cc" <<'CXX'
#include <kernelkit/dynamic_debug.h>
template <class... A> void dbg(const char *fmt, A... a) { pr_debug(fmt, a...); }
int use(int x);
int use(int x) { dbg("x %d\n", x); return x; }
CXX
for cxx in g++ clang++; do
	command -v $cxx >/dev/null 2>&1 || { echo "SKIP: $cxx, non-constant formats, not checked: not installed"; continue; }
	for d in "" -DKK_NO_JUMP_LABEL; do
		if $cxx -std=c++11 -Wall -Wextra -I"$src/include" $d -c -o "$tmp/nonconst.o" \
			"$tmp/nonconst.cc" 2>"$tmp/nonconst.err"; then
			echo "FAIL $cxx $d: pr_debug with a format that is not a constant compiles"; fail=1
		elif ! grep -q "constant initializer" "$tmp/nonconst.err"; then
			echo "FAIL $cxx $d: the non-constant format is refused for another reason:"
			cat "$tmp/nonconst.err"; fail=1
		else
			echo "ok   $cxx $d: a non-constant format is a compile error"
		fi
	done
done
exit $fail
