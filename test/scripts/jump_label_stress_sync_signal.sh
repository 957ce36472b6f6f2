#!/bin/sh
# SPDX-License-Identifier: MIT
# The jump-label stress with the signal sync fallback forced (KK_TEXT_SYNC=signal).
exec sh "${KK_SRC:-.}/test/jump_label-stress-variant.sh" KK_TEXT_SYNC=signal
