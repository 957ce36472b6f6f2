#!/bin/sh
# SPDX-License-Identifier: MIT
# A query that matches no site (a mistyped file name) is warned about on
# stderr, named, and --strict makes it exit status 3 (issue 40, item 6).
# Across processes, "matched no site" means in every process reached: a
# query one of them matches is no warning.  --json's stdout is unchanged.
set -u
B=${KK_BUILD:?}
K=$B/kkctl
TARGET=$B/test/progs/dynamic_debug_target
LIB=$B/test/lib/libdynamic_debug_mod.so
[ -x "$TARGET" ] && [ -x "$K" ] && [ -f "$LIB" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-strict.XXXXXX)
pids=
fail() { echo "FAIL: $*"; for p in $pids; do kill "$p"; done; rm -rf "$tmp"; exit 1; }
# two targets under a name of this test's own: one with the module loaded
ln -s "$TARGET" "$tmp/kkstrict$$"
name=kkstrict$$
name=$(printf '%.15s' "$name")
mkfifo "$tmp/f1" "$tmp/f2"
"$tmp/kkstrict$$" "$LIB" > "$tmp/f1" 2>/dev/null &
p1=$!
pids="$p1"
read -r line < "$tmp/f1" || fail "target 1 did not start"
"$tmp/kkstrict$$" > "$tmp/f2" 2>/dev/null &
p2=$!
pids="$pids $p2"
read -r line < "$tmp/f2" || fail "target 2 did not start"

# w RC ARGS...: kkctl ARGS exits RC
w() {
	want=$1; shift
	"$K" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -eq "$want" ] || fail "$*: exit $rc, want $want: $(cat "$tmp/err")"
}
q1='file dynamic_debug_targte.c +p'
w 0 -p "$p1" write dynamic_debug/control "$q1"
grep -q 'matched 0' "$tmp/out" || fail "the reply: $(cat "$tmp/out")"
grep -Fxq "kkctl: warning: query 1 \"$q1\" matched no site" "$tmp/err" || fail "no warning: $(cat "$tmp/err")"
w 3 --strict -p "$p1" write dynamic_debug/control "$q1"
grep -Fxq "kkctl: query 1 \"$q1\" matched no site" "$tmp/err" || fail "--strict: $(cat "$tmp/err")"
# a query that matches: no warning, with or without --strict
w 0 --strict -p "$p1" write dynamic_debug/control 'func target_alpha +p'
[ -s "$tmp/err" ] && fail "a query that matched: $(cat "$tmp/err")"
# the module is loaded in one of the two: no warning; the typo: one warning
w 0 --strict -n "$name" write dynamic_debug/control 'module dynamic_debug_mod +p'
[ "$(grep -c '^==> ' "$tmp/out")" -eq 2 ] || fail "-n $name: not two replies: $(cat "$tmp/out")"
[ -s "$tmp/err" ] && fail "a query one process matched: $(cat "$tmp/err")"
w 3 --strict -n "$name" write dynamic_debug/control "$(printf 'module dynamic_debug_mod +p\n%s' "$q1")"
grep -Fxq "kkctl: query 2 \"$q1\" matched no site in any of 2 processes" "$tmp/err" || fail "-n: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "-n: $(cat "$tmp/err")"
# --json: stdout is the objects, the warning on stderr
w 0 --json -n "$name" write dynamic_debug/control "$q1"
[ "$(grep -c '^{"pid":.*"ok":true,"reply":' "$tmp/out")" -eq 2 ] || fail "--json: $(cat "$tmp/out")"
grep -Fxq "kkctl: warning: query 1 \"$q1\" matched no site in any of 2 processes" "$tmp/err" ||
	fail "--json: $(cat "$tmp/err")"
# many: the first ten named, the rest counted
w 3 --strict -p "$p1" write dynamic_debug/control "$(for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo "file nosuch$i.c +p"; done)"
[ "$(wc -l < "$tmp/err")" -eq 11 ] || fail "12 queries: $(cat "$tmp/err")"
grep -Fxq 'kkctl: and 2 more queries matched no site' "$tmp/err" || fail "12 queries: $(cat "$tmp/err")"
# --strict is about dynamic_debug/control writes only
w 0 --strict -p "$p1" read static_keys
for p in $pids; do kill "$p"; wait "$p" 2>/dev/null; done
rm -rf "$tmp"
echo "kkctl_strict: ok"
