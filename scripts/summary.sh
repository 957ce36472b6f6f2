#!/bin/sh
# SPDX-License-Identifier: MIT
# Add up the results.txt files of every variant built under BUILD_DIR and print
# the closing line.  Exits non-zero when anything failed.  The failed
# programs are named here, last, with the last lines each printed: a CI log is
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
		echo "    $label FAILED: $n"
		[ -f "$l" ] && grep -a -v '^[[:space:]]*$' "$l" | tail -n 3 | cut -c1-240 |
			sed 's/^/      | /'
	done
done
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
