#!/bin/sh
# SPDX-License-Identifier: MIT
# An object's sites become reachable together (docs/control.md, "When the
# endpoint starts"): a process stopped between the constructor that
# registers its static-key sites (priority 101) and the one that registers
# its pr_debug sites (102) has no endpoint yet, so a query sent then is
# refused, never answered "matched 0" for sites the program has.  After the
# constructors the same query matches the site.
# (Before: the endpoint listened from the first table on, and a kkctl that
# waited for it, as a session or record does, switched nothing.)
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkwindow startup_register_window

mkfifo "$tmp/in" "$tmp/out"
"$PROG" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
p=$!
pids="$pids $p"
exec 3> "$tmp/in" 4< "$tmp/out"
IFS= read -r ans <&4 || fail "the program did not start: $(cat "$tmp/err")"
case $ans in
"paused sites=0 "*)
	# the fallback build has no static-key sites: its one table is the
	# pr_debug one, and the pause comes before it (nothing to split)
	[ "${KK_TEST_LABEL:-default}" = fallback ] ||
		fail "the pause ran before the static-key constructor ($ans): it shows nothing"
	;;
"paused sites="*" endpoint=0") ;;
*) fail "between the two constructors: $ans (the endpoint listens with half the object)" ;;
esac

out=$("$K" -p "$p" write dynamic_debug/control 'func window_fn +p' 2>&1)
case $out in
*"matched 0"*) fail "a query between the constructors: $out" ;;
*"matched 1 changed 1"*) fail "answered before the program's constructors ran: $out" ;;
*"no control endpoint"*) ;;
*) fail "a query between the constructors: $out" ;;
esac

echo go >&3
IFS= read -r ans <&4 || fail "the program did not reach main: $(cat "$tmp/err")"
[ "$ans" = main ] || fail "after the pause: $ans"
served "$p" || fail "no endpoint in main"
out=$("$K" -p "$p" write dynamic_debug/control 'func window_fn +p' 2>&1)
case $out in *"matched 1 changed 1"*) ;; *) fail "the query in main: $out" ;; esac
exec 3>&-
wait "$p" || fail "exit $?: $(cat "$tmp/err")"
grep -q 'window 1' "$tmp/err" || fail "window_fn did not print after +p: $(cat "$tmp/err")"
echo "ok: no endpoint between an object's two tables; the query in main matched its site"
