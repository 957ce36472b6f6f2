#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl writes more than dynamic_debug/control takes at once (4095 bytes, the
# kernel's limit) in pieces cut at query boundaries (issue 40, item 6): a file
# of 300 queries is applied and answered as one write (queries numbered
# through, one total line); every query is checked before the first piece is
# sent, so a malformed one anywhere changes nothing; a single query longer
# than the limit is one clear line, and nothing is written.  What a process
# refuses after that (decorations a site cannot print) it refuses for its
# piece: the pieces before stay applied, and the line says which queries.
set -u
KK_TARGET_NAME=split
. "${KK_SRC:?}/test/target-lib.sh"
listing() { "$K" -p "$pid" read dynamic_debug/control; }

# queries N [BAD]: N queries on line numbers (one per line, 40 bytes each);
# the BADth is malformed
queries() {
	i=1
	while [ $i -le "$1" ]; do
		if [ $i -eq "${2:-0}" ]; then echo "file dynamic_debug_target.c line $i"
		else echo "file dynamic_debug_target.c line $i +p"; fi
		i=$((i + 1))
	done
}

# ---- a malformed query in the last piece: nothing is written
listing > "$tmp/before" || fail "read"
queries 300 290 > "$tmp/bad"
[ "$(wc -c < "$tmp/bad")" -gt 8192 ] || fail "the test's text is too short"
"$K" -p "$pid" write dynamic_debug/control < "$tmp/bad" > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "malformed query 290: exit status $? ($(cat "$tmp/err"))"
grep -q 'query 290' "$tmp/err" || fail "malformed query 290 not named: $(cat "$tmp/err")"
grep -q 'nothing was written' "$tmp/err" || fail "malformed query 290: $(cat "$tmp/err")"
listing | cmp -s - "$tmp/before" || fail "a malformed query in the last piece changed sites"

# ---- a single query longer than the limit: one line, nothing written
long=$(head -c 5000 /dev/zero | tr '\0' a)
"$K" -p "$pid" write dynamic_debug/control "$(printf 'func target_alpha +p\nformat %s +p\n' "$long")" \
	> "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "long query: exit status"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "long query: not one line: $(head -c 300 "$tmp/err")"
grep -q '^kkctl: write dynamic_debug/control: Argument list too long: query 2 is 50[0-9][0-9] bytes, more than one write takes (4095 bytes): nothing was written$' "$tmp/err" ||
	fail "long query: $(head -c 300 "$tmp/err")"
listing | cmp -s - "$tmp/before" || fail "a query too long changed sites"

# ---- 300 queries and one more: applied, answered as one write
{ queries 300; echo 'func target_beta +p'; } > "$tmp/good"
"$K" -p "$pid" write dynamic_debug/control < "$tmp/good" > "$tmp/out" 2> "$tmp/err" ||
	fail "300 queries: $(cat "$tmp/err")"
grep -q '^query 301 "func target_beta +p": matched 1 changed 0$' "$tmp/out" ||
	fail "query 301: $(tail -n 3 "$tmp/out")"
[ "$(grep -c '^query ' "$tmp/out")" -eq 301 ] || fail "not 301 query lines"
[ "$(grep -c '^total: ' "$tmp/out")" -eq 1 ] || fail "not one total line: $(grep '^total' "$tmp/out")"
grep -q '^total: queries 301 matched 4 changed 3 ' "$tmp/out" || fail "total: $(grep '^total' "$tmp/out")"
listing | grep -q '\]target_beta =p ' || fail "the last piece was not applied"
listing | grep -c '\]target_alpha =p ' | grep -qx 2 || fail "the first piece was not applied"
kill "$pid"; wait "$pid" 2>/dev/null
pid=

# ---- a piece the process refuses: the line says which queries were applied
# (test/progs/adopt_formatter: its SRV_DEBUG_EVENT site gets no descriptor,
# so it refuses decorations: 'm')
FMT=$B/test/progs/adopt_formatter
[ -x "$FMT" ] || { echo "skip: adopt_formatter not built"; rm -rf "$tmp"; exit 77; }
echo "error_log info" > "$tmp/cfg"
"$FMT" "$tmp/cfg" > "$tmp/f" 2>/dev/null &
pid=$!
read -r line < "$tmp/f" || fail "adopt_formatter did not start"
{
	echo 'module srv class SRV_DEBUG_CORE +p'
	i=1; while [ $i -le 150 ]; do echo "file nosuch_$i.c line $i +p"; i=$((i + 1)); done
	echo 'module srv class SRV_DEBUG_EVENT +m'
} > "$tmp/refused"
"$K" -p "$pid" write dynamic_debug/control < "$tmp/refused" > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "refused piece: exit status"
head -n 1 "$tmp/err" | grep -q '^kkctl: write dynamic_debug/control: Operation not supported (piece 2 of 2, queries [0-9]*-152; queries 1-[0-9]* were applied, [0-9]* and after were not): ' ||
	fail "refused piece: $(head -n 1 "$tmp/err")"
grep -q '^dyndbg: query 152 "module srv class SRV_DEBUG_EVENT +m": .m. asks 1 site' "$tmp/err" ||
	fail "the refusal is not numbered through: $(grep dyndbg "$tmp/err")"
"$K" -p "$pid" read dynamic_debug/control > "$tmp/l" || fail "read"
grep -q '\]handle_request =p "core: request' "$tmp/l" || fail "piece 1 was not applied: $(cat "$tmp/l")"
grep -q '\]handle_request =_ "event: accept' "$tmp/l" || fail "piece 2 was applied: $(cat "$tmp/l")"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_split: ok"
