#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic-debug conformance module can fail: (1) built with a wrong
# expectation (-DTEST_DYNAMIC_DEBUG_WRONG: level name L3 expected to enable L4)
# it must refuse to load, exit 1 and name the check; (2) run with a start-up
# query that turns a class on, its "sites start disabled" and class checks
# must fail.
set -u
B=${KK_BUILD:?}
CC=${CC:-cc}
[ -f "$B/libkernelkit.so" ] && [ -f "$B/test/conformance/libdd_debug.so" ] &&
	[ -x "$B/test/conformance/test_dynamic_debug" ] || { echo "skip: not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-ddwrong.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
flags=""
case "${KK_TEST_LABEL:-default}" in
fallback) flags="-DKK_NO_JUMP_LABEL" ;;
default) ;;
*) echo "skip: builds its own program without the ${KK_TEST_LABEL} flags"; exit 77 ;;
esac
ABS=$(cd "$B" && pwd)
fail=0
if ! $CC -std=gnu11 -D_GNU_SOURCE -DKBUILD_MODNAME='"test_dynamic_debug"' -DTEST_DYNAMIC_DEBUG_WRONG \
	$flags -Itest/conformance/include -Iinclude -O2 -pthread -o "$tmp/t" \
	test/conformance/test_dynamic_debug.c test/conformance/runner.c -L"$B/test/conformance" \
	-Wl,-rpath,"$ABS/test/conformance" -ldd_debug -L"$B" -lkernelkit -Wl,-rpath,"$ABS" \
	-ldl > "$tmp/log" 2>&1; then
	echo "FAIL: the wrong-expectation module did not build:"
	cat "$tmp/log"
	exit 1
fi
"$tmp/t" > "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
if [ "$rc" -ne 1 ]; then
	echo "FAIL: wrong expectation: exit $rc, not 1"
	fail=1
elif ! grep -q "L3: L4 did not print" "$tmp/out"; then
	echo "FAIL: wrong expectation: the failing check is not named"
	fail=1
fi
KK_DYNDBG='module test_dynamic_debug class LOW +p' "$B/test/conformance/test_dynamic_debug" \
	> "$tmp/out2" 2>&1
rc=$?
cat "$tmp/out2"
if [ "$rc" -ne 1 ] || ! grep -q "sites start disabled" "$tmp/out2"; then
	echo "FAIL: a class switched on at start-up went unnoticed (exit $rc)"
	fail=1
fi
[ "$fail" -eq 0 ] && echo "ok: the module fails on a wrong expectation and on a wrong start state"
exit $fail
