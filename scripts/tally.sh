#!/bin/sh
# SPDX-License-Identifier: MIT
# Add up the results of the test programs of one build directory (what
# scripts/run-one.sh recorded) and write BUILD_DIR/results.txt as
# "LABEL PASSED FAILED SKIPPED" (scripts/summary.sh adds those up).
#   scripts/tally.sh BUILD_DIR LABEL RESULT_FILE...
# Prints the failing programs' reports again (under make -j they scroll by
# among the others), the slowest programs, and the closing line.  A program
# whose result file is missing (it did not run) counts as one failure.
# Exits 0, or 1 when something failed and KK_TALLY_STATUS=1.
set -u
B=$1 label=$2
shift 2
pass=0 fail=0 skip=0 failed="" n=0
for r in "$@"; do
	n=$((n + 1))
	if ! [ -f "$r" ]; then
		fail=$((fail + 1)); failed="$failed $(basename "$r" .res)(did-not-run)"
		continue
	fi
	read -r name rc secs p f s < "$r"
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	[ "$f" -eq 0 ] || failed="$failed $name"
done
echo "$label $pass $fail $skip" > "$B/results.txt"
# (the names, for scripts/summary.sh: a CI log's tail shows what failed)
echo "${failed# }" > "$B/failed.txt"
if [ -n "$failed" ]; then
	for r in "$@"; do
		[ -f "$r" ] || continue
		read -r name rc secs p f s < "$r"
		[ "$f" -eq 0 ] || cat "${r%.res}.out"
	done
fi
echo "[$label] $n programs; the slowest:" \
	"$(cat "$@" 2>/dev/null | sort -k3,3nr | head -n 5 | awk '{printf " %s %ss", $1, $3}')"
[ -z "$failed" ] || echo "[$label] FAILED:$failed"
echo "[$label] $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ] || [ "${KK_TALLY_STATUS:-0}" != 1 ]
