#!/bin/sh
# SPDX-License-Identifier: MIT
# Run every test program of one build directory, one after another, and
# record the tally: the way to run the suite where there is no make (the
# arm64 guest, scripts/aarch64/init).  On the host, `make check-quick`,
# `make check-unit`, ... run the same programs in parallel (docs/testing.md).
#   scripts/run-tests.sh BUILD_DIR LABEL
# scripts/run-one.sh runs each program and prints its report; scripts/tally.sh
# writes BUILD_DIR/results.txt as "LABEL PASSED FAILED SKIPPED".
# KK_TEST_GROUPS picks the groups (default: all of unit stress conformance
# dialect script); KK_TEST_TIMEOUT the seconds one program may take (600).
set -u
B=$1
label=${2:-default}
here=$(dirname "$0")
log=$B/test-logs
groups=" $(echo "${KK_TEST_GROUPS:-unit stress conformance dialect script}" | tr , ' ') "
want() { case $groups in *" $1 "*) return 0;; esac; return 1; }
rm -rf "$log"; mkdir -p "$log"
: > "$log/.list"

run_one() {	# name command...
	sh "$here/run-one.sh" "$B" "$label" "$@"
	echo "$log/$(echo "$1" | tr / _).res" >> "$log/.list"
}

if want unit; then
	for t in "$B"/test/unit/*; do
		[ -x "$t" ] || continue
		# as the Makefile's TEST_JOBS_unit/control_endpoint (a Criterion leak)
		case $t in */control_endpoint) j=1 ;; *) j=2 ;; esac
		run_one "unit/$(basename "$t")" "$t" --jobs "$j" --verbose
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
# shellcheck disable=SC2046 # one result file per line, no spaces in names
sh "$here/tally.sh" "$B" "$label" $(cat "$log/.list")
exit 0
