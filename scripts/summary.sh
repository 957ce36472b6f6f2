#!/bin/sh
# SPDX-License-Identifier: MIT
# Add up the results.txt files of every variant built under BUILD_DIR and print
# the closing line.  Exits non-zero when anything failed.
set -u
B=$1
pass=0 fail=0 skip=0
for r in $(find "$B" -name results.txt | sort); do
	read -r label p f s < "$r"
	echo "  $label: $p passed, $f failed, $s skipped"
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
done
echo "check: $pass passed, $fail failed, $skip skipped"
[ "$fail" -eq 0 ]
