#!/bin/sh
# SPDX-License-Identifier: MIT
# The jump-label stress with the stop_machine sync forced (KK_TEXT_SYNC=stop-machine).
exec sh "${KK_SRC:-.}/test/jl-stress-variant.sh" KK_TEXT_SYNC=stop-machine
