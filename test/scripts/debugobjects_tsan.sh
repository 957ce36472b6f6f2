#!/bin/sh
# SPDX-License-Identifier: MIT
# The debug-objects stress tests under ThreadSanitizer (built by mk/debugobjects.mk):
# the concurrent churn, and hooks in signal handlers that interrupt hooks.
sh "${KK_SRC:-.}/test/tsan-run.sh" "${KK_BUILD:-build}/test/tsan/debugobjects_stress" 2000
rc=$?
[ $rc -ne 0 ] && exit $rc
exec sh "${KK_SRC:-.}/test/tsan-run.sh" "${KK_BUILD:-build}/test/tsan/debugobjects_signal" 1000
