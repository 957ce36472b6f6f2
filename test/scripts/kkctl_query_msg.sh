#!/bin/sh
# SPDX-License-Identifier: MIT
# A query without its flags word is told so (issue 40, item 6): 'file kkd.c'
# and '+p file kkd.c' both answered "bad flag-op k, at start of kkd.c"
# (the kernel's words, about the last word); now one line names the query and
# says that it ends in a flags word such as +p, and where the flags came
# first, the query as it was meant.  The kernel's words stay in the line.
set -u
KK_TARGET_NAME=qmsg
. "${KK_SRC:?}/test/target-lib.sh"

# bad QUERY LINE: the write of QUERY fails (exit 1), and its message has
# LINE (grep -Fx) and no other line of dyndbg's but the last one's
bad() {
	"$K" -p "$pid" write dynamic_debug/control "$1" > "$tmp/out" 2> "$tmp/err"
	[ $? -eq 1 ] || fail "'$1': exit status"
	grep -Fxq -- "$2" "$tmp/err" || fail "'$1': $(cat "$tmp/err")"
	grep -q 'flags parse failed' "$tmp/err" && fail "'$1': still two lines: $(cat "$tmp/err")"
	[ "$(wc -l < "$tmp/err")" -eq 2 ] || fail "'$1': $(cat "$tmp/err")"
	tail -n 1 "$tmp/err" | grep -qx 'dyndbg: query 1 is malformed: nothing was changed' ||
		fail "'$1': last line: $(cat "$tmp/err")"
}
bad 'file kkd.c' \
	'kkctl: write dynamic_debug/control: Invalid argument: dyndbg: query "file kkd.c" does not end in a flags word such as +p (bad flag-op k, at start of kkd.c)'
bad '+p file kkd.c' \
	'kkctl: write dynamic_debug/control: Invalid argument: dyndbg: query "+p file kkd.c" does not end in a flags word such as +p: the flags go last, "file kkd.c +p" (bad flag-op k, at start of kkd.c)'
# (the second of two: named by its own text)
"$K" -p "$pid" write dynamic_debug/control "$(printf 'func target_alpha +p\nmodule dynamic_debug_target')" \
	> "$tmp/out" 2> "$tmp/err"
grep -Fq 'dyndbg: query "module dynamic_debug_target" does not end in a flags word such as +p (bad flag-op d, at start of dynamic_debug_target)' "$tmp/err" ||
	fail "second query: $(cat "$tmp/err")"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_query_msg: ok"
