#!/bin/sh
# SPDX-License-Identifier: MIT
# The printed line's cost (issue 41): a pr_debug printed to stderr costs no
# more instructions than snprintf() and one write() of the same line (it
# cost 1.27x before: vsnprintf's FILE set-up and byte copies, then fwrite).
# Instruction counts (callgrind) do not depend on the machine's load, so
# this is a bound a test can hold.  Also prints the ring's count (+T).
set -u
B=${KK_BUILD:?}
P=$B/test/progs/dynamic_debug_line_cost
[ -x "$P" ] || { echo "not built: $P"; exit 77; }
command -v valgrind > /dev/null || { echo "valgrind not installed: no instruction counts"; exit 77; }
tmp=$(mktemp -d /tmp/kk-line-cost.XXXXXX)
fail() { echo "FAIL: $*"; rm -rf "$tmp"; exit 1; }

# Instructions per iteration of cost_loop in mode $1.
ir() {
	KK_CONTROL=0 valgrind --tool=callgrind --toggle-collect=cost_loop \
		--callgrind-out-file="$tmp/cg.$1" "$P" "$1" > "$tmp/n.$1" 2> /dev/null ||
		fail "valgrind $P $1"
	awk -v n="$(cat "$tmp/n.$1")" '/^(summary|totals):/ { printf "%d\n", $2 / n; exit }' \
		"$tmp/cg.$1"
}
# A sanitizer build does not run under valgrind: nothing to count there.
KK_CONTROL=0 valgrind --tool=none "$P" empty > /dev/null 2>&1 ||
	{ echo "valgrind cannot run $P (a sanitizer build?): no instruction counts"; rm -rf "$tmp"; exit 77; }
print=$(ir print) bare=$(ir bare) ring=$(ir ring) empty=$(ir empty)
echo "instructions per line: print $print, snprintf+write $bare, ring $ring, empty loop $empty"
[ -n "$print" ] && [ -n "$bare" ] || fail "no counts"
[ "$print" -le "$bare" ] || fail "a printed pr_debug costs $print instructions, snprintf+write $bare"
rm -rf "$tmp"
exit 0
