#!/bin/sh
# SPDX-License-Identifier: MIT
# The jump-label stress with the stop_machine sync forced (KK_TEXT_SYNC=stop-machine).
# Fewer toggles than the other variants: every one parks each thread, and on a
# loaded 2-core machine 10000 of them took 441 s of the suite.
# test/scripts/text_poke_torture.sh covers stop_machine at every site offset.
export KK_VARIANT_TOGGLES=${KK_VARIANT_TOGGLES:-2000}
export KK_VARIANT_SIGNAL_TOGGLES=${KK_VARIANT_SIGNAL_TOGGLES:-1000}
exec sh "${KK_SRC:-.}/test/jump_label-stress-variant.sh" KK_TEXT_SYNC=stop-machine
