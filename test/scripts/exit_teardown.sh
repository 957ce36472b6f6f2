#!/bin/sh
# SPDX-License-Identifier: MIT
# The teardown paths around exit (test/progs/exit_teardown.c; the rule is in
# docs/jump_label.md, "Exit"): an atexit handler's dlclose() still
# unregisters its objects; exit() while other threads switch keys and
# queries and print, from main or from a third thread, ends with status 0
# (20 times each: the threads are anywhere in their loops); a fork child's
# exit leaves the parent's registry working.
set -u
B=${KK_BUILD:?}
P=$B/test/progs/exit_teardown
[ -x "$P" ] || { echo "skip: $P not built"; exit 77; }
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# run MODE TIMES
run() {
	i=0
	while [ $i -lt "$2" ]; do
		out=$(timeout -k 5 600 "$P" "$1")
		rc=$?
		[ $rc -eq 0 ] || { fail "$1, run $((i + 1)): exit $rc: $out"; return; }
		i=$((i + 1))
	done
	echo "$1: $2 runs, exit 0"
}
run atexit 1
run fork 1
run threads 20
run thread-exit 20
[ $failed -eq 0 ] || exit 1
echo "exit_teardown: ok"
