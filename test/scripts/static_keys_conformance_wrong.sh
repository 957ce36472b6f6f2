#!/bin/sh
# SPDX-License-Identifier: MIT
# The static-key conformance modules can fail: built with a wrong expectation
# (-DTEST_STATIC_KEYS_WRONG: one key expected in the wrong state, one count
# off by one) each must refuse to load, exit 1, and name the check.
set -u
B=${KK_BUILD:?}
CC=${CC:-cc}
[ -f "$B/libkernelkit.so" ] && [ -f "$B/test/conformance/libstatic_key_base.so" ] ||
	{ echo "skip: not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-skwrong.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
flags=""
case "${KK_TEST_LABEL:-default}" in
fallback) flags="-DKK_NO_JUMP_LABEL" ;;
default) ;;
*) echo "skip: builds its own programs without the ${KK_TEST_LABEL} flags"; exit 77 ;;
esac
fail=0
for t in test_static_keys:-lstatic_key_base:static_key_enabled test_static_keys_api::line; do
	name=${t%%:*}
	rest=${t#*:}
	libs=${rest%%:*}
	want=${rest#*:}
	if ! $CC -std=gnu11 -D_GNU_SOURCE -DKBUILD_MODNAME="\"$name\"" -DTEST_STATIC_KEYS_WRONG $flags \
		-Itest/conformance/include -Iinclude -O2 -pthread -o "$tmp/$name" \
		"test/conformance/$name.c" test/conformance/runner.c -L"$B/test/conformance" \
		-Wl,-rpath,"$(cd "$B" && pwd)/test/conformance" $libs -L"$B" -lkernelkit \
		-Wl,-rpath,"$(cd "$B" && pwd)" -ldl > "$tmp/log" 2>&1; then
		echo "FAIL: $name with a wrong expectation did not build:"
		cat "$tmp/log"
		fail=1
		continue
	fi
	"$tmp/$name" > "$tmp/out" 2>&1
	rc=$?
	cat "$tmp/out"
	if [ "$rc" -ne 1 ]; then
		echo "FAIL: $name with a wrong expectation exited $rc, not 1"
		fail=1
	elif ! grep -q "$want" "$tmp/out"; then
		echo "FAIL: $name failed without saying which check ($want)"
		fail=1
	fi
done
[ "$fail" -eq 0 ] && echo "ok: both modules fail on a wrong expectation"
exit $fail
