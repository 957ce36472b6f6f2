#!/bin/sh
# SPDX-License-Identifier: MIT
# One mutant: change FILE with a sed expression, run the given tests on it,
# say whether they caught it, and put FILE back as it was.
#   scripts/mutate.sh FILE SED_EXPR TEST...
#   scripts/mutate.sh src/control.c 's/i < 3; i++/i < 2; i++/' script/control_trust_request.sh
# TEST names are make check-one's (unit/X, stress/X, script/X.sh).
# MUTATE_MAKE: more make arguments, e.g. a pass's
#   MUTATE_MAKE='B=build/nojl EXTRA_CFLAGS=-DKK_NO_JUMP_LABEL CHECK_LABEL=fallback'
# (its B= is where the results are read; build/ otherwise).  Build the tree
# once first (make tests, with the same arguments).
# Prints the diff and one verdict line, and exits:
#   0 caught     a test failed
#   1 survived   every test ran and passed (a skipped one is named)
#   2 no verdict the expression changed nothing, a test did not build or
#                run (a mutant that does not compile), or every test skipped
# The make log is $B/test-logs/mutate.log.  FILE is restored (new mtime, so
# the next make rebuilds) on any exit but SIGKILL; then `git checkout -- FILE`.
set -u
if [ $# -lt 3 ]; then
	echo "usage: $0 FILE SED_EXPR TEST..." >&2
	exit 2
fi
file=$1 expr=$2
shift 2
tests=$*
B=build
for w in ${MUTATE_MAKE:-}; do
	case $w in B=*) B=${w#B=} ;; esac
done
[ -f "$file" ] || { echo "mutate: no file $file" >&2; exit 2; }

keep=$(mktemp) && new=$(mktemp) || exit 2
cp "$file" "$keep" || exit 2
changed=0
# shellcheck disable=SC2317	# called by the trap
restore() {
	# a new mtime: the next make rebuilds what the mutant built
	[ "$changed" = 0 ] || cat "$keep" >"$file"
	rm -f "$keep" "$new"
}
trap 'restore' EXIT
trap 'exit 2' INT TERM HUP

sed -e "$expr" "$keep" >"$new" || exit 2
if cmp -s "$keep" "$new"; then
	echo "mutate: no-op: '$expr' changes nothing in $file"
	exit 2
fi
changed=1
cat "$new" >"$file"
diff -u "$keep" "$file" | sed -n '3,$p'

mkdir -p "$B/test-logs"
log=$B/test-logs/mutate.log
for t in $tests; do
	rm -f "$B/test-logs/$(echo "$t" | tr / _).res"
done
# A script gets the library, kkctl, the preload library and the helper
# programs and objects rebuilt, not the whole of `make tests` (the dialect
# matrix and the 16154-site modules alone take minutes); the rest is as the
# last `make tests` left it (run that first), and links the library anyway.
# shellcheck disable=SC2086	# MUTATE_MAKE is words
make -j"${MUTATE_JOBS:-2}" ${MUTATE_MAKE:-} KK_TALLY_STATUS=0 \
	SCRIPT_DEPS="${MUTATE_SCRIPT_DEPS:-lib \$(B)/kkctl \$(B)/libkernelkit-odebug.so \$(PROG_BINS) \$(TLIBS)}" \
	check-one T="$tests" >"$log" 2>&1

caught='' passed='' skipped='' unbuilt=''
for t in $tests; do
	res=$B/test-logs/$(echo "$t" | tr / _).res
	if [ ! -f "$res" ]; then
		unbuilt="$unbuilt $t"
		continue
	fi
	# name rc seconds passed failed skipped
	read -r _ rc _ _ nfail _ <"$res"
	if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ] || [ "$nfail" -ne 0 ]; then
		caught="$caught $t(rc=$rc)"
	elif [ "$rc" -eq 77 ]; then
		skipped="$skipped $t"
	else
		passed="$passed $t"
	fi
done
if [ -n "$caught" ]; then
	echo "mutate: caught by$caught${unbuilt:+ (not run:$unbuilt)}"
	exit 0
fi
if [ -n "$unbuilt" ]; then
	echo "mutate: no verdict: did not build or run:$unbuilt; see $log"
	exit 2
fi
if [ -z "$passed" ]; then
	echo "mutate: no verdict: every test skipped:$skipped"
	exit 2
fi
echo "mutate: SURVIVED: passed:$passed${skipped:+; skipped:$skipped}"
exit 1
