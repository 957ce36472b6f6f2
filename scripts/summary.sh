#!/bin/sh
# SPDX-License-Identifier: MIT
# Add up the results.txt files of every variant built under BUILD_DIR and print
# the closing line.  Exits non-zero when anything failed.  The failed
# programs are named here, last, with the last line each printed: a CI log is
# often read from its tail.
set -u
B=$1
pass=0 fail=0 skip=0
for r in $(find "$B" -name results.txt | sort); do
	read -r label p f s < "$r"
	echo "  $label: $p passed, $f failed, $s skipped"
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	d=$(dirname "$r")
	[ -s "$d/failed.txt" ] || continue
	for n in $(cat "$d/failed.txt"); do
		l=$d/test-logs/$(echo "${n%(did-not-run)}" | tr / _).log
		last=$( [ -f "$l" ] && grep -a -v '^[[:space:]]*$' "$l" | tail -n 1 | cut -c1-200)
		echo "    $label FAILED: $n${last:+: $last}"
	done
done
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
