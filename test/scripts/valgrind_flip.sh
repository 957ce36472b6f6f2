#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 10, "valgrind": under valgrind a key reported enabled, but the running
# code never changed (valgrind kept its translations of the old code); only
# --smc-check=all helped.  Real valgrind (memcheck, default options, no
# --smc-check), test/progs/jump_label_flip: after every flip the program runs all 512
# sites and checks the branch each one takes (not only static_key_enabled()),
# single-threaded and with 4 reader threads checking too.
set -u
. "${KK_SRC:?}/test/valgrind-lib.sh"
PROG=$B/test/progs/jump_label_flip
[ -x "$PROG" ] || { echo "not built"; exit 77; }

vg_run "jump_label_flip 0 readers" memcheck -- "$PROG" 0 200
vg_run "jump_label_flip 4 readers" memcheck -- "$PROG" 4 100
[ -z "$bad" ] || { echo "FAIL:$bad"; exit 1; }
echo "valgrind_flip: ok"
