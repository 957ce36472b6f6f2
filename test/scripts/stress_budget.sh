#!/bin/sh
# SPDX-License-Identifier: MIT
# The stress programs stop at their time budget (test/stress/stress_budget.h):
# with a CPU hog on each core, jump_label_stress_sync_signal.sh ran past the
# runner's 600 s (the signal sync's rounds each wait for every thread to get
# a core), and text_poke_torture.sh and jump_label_stress took 506 and 453 s
# (57 and 59 s quiet).  Asked for a billion toggles or flips with
# KK_STRESS_SECONDS=1, each program must stop after its budget, say so, and
# pass its checks on what ran.  Before: each ran until the hang guard.
set -u
B=${KK_BUILD:?}
tmp=$(mktemp -d /tmp/kk-budget.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; sed 's/^/    /' "$tmp/out" | tail -n 20; exit 1; }
n=0
# budget NAME CMD...: CMD stops at its 1 s budget (hang guard: 120 s) and passes.
budget() {
	name=$1; shift
	[ -x "$1" ] || { echo "skip part: $name not built"; return; }
	KK_STRESS_SECONDS=1 timeout -k 5 120 "$@" > "$tmp/out" 2>&1
	rc=$?
	[ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "$name: still running at the hang guard (120 s)"
	grep -q '^time budget of 1 s spent after [0-9]* steps' "$tmp/out" ||
		fail "$name (exit $rc): did not stop at its budget"
	# 77: the fallback build's "forced path never ran" skip; its checks passed.
	[ $rc -eq 0 ] || [ $rc -eq 77 ] || fail "$name: exit $rc after its budget"
	echo "$name: $(grep '^time budget' "$tmp/out")"
	n=$((n + 1))
}
export KK_STRESS_TOGGLES=1000000000
budget jump_label_stress "$B/test/stress/jump_label_stress"
budget jump_label_signal "$B/test/stress/jump_label_signal"
budget text_poke_torture "$B/test/stress/text_poke_torture" 2 1000000000
[ $n -gt 0 ] || { echo "skip: no stress program built"; exit 77; }
echo "stress_budget: ok"
