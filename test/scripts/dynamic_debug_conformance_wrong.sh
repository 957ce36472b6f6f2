#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic-debug conformance module can fail: (1) built with a wrong
# expectation (-DTEST_DYNAMIC_DEBUG_WRONG: level name L3 expected to enable L4)
# it must refuse to load, exit 1 and name the check; (2) run with a start-up
# query that turns a class on, its "sites start disabled" and class checks
# must fail.
. "${KK_SRC:-.}/test/conformance-lib.sh"
conf_setup test/conformance/libdynamic_debug_debug.so test/conformance/test_dynamic_debug
conf_build t test_dynamic_debug -DTEST_DYNAMIC_DEBUG_WRONG -ldynamic_debug_debug &&
	conf_expect_fail "wrong expectation" "L3: L4 did not print" "$tmp/t"
conf_expect_fail "a class switched on at start-up" "sites start disabled" \
	env KK_DYNDBG='module test_dynamic_debug class LOW +p' "$B/test/conformance/test_dynamic_debug"
[ "$conf_fail" -eq 0 ] && echo "ok: the module fails on a wrong expectation and on a wrong start state"
exit $conf_fail
