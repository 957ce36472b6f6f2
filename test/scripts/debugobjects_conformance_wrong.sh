#!/bin/sh
# SPDX-License-Identifier: MIT
# The debug-objects self-test module can fail: built with one wrong
# expectation (-DODEBUG_SELFTEST_BREAK: a warning count off by one after the
# first activate) it must refuse to load, exit 1, and name the check.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:-.}
CC=${CC:-cc}
[ -f "$B/libkernelkit.so" ] || { echo "skip: not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-odbwrong.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
flags=""
case "${KK_TEST_LABEL:-default}" in
fallback) flags="-DKK_NO_JUMP_LABEL" ;;
default) ;;
*) echo "skip: builds its own program without the ${KK_TEST_LABEL} flags"; exit 77 ;;
esac
absb=$(cd "$B" && pwd)
$CC -std=gnu11 -D_GNU_SOURCE -DKBUILD_MODNAME='"test_debugobjects"' -DODEBUG_SELFTEST_BREAK $flags \
	-I"$SRC/test/conformance/include" -I"$SRC/include" -O2 -pthread -o "$tmp/t" \
	"$SRC/test/conformance/test_debugobjects.c" "$SRC/test/conformance/runner.c" \
	-L"$absb" -lkernelkit -Wl,-rpath,"$absb" -ldl > "$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; echo "FAIL: the module with a wrong expectation did not build"; exit 1; }
"$tmp/t" > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ "$rc" -eq 1 ] || { echo "FAIL: exited $rc, not 1"; exit 1; }
grep -q "warnings 0, expected 1" "$tmp/out" || { echo "FAIL: failed without naming the check"; exit 1; }
echo "ok: the self-test fails on a wrong expectation"
