#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record --format ctf reads a local process's dynamic_debug/trace_pipe_raw
# and writes its frames straight into the trace, one stream a thread (issue
# 39; docs/tracing.md, "The raw stream").  The same workload
# (test/progs/record_raw: two threads, every packed shape) is recorded on
# both paths, raw and json (KKCTL_RECORD_RAW=0), and babeltrace2 must print
# the same events, once times, the json path's message, and the layout of
# their context are left out (test/record_raw_bt.py):
#   - raw, ended by SIGINT after the round: every event is in (the end
#     reads what is left), in thread streams pid*-tid*, none in a pid* stream;
#   - json, ended by --count 32;
#   - raw with --count 20: exactly 20 events.
set -u
B=${KK_BUILD:?}
K=$B/kkctl
PROG=$B/test/progs/record_raw
BT=${KK_SRC:?}/test/record_raw_bt.py
[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
command -v babeltrace2 > /dev/null || { echo "skip: babeltrace2 is not installed (apt-get install babeltrace2)"; exit 77; }
command -v python3 > /dev/null || { echo "skip: python3 is not installed"; exit 77; }
tmp=$(mktemp -d /tmp/kk-rraw.XXXXXX)
pid= rec=
cleanup() {
	[ -z "$rec" ] || kill "$rec" 2>/dev/null
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
. "$KK_SRC/test/record-lib.sh"

mkfifo "$tmp/in" "$tmp/out"
"$PROG" 2 4 < "$tmp/in" > "$tmp/out" &
pid=$!
exec 3> "$tmp/in" 4< "$tmp/out"
read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start: $ans"
until_ok "record_raw's endpoint" served "$pid"

# record NAME ENV=V [OPTIONS]: a recording into $tmp/NAME of one round
record() {
	name=$1 e=$2
	shift 2
	env "$e" "$K" -p "$pid" record -o "$tmp/$name" "$@" 'module record_raw +T' 2> "$tmp/$name.err" &
	rec=$!
	until_ok "$name: the session" has_session "$pid"
	until_ok "$name: recording (its output made)" test -e "$tmp/$name"
	echo go >&3
	read -r ans <&4 && [ "$ans" = done ] || fail "no 'done' from record_raw: $ans"
}
# finish NAME: kkctl exited 0 (within 60 s)
finish() {
	wait_gone "$1: kkctl record" "$rec" 60
	wait "$rec" || fail "$1: kkctl record: status $? $(cat "$tmp/$1.err")"
	rec=
	until_ok "the session's end" no_session "$pid"
}

record raw KKCTL_RECORD_RAW=1
kill -INT "$rec"
finish raw
record json KKCTL_RECORD_RAW=0 --count 32
finish json
record cut KKCTL_RECORD_RAW=1 --count 20
finish cut

ls "$tmp/raw" | grep -q '^pid[0-9]*-tid[0-9]*$' || fail "raw: no thread stream: $(ls "$tmp/raw")"
ls "$tmp/raw" | grep -qx 'pid[0-9]*' && fail "raw: a process stream: $(ls "$tmp/raw")"
ls "$tmp/json" | grep -q -- '-tid' && fail "json: a thread stream: $(ls "$tmp/json")"
for t in raw json cut; do
	babeltrace2 "$tmp/$t" > "$tmp/$t.bt" 2> "$tmp/$t.bterr" || fail "babeltrace2 $t: $(cat "$tmp/$t.bterr")"
	grep -v WARN-MEANINGLESS-HEADER-FIELDS "$tmp/$t.bterr" | grep -q . &&
		fail "babeltrace2 $t said: $(cat "$tmp/$t.bterr")"
	python3 "$BT" < "$tmp/$t.bt" > "$tmp/$t.n" || fail "$t: babeltrace2's text"
done
[ "$(wc -l < "$tmp/raw.n")" -eq 32 ] || fail "raw: want 32 events, got $(wc -l < "$tmp/raw.n")"
cmp -s "$tmp/raw.n" "$tmp/json.n" ||
	fail "raw and json differ: $(diff "$tmp/raw.n" "$tmp/json.n" | head -20)"
[ "$(wc -l < "$tmp/cut.n")" -eq 20 ] || fail "--count 20: $(wc -l < "$tmp/cut.n") events"
grep -q '^kkctl: 32 records from 1 process' "$tmp/raw.err" || fail "raw's summary: $(cat "$tmp/raw.err")"
echo "kkctl_record_raw: ok"
