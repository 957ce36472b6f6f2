#!/bin/sh
# SPDX-License-Identifier: MIT
# The debug-objects stress under ThreadSanitizer (built by mk/debugobjects.mk).
exec sh "${KK_SRC:-.}/test/tsan-run.sh" "${KK_BUILD:-build}/test/tsan/debugobjects_stress" 2000
