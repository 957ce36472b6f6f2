#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the jump-label stress (plain, then with the SIGUSR1 handler that runs
# sites) with the patching path forced by the environment given, e.g.
#   sh test/jump_label-stress-variant.sh KK_TEXT_SYNC=signal
# Used by test/scripts/jump_label_stress_*.sh (issue 10: "the stress test also
# runs with the signal sync fallback forced, and with the remap write path
# forced").  The programs check that the forced path is the one that ran.
set -u
B=${KK_BUILD:-build}
rc=0 ran=0 why=
for prog in jump_label_stress:${KK_VARIANT_TOGGLES:-10000} jump_label_signal:${KK_VARIANT_SIGNAL_TOGGLES:-5000}; do
	name=${prog%%:*}
	echo "== $* KK_STRESS_TOGGLES=${prog#*:} $name"
	env "$@" KK_STRESS_TOGGLES="${prog#*:}" "$B/test/stress/$name"
	r=$?
	if [ "$r" -eq 77 ]; then
		why="$name skipped the forced path"
		continue
	fi
	ran=$((ran + 1))
	if [ "$r" -ne 0 ]; then
		[ "$r" -gt 128 ] && echo "$name: killed by signal $((r - 128)) ($(kill -l $((r - 128)) 2>/dev/null))"
		echo "$name: FAILED (rc $r) with $*"
		rc=1
	fi
done
# Nothing ran the forced path (KK_NO_JUMP_LABEL): a skip, with the reason last.
if [ "$rc" -eq 0 ] && [ "$ran" -eq 0 ]; then
	echo "skip: $why: KK_NO_JUMP_LABEL patches no text ($*)"
	exit 77
fi
exit $rc
