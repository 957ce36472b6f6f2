#!/bin/sh
# SPDX-License-Identifier: MIT
# The debug-objects self-test module can fail: built with one wrong
# expectation (-DODEBUG_SELFTEST_BREAK: a warning count off by one after the
# first activate) it must refuse to load, exit 1, and name the check.
. "${KK_SRC:-.}/test/conformance-lib.sh"
conf_setup
conf_build t test_debugobjects -DODEBUG_SELFTEST_BREAK &&
	conf_expect_fail "test_debugobjects, wrong expectation" "warnings 0, expected 1" "$tmp/t"
[ "$conf_fail" -eq 0 ] && echo "ok: the self-test fails on a wrong expectation"
exit $conf_fail
