#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record -o FIFO, a fifo nobody opens for reading: opening it for
# writing waits for a reader that never comes (`mkfifo o; kkctl record -o o`
# and the reader forgotten or crashed).  Asserted from state, not timing:
#  - SIGINT ends kkctl (before: its reader thread sat in open(2), with the
#    signals blocked, the main thread waited for it, and neither SIGINT nor
#    SIGTERM ended kkctl: only SIGKILL did);
#  - it says why in one line and exits non-zero, and the site is back and
#    the session ended (nothing stays on in the process until its lease);
#  - a reader that opens the fifo late gets every record.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkfifo
Q='func flood_tick +T'
[ "$(uname -m)" = x86_64 ] || { echo "where kkctl waits is read as x86-64's system call numbers"; exit 77; }

flood_start -- 1 1000
mkfifo "$tmp/o"
for sig in INT TERM; do
	"$K" -p "$flood" record --format jsonl -o "$tmp/o" "$Q" 2> "$tmp/r.err" &
	rec=$!
	pids="$pids $rec"
	# (kkctl waits for a reader of the fifo, after its session began: in
	# open(2) before, in poll(NULL, 0, ms) between tries of a non-blocking
	# open now, syscall 7 on x86-64)
	waiting() { cat "/proc/$rec/task"/*/wchan 2>/dev/null | grep -q wait_for_partner ||
		cat "/proc/$rec/task"/*/syscall 2>/dev/null | grep -q '^7 0x0 0x0 '; }
	until_ok "kkctl waiting for a reader of the fifo" waiting
	kill -"$sig" "$rec"
	wait_gone "kkctl after SIG$sig, its fifo never opened for reading" "$rec" 60
	wait "$rec"
	rc=$?
	cat "$tmp/r.err"
	[ "$rc" -eq 1 ] || fail "kkctl exited $rc, not 1, although it wrote nothing (SIG$sig)"
	grep -q "^kkctl: $tmp/o: " "$tmp/r.err" || fail "no line says why nothing was written (SIG$sig)"
	site_off "$flood" || fail "flood_tick is on after kkctl ended (SIG$sig)"
	no_session "$flood" || fail "a session is open after kkctl ended (SIG$sig)"
done

# A reader that comes late still gets every record, and kkctl's writes wait
# for it as they would have (its descriptor is blocking again: 1000 events
# are about 150 KB of JSON, more than a pipe holds).
"$K" -p "$flood" record --format jsonl -o "$tmp/o" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "kkctl waiting for a reader of the fifo" waiting
exec 6< "$tmp/o"
flood_go
stuck() { grep -q pipe_write "/proc/$rec/wchan"; }
until_ok "kkctl blocked writing to the fifo (a full pipe)" stuck
cat <&6 > "$tmp/got" &
exec 6<&-
kill -INT "$rec"
wait_gone "kkctl after SIGINT, its reader reading" "$rec" 60
wait "$rec" || fail "kkctl record with a late reader: status $?"
cat "$tmp/r.err"
n=$(grep -c '"flood round=1 i=' "$tmp/got")
[ "$n" -eq 1000 ] || fail "the late reader got $n of 1000 events"

echo quit >&3
wait "$flood" || fail "record_flood exited with status $?"
echo "kkctl_record_fifo: ok"
