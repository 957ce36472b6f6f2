#!/bin/sh
# SPDX-License-Identifier: MIT
# Run one stress program built with -fsanitize=thread.
#   sh test/tsan-run.sh BINARY DEFAULT_STRESS_MS
# Exit 0 clean, 77 when there is no TSan build or TSan cannot run here,
# anything else: a TSan report or a failed check.
bin=$1
ms=$2
if [ ! -x "$bin" ]; then
	echo "no TSan build at $bin"
	exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
		KK_STRESS_MS=${KK_STRESS_MS:-$ms} timeout -k 5 120 "$@" >"$out" 2>&1
}
run "$bin"
rc=$?
# Old TSan runtimes cannot cope with high mmap randomisation: retry without ASLR.
if [ $rc -ne 0 ] && grep -q "unexpected memory mapping\|FATAL: ThreadSanitizer" "$out"; then
	if command -v setarch >/dev/null 2>&1; then
		run setarch "$(uname -m)" -R "$bin"
		rc=$?
	fi
	if grep -q "unexpected memory mapping\|FATAL: ThreadSanitizer" "$out"; then
		cat "$out"
		echo "TSan cannot run on this machine"
		exit 77
	fi
fi
cat "$out"
if grep -q "WARNING: ThreadSanitizer" "$out"; then
	echo "TSan reported a problem"
	exit 1
fi
exit $rc
