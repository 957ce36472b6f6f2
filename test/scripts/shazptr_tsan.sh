#!/bin/sh
# SPDX-License-Identifier: MIT
# The shazptr reclamation stress under ThreadSanitizer (built by mk/shazptr.mk).
exec sh "${KK_SRC:-.}/test/tsan-run.sh" "${KK_BUILD:-build}/test/tsan/shazptr_reclaim" 1500
