#!/bin/sh
# SPDX-License-Identifier: MIT
# No function in src/ or tools/ is over 100 lines unless most of it is
# comment (issue 27's target: a long function that does several jobs is
# split into short ones with one job each).
#
# A function is kernel style: its body opens with "{" at the start of a line
# and closes with "}" at the start of a line.  A body line is a comment line
# when it is blank, inside a block comment, or starts with "/*", "*" or
# "//"; every other line is code.  A body of more than 100 lines fails when
# more than half of it is code.
# Exit 0 pass, 1 fail (one line per function), 77 skip.
set -u
SRC=${KK_SRC:-.}
LIMIT=100
[ -d "$SRC/src" ] || { echo "SKIP: no $SRC/src"; exit 77; }
files=$(find "$SRC/src" "$SRC/tools" -name '*.c' 2>/dev/null | sort)
[ -n "$files" ] || { echo "SKIP: no C files under $SRC/src"; exit 77; }

# shellcheck disable=SC2086
awk -v limit="$LIMIT" -v src="$SRC/" '
FNR == 1 { body = 0; incomment = 0 }
/^\{/ { body = 1; start = FNR; name = prev; code = 0; total = 0; incomment = 0; next }
body && /^\}/ {
	if (total > limit && code * 2 > total) {
		f = FILENAME; sub("^" src, "", f)
		printf "source_function_length: %s:%d %s: %d lines, %d of them code (limit %d)\n",
		       f, start, name, total, code, limit
		bad = 1
	}
	body = 0; next
}
body {
	total++
	line = $0; sub(/^[ \t]+/, "", line)
	if (incomment) {
		if (index(line, "*/")) incomment = 0
		next
	}
	if (line == "" || line ~ /^\/\// || line ~ /^\*/)
		next
	if (line ~ /^\/\*/) {
		if (!index(substr(line, 3), "*/")) incomment = 1
		next
	}
	code++
	next
}
{ prev = $0 }
END { exit bad }
' $files || exit 1
echo "source_function_length: ok, no function over $LIMIT lines of mostly code"
