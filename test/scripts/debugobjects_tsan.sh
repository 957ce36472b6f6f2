#!/bin/sh
# SPDX-License-Identifier: MIT
# The debug-objects stress under ThreadSanitizer (built by mk/debugobjects.mk
# as $KK_BUILD/test/tsan/debugobjects_stress).  Exit 0 clean, 77 when TSan
# cannot run here, anything else: a report or a failed check.
B=${KK_BUILD:-build}
bin=$B/test/tsan/debugobjects_stress
if [ ! -x "$bin" ]; then
	echo "no TSan build at $bin"
	exit 77
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {
	TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1" \
		KK_STRESS_MS=${KK_STRESS_MS:-2000} timeout -k 5 120 "$@" >"$out" 2>&1
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
