#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 10, "gdb, handle SIGTRAP nostop noprint pass": every flip killed the
# program, because gdb rewinds the pc of an int3 trap (it takes it for one of
# its own breakpoints) before it passes the signal on, so the library's
# handler saw the site's address instead of the address after the int3.
#
# Real gdb, `handle SIGTRAP nostop noprint pass`, test/progs/jump_label_flip:
#  - KK_TEXT_SYNC=membarrier: the int3 protocol is forced even under a
#    tracer, so the readers do trap and the handler must cope with the
#    rewound pc.  `run` alone must finish with exit 0 (nothing else stops).
#    Skipped when membarrier SYNC_CORE is unavailable.
#  - the default (auto: stop_machine under a tracer): run, then `continue`
#    through the park signal's stops (no helper loaded here); exit 0.
set -u
. "${KK_SRC:?}/test/gdb-lib.sh"
PROG=$B/test/progs/jump_label_flip
[ -x "$PROG" ] || { echo "not built"; exit 77; }

# The handle goes in at main: before that gdb's own breakpoint in the dynamic
# loader would be passed to the program as a SIGTRAP it has no handler for
# (a gdb property, nothing to do with kernelkit), and the stop at main is
# left with `signal 0`, as `continue` would pass that breakpoint's SIGTRAP on.
printf 'break main\nrun\nhandle SIGTRAP nostop noprint pass\ndelete\nsignal 0\nprintf "KK-EXIT %%d 0\\n", $_exitcode\n' \
	> "$tmp/run.gdb"
if "$PROG" --membarrier-ok; then
	for args in "1 200" "4 200"; do
		# shellcheck disable=SC2086
		KK_TEXT_SYNC=membarrier run_gdb 300 -x "$tmp/run.gdb" --args "$PROG" $args \
			> "$tmp/int3.log" 2>&1
		check_exit "$tmp/int3.log" "jump_label_flip $args, KK_TEXT_SYNC=membarrier, SIGTRAP nostop"
		grep "^jump_label_flip: .* traps" "$tmp/int3.log"
	done
else
	echo "membarrier SYNC_CORE unavailable: the forced int3 case is skipped"
fi

{ echo "break main"; echo run; echo "handle SIGTRAP nostop noprint pass"; echo delete
  echo "signal 0"
  continue_loop 20000; } > "$tmp/cont.gdb"
run_gdb 300 -x "$tmp/cont.gdb" --args "$PROG" 4 200 > "$tmp/auto.log" 2>&1
check_exit "$tmp/auto.log" "jump_label_flip 4 200, SIGTRAP nostop, run + continue"
echo "gdb_nostop: ok"
