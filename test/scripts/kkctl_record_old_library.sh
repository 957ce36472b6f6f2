#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record on a process whose library is older than `begin LEASE_MS
# held` (daemons started before an upgrade still run it): that library
# refuses the word, "bad lease '1000 held': expected 'begin LEASE_MS', ...",
# and kkctl begins again with the plain `begin 1000`, a time lease that its
# reads renew (docs/control.md, "Recording a session").  The old library is
# played by test/progs/record_old_library, an endpoint that refuses as it
# did and passes every other request to a record_flood (today's library).
#  1. the session begins (one refused held begin, then the plain one; no
#     later request says held), records come, SIGINT ends it: status 0, one
#     summary line that puts the site back, no session left;
#  2. kkctl killed with SIGKILL: the time lease ends the session and puts
#     the site back (a bounded wait for the event).
# Before: kkctl reported the refusal and recorded nothing (status 1).
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkoldlib
OLD=$B/test/progs/record_old_library
[ -x "$OLD" ] || { echo "not built"; exit 77; }
Q='func flood_tick +T'
fail() {
	echo "FAIL: $*"
	[ -s "$tmp/r.err" ] && tail -5 "$tmp/r.err"
	[ -s "$tmp/old.log" ] && tail -5 "$tmp/old.log"
	exit 1
}

mkfifo "$tmp/in"
env $control_env "$PROG" 1 100 < "$tmp/in" > "$tmp/out" 2> "$tmp/flood.err" &
p=$!
pids="$pids $p"
exec 3> "$tmp/in"	# (its stdin stays open: it waits for "go")
until_ok "endpoint of $p" served "$p"
"$OLD" "$p" > "$tmp/old.log" 2> "$tmp/old.err" &
o=$!
pids="$pids $o"
until_ok "the old library's endpoint ($o)" served "$o"
procs=$p	# (ended_clean's)

# record: kkctl record through the old library's endpoint, until the
# session is open in record_flood (or kkctl is gone)
record() {
	"$K" -p "$o" record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
	rec=$!
	pids="$pids $rec"
	until_ok "a session in $p, or kkctl's exit" begun_or_gone
	has_session "$p" || { wait "$rec"; fail "kkctl record did not begin (status $?)"; }
}
begun_or_gone() { has_session "$p" || gone "$rec"; }
count() { grep -c "$1" "$tmp/old.log"; }

# 1. begun plainly, recorded, ended by SIGINT
record
echo go >&3
until_ok "record_flood's round" grep -q done "$tmp/out"
until_ok "records in the file" grep -q '"function":"flood_tick"' "$tmp/r.jsonl"
kill -INT "$rec"
until_ok "kkctl record's end after SIGINT" gone "$rec"
wait "$rec"
rc=$?
cat "$tmp/r.err"
ended_clean "$rc" 1
[ "$(count '|begin 1000 held refused$')" -eq 1 ] || fail "want one held begin, refused"
[ "$(count '^write dynamic_debug/session|begin 1000 passed$')" -eq 1 ] ||
	fail "want one plain begin after the refusal"
grep -v '|begin 1000 held refused$' "$tmp/old.log" | grep -q held &&
	fail "a request after the refusal says held: $(grep -v refused "$tmp/old.log" | grep held)"
grep -q '^write dynamic_debug/session|end [0-9a-f]\{16\} passed$' "$tmp/old.log" ||
	fail "no end went to the session"

# 2. kkctl killed: the time lease ends the session
rm -f "$tmp/r.jsonl"
record
kill -KILL "$rec"
wait "$rec" 2>/dev/null
until_ok "the session's end by its lease, after kkctl's SIGKILL" no_session "$p"
site_off "$p" || fail "flood_tick still on after the lease ended"
[ -s "$tmp/flood.err" ] && fail "record_flood said: $(cat "$tmp/flood.err")"
echo "kkctl_record_old_library: ok"
