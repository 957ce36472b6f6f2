#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 10, "gdb breakpoints on sites": with a gdb breakpoint on a static-key
# site, static_branch_enable() failed with -EILSEQ and a message that did not
# name the cause.
#
# test/progs/jump_label_gdb_break hands gdb the address of a site (bp_ready(addr, 1));
# gdb sets `break *addr` there and continues.  The enable must fail, its
# message (kk_jump_label_strerror()) must name the debugger breakpoint, and
# nothing may change (the program checks the key, the other site of the key,
# and an unrelated site).  At bp_ready(addr, 2) gdb deletes the breakpoint;
# the enable must then succeed.  The program exits 0 only if all of it holds.
set -u
. "${KK_SRC:?}/test/gdb-lib.sh"
[ "${KK_TEST_LABEL:-default}" = fallback ] && { echo "skip: no sites under KK_NO_JUMP_LABEL"; exit 77; }
PROG=$B/test/progs/jump_label_gdb_break
[ -x "$PROG" ] || { echo "not built"; exit 77; }
"$PROG" --no-debugger || fail "jump_label_gdb_break --no-debugger"

# After the breakpoint is deleted the enable succeeds, under stop_machine (a
# tracer is attached): the park signal stops each thread once; `continue`.
{ cat <<'GDB'
break bp_ready
run
break *$rdi
continue
delete 2
GDB
  continue_loop 200
} > "$tmp/bp.gdb"
run_gdb 120 -x "$tmp/bp.gdb" "$PROG" > "$tmp/bp.log" 2>&1
grep "^enable failed" "$tmp/bp.log"
check_exit "$tmp/bp.log" "breakpoint on a site"
grep "^enable failed: -[0-9]*: .*breakpoint" "$tmp/bp.log" | grep -qi "debugger\|gdb" ||
	fail "the error does not name the debugger breakpoint"
echo "gdb_breakpoint: ok"
