#!/bin/sh
# SPDX-License-Identifier: MIT
# The static-key conformance modules can fail: built with a wrong expectation
# (-DTEST_STATIC_KEYS_WRONG: one key expected in the wrong state, one count
# off by one) each must refuse to load, exit 1, and name the check.
. "${KK_SRC:-.}/test/conformance-lib.sh"
conf_setup test/conformance/libstatic_key_base.so
conf_build t1 test_static_keys -DTEST_STATIC_KEYS_WRONG -lstatic_key_base &&
	conf_expect_fail "test_static_keys, wrong expectation" static_key_enabled "$tmp/t1"
conf_build t2 test_jump_label_api -DTEST_STATIC_KEYS_WRONG &&
	conf_expect_fail "test_jump_label_api, wrong expectation" line "$tmp/t2"
[ "$conf_fail" -eq 0 ] && echo "ok: both modules fail on a wrong expectation"
exit $conf_fail
