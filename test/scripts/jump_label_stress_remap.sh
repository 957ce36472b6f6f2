#!/bin/sh
# SPDX-License-Identifier: MIT
# The jump-label stress with the remap write path forced (KK_TEXT_POKE=remap).
# Fewer toggles: every write rebuilds a page and swaps it in (about 4 ms a toggle).
KK_VARIANT_TOGGLES=1500 KK_VARIANT_SIGNAL_TOGGLES=1000 \
	exec sh "${KK_SRC:-.}/test/jump_label-stress-variant.sh" KK_TEXT_POKE=remap
