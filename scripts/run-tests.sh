#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every test program of one build directory and record the tally.
#   scripts/run-tests.sh BUILD_DIR LABEL
# Criterion programs count one result per test case (run with --verbose: a
# cr_skip_test() shows only as a "[SKIP]" line, never in the synthesis);
# stress programs and shell tests count one each (exit 0 pass, 77 skip,
# anything else fail).
# The tally goes to BUILD_DIR/results.txt as "LABEL PASSED FAILED SKIPPED".
# KK_TEST_GROUPS picks the groups (default: all of unit stress conformance
# dialect script); KK_TEST_TIMEOUT the seconds one program may take (600).
set -u
B=$1
label=${2:-default}
export KK_BUILD=$(cd "$B" && pwd)
export KK_SRC=$(pwd)
export KK_TEST_LABEL=$label
pass=0 fail=0 skip=0 failed=""
log=$B/test-logs
groups=" $(echo "${KK_TEST_GROUPS:-unit stress conformance dialect script}" | tr , ' ') "
want() { case $groups in *" $1 "*) return 0;; esac; return 1; }
rm -rf "$log"; mkdir -p "$log"

run_one() {	# name command...
	name=$1; shift
	out="$log/$(echo "$name" | tr / _).log"
	t0=$(date +%s)
	timeout -k 10 "${KK_TEST_TIMEOUT:-600}" "$@" >"$out" 2>&1
	rc=$?
	secs=$(( $(date +%s) - t0 ))
	syn=$(grep -a 'Synthesis: Tested' "$out" | tail -n 1)
	if [ -n "$syn" ]; then
		t=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
		f=$(echo "$syn" | sed -n 's/.*Failing: \([0-9]*\).*Crashing: \([0-9]*\).*/\1 \2/p')
		nf=$(( $(echo "$f" | cut -d' ' -f1) + $(echo "$f" | cut -d' ' -f2) ))
		ns=$(grep -ac '^\[SKIP\]' "$out")
		pass=$((pass + t)); fail=$((fail + nf)); skip=$((skip + ns))
		[ "$rc" -ne 0 ] && [ "$nf" -eq 0 ] && fail=$((fail + 1))
		if [ "$rc" -ne 0 ] || [ "$nf" -ne 0 ]; then failed="$failed $name"; fi
	elif [ "$rc" -eq 0 ]; then pass=$((pass + 1))
	elif [ "$rc" -eq 77 ]; then skip=$((skip + 1))
	else fail=$((fail + 1)); failed="$failed $name"
	fi
	printf '%-12s %-40s rc=%s %4ss %s\n' "[$label]" "$name" "$rc" "$secs" "$syn"
	[ "$rc" -ne 77 ] || echo "    skipped: $(tail -n 1 "$out")"
	[ -z "$syn" ] || grep -a '^\[SKIP\]' "$out" | sed 's/^\[SKIP\] /    skipped: /'
	# A stress program's closing lines are its figures (syncs, checks).
	case "$name" in stress/*) [ "$rc" -ne 0 ] || tail -n 2 "$out" | sed 's/^/    /' ;; esac
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
		echo "---- $out (last 40 lines) ----"; tail -n 40 "$out"; echo "----"
	fi
}

if want unit; then
	for t in "$B"/test/unit/*; do
		[ -x "$t" ] || continue
		run_one "unit/$(basename "$t")" "$t" --jobs 2 --verbose
	done
fi
if want stress; then
	for t in "$B"/test/stress/*; do
		[ -x "$t" ] || continue
		run_one "stress/$(basename "$t")" "$t"
	done
fi
if want conformance; then
	for t in "$B"/test/conformance/test_*; do
		[ -x "$t" ] || continue
		run_one "conformance/$(basename "$t")" "$t"
	done
fi
if want dialect; then
	for t in "$B"/test/dialect/*; do
		[ -x "$t" ] || continue
		run_one "dialect/$(basename "$t")" "$t"
	done
fi
if want script; then
	for t in test/scripts/*.sh; do
		[ -f "$t" ] || continue
		run_one "script/$(basename "$t")" sh "$t"
	done
fi
echo "$label $pass $fail $skip" > "$B/results.txt"
[ -n "$failed" ] && echo "[$label] FAILED:$failed"
echo "[$label] $pass passed, $fail failed, $skip skipped"
exit 0
