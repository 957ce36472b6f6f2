#!/bin/sh
# SPDX-License-Identifier: MIT
# Run one test program and record its result; used by the Makefile's test
# targets (one per program, so that make -j runs them side by side) and by
# scripts/run-tests.sh (all of them, one after another).
#   scripts/run-one.sh BUILD_DIR LABEL NAME COMMAND...
# NAME is group/program (unit/dynamic_debug_output, script/abi.sh, ...).  Writes
#   BUILD_DIR/test-logs/<NAME with / as _>.log  what the program printed
#   BUILD_DIR/test-logs/<...>.res  "NAME RC SECONDS PASSED FAILED SKIPPED"
#   BUILD_DIR/test-logs/<...>.out  the report printed below, for the tally
# and prints the report in one piece (make -j interleaves whole reports):
# the program's line (rc, seconds, Criterion's synthesis), the reasons of its
# skips, a stress program's closing figures, the last 40 lines of a failure.
# Criterion programs count one result per test case (run with --verbose: a
# cr_skip_test() shows only as a "[SKIP]" line, never in the synthesis);
# stress programs and shell tests count one each (exit 0 pass, 77 skip,
# anything else fail), and a passing one counts each "SKIP: reason" line it
# printed as a skipped part (what it could not run here, named).  KK_TEST_TIMEOUT: the seconds one program may take (600).
set -u
B=$1 label=$2 name=$3
shift 3
KK_BUILD=$(cd "$B" && pwd) || exit 1
KK_SRC=$(pwd)
KK_TEST_LABEL=$label
export KK_BUILD KK_SRC KK_TEST_LABEL
log=$B/test-logs
mkdir -p "$log"
base="$log/$(echo "$name" | tr / _)"
out=$base.log
rm -f "$base.res"

t0=$(date +%s)
timeout -k 10 "${KK_TEST_TIMEOUT:-600}" "$@" >"$out" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
pass=0 fail=0 skip=0
syn=$(grep -a 'Synthesis: Tested' "$out" | tail -n 1)
noneran=
if [ -n "$syn" ]; then
	pass=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	# "Failing" counts the crashed cases too ("Crashing" is a part of it).
	fail=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*/\1/p')
	skip=$(grep -ac '^\[SKIP\]' "$out")
	[ "$rc" -ne 0 ] && [ "$fail" -eq 0 ] && fail=1
	# A program that ran no case (a filter that matches none) tested nothing.
	if [ $((pass + fail + skip)) -eq 0 ]; then fail=1 noneran=1; fi
elif [ "$rc" -eq 0 ]; then
	pass=1
	# A part that did not run is a skip, counted: a "SKIP: reason" line.
	skip=$(grep -ac '^SKIP: ' "$out")
elif [ "$rc" -eq 77 ]; then skip=1
else fail=1
fi

{
	printf '%-12s %-40s rc=%s %4ss %s\n' "[$label]" "$name" "$rc" "$secs" "$syn"
	[ "$rc" -ne 77 ] || echo "    skipped: $(tail -n 1 "$out")"
	[ -z "$noneran" ] || echo "    failed: the program ran no test case"
	[ -z "$syn" ] || grep -a '^\[SKIP\]' "$out" | sed 's/^\[SKIP\] /    skipped: /'
	[ -n "$syn" ] || [ "$rc" -ne 0 ] || grep -a '^SKIP: ' "$out" | sed 's/^SKIP: /    skipped (a part): /'
	# A stress program's closing lines are its figures (syncs, checks).
	case "$name" in stress/*) [ "$rc" -ne 0 ] || tail -n 2 "$out" | sed 's/^/    /' ;; esac
	if [ "$fail" -ne 0 ] || { [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; }; then
		echo "---- $out (last 40 lines) ----"; tail -n 40 "$out"; echo "----"
	fi
} > "$base.out"
echo "$name $rc $secs $pass $fail $skip" > "$base.res"
cat "$base.out"
exit 0
