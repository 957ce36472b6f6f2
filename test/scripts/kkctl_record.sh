#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record (issue 39): a session over a master and two workers
# (test/progs/record_trio), recorded to JSON Lines and text:
#  1. SIGINT: records of all three processes, in time order, each process's
#     records exactly those it wrote; every site back as it was, no session
#     left open; a second kkctl record on the same processes is refused and
#     changes nothing of the first's;
#  2. a worker forked during the session is picked up (its records are in),
#     a worker killed during it is marked "exited"; SIGTERM ends it (text);
#  3. --count N: exactly N records, then kkctl ends by itself;
#  4. kkctl killed with SIGKILL: the lease puts every site back (a bounded
#     wait for the event, not a timing assertion);
#  5. bad input -- an unknown format, an unwritable output path, a selection
#     that matches no process, a query that matches no site -- is one line
#     and changes nothing (no session, no site, no output file).
set -u
KK_CTL_LIB_NAME=kkrecord
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
PROG=$B/test/progs/record_trio
[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
Q='func trio_tick +T'

. "$KK_SRC/test/record-lib.sh"
trio_start
ask() { trio_ask "$1"; }
all_sessions() { for p in $procs; do has_session "$p" || return 1; done; }
no_sessions() { for p in $procs; do no_session "$p" || return 1; done; }
snapshot() { for p in $procs; do "$K" -p "$p" read dynamic_debug/control > "$tmp/ctl.$p.$1" || fail "control of $p"; done; }
same_sites() {
	snapshot after
	for p in $procs; do
		cmp -s "$tmp/ctl.$p.before" "$tmp/ctl.$p.after" ||
			fail "$1: the sites of $p are not back: $(diff "$tmp/ctl.$p.before" "$tmp/ctl.$p.after" | head -5)"
	done
}
events_of() { grep -c "\"type\":\"event\",\"host\":\"\",\"pid\":$2," "$1"; }
has_events() { [ "$(events_of "$1" "$2")" -ge "$3" ]; }

ask pids
set -- $ans
master=$2 w1=$3 w2=$4
procs="$master $w1 $w2"
for p in $procs; do until_ok "endpoint of $p" served "$p"; done
no_sessions || fail "a session before any kkctl record: $(session_of "$master")"
snapshot before

# ---- 1. SIGINT, jsonl; a second record is refused -----------------------------------
"$K" --tree "$master" record --format jsonl -o "$tmp/r1.jsonl" "$Q" 2> "$tmp/r1.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions in all three" all_sessions
until_ok "r1: recording (its output made)" test -e "$tmp/r1.jsonl"
# (timeout: a record that is not refused would record until interrupted)
timeout -s INT 60 "$K" --tree "$master" record --format jsonl -o "$tmp/r2.jsonl" "$Q" > /dev/null 2> "$tmp/r2.err"
rc=$?
[ "$rc" -eq 1 ] || fail "a second record on the same processes: status $rc"
grep -q 'busy' "$tmp/r2.err" || fail "a second record: $(cat "$tmp/r2.err")"
[ -e "$tmp/r2.jsonl" ] && fail "a refused record made its output file"
all_sessions || fail "the refused record ended the first's sessions"
ask "emit 3"
for p in $procs; do until_ok "records of $p" has_events "$tmp/r1.jsonl" "$p" 3; done
kill -INT "$rec"
wait "$rec"
rc=$?
[ "$rc" -eq 0 ] || fail "SIGINT: status $rc: $(cat "$tmp/r1.err")"
for p in $procs; do
	[ "$(events_of "$tmp/r1.jsonl" "$p")" -eq 3 ] ||
		fail "process $p: $(events_of "$tmp/r1.jsonl" "$p") records, want 3"
done
grep -q '"message":"trio tick n=2 who=w2","args":\[{"name":"n","type":"int","value":2},{"name":"who","type":"string","value":"w2"}\]' "$tmp/r1.jsonl" ||
	fail "no typed record of w2: $(grep "\"pid\":$w2," "$tmp/r1.jsonl" | head -1)"
sed -n 's/.*"ts":\([0-9]*\),.*/\1/p' "$tmp/r1.jsonl" | sort -c -n 2>/dev/null ||
	fail "records not in time order"
no_sessions || fail "SIGINT: a session left open: $(session_of "$master")"
same_sites SIGINT

# ---- 2. a forked worker is picked up, a killed one exits; SIGTERM, text ---------------
"$K" --tree "$master" record --format text -o "$tmp/r3.txt" "$Q" 2> "$tmp/r3.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions (2)" all_sessions
ask spawn
w3=${ans#ok }
ask "emit 2"
until_ok "records of the forked worker $w3" grep -q "^record_trio-$w3 .*trio tick n=1 who=w3\$" "$tmp/r3.txt"
ask "kill 1"
until_ok "w1 ($w1) exited" grep -q "^record_trio-$w1 .*<exited>\$" "$tmp/r3.txt"
kill -TERM "$rec"
wait "$rec"
rc=$?
[ "$rc" -eq 0 ] || fail "SIGTERM: status $rc: $(cat "$tmp/r3.err")"
for p in $master $w2; do
	grep -q "^record_trio-$p .*trio tick n=1 who=" "$tmp/r3.txt" || fail "text: no record of $p"
done
procs="$master $w2"
no_sessions || fail "SIGTERM: a session left open"
same_sites SIGTERM
no_session "$w3" || fail "SIGTERM: the forked worker's session is open: $(session_of "$w3")"
"$K" -p "$w3" read dynamic_debug/control | grep -q '=T' &&
	fail "SIGTERM: the forked worker's site still records"

# ---- 3. --count ------------------------------------------------------------------------
"$K" --tree "$master" record --format jsonl --count 4 --duration 60 -o "$tmp/r4.jsonl" "$Q" 2> "$tmp/r4.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions (3)" all_sessions
ask "emit 3"
wait "$rec"
rc=$?
[ "$rc" -eq 0 ] || fail "--count: status $rc: $(cat "$tmp/r4.err")"
[ "$(grep -c '"type":"event"' "$tmp/r4.jsonl")" -eq 4 ] ||
	fail "--count 4: $(grep -c '"type":"event"' "$tmp/r4.jsonl") records"
no_sessions || fail "--count: a session left open"
same_sites --count

# ---- 4. SIGKILL: the lease puts the sites back -----------------------------------------
"$K" --tree "$master" record --format jsonl -o "$tmp/r5.jsonl" "$Q" 2> "$tmp/r5.err" &
rec=$!
until_ok "sessions (4)" all_sessions
"$K" -p "$master" read dynamic_debug/control | grep -q 'trio_tick =T' || fail "not switched on"
kill -KILL "$rec"
wait "$rec" 2>/dev/null
until_ok "the lease ending every session" no_sessions
same_sites SIGKILL

# ---- 5. bad input: one line, nothing changed --------------------------------------------
one_line() {	# one_line NAME WANT-STATUS KKCTL-ARGS...
	what=$1 want=$2
	shift 2
	timeout -s INT 60 "$K" "$@" > "$tmp/bad.out" 2> "$tmp/bad.err"
	rc=$?
	[ "$rc" -eq "$want" ] || fail "$what: status $rc, want $want: $(cat "$tmp/bad.err")"
	[ "$(wc -l < "$tmp/bad.err")" -eq 1 ] || fail "$what: not one line: $(cat "$tmp/bad.err")"
	[ -s "$tmp/bad.out" ] && fail "$what: wrote $(head -2 "$tmp/bad.out")"
	[ -e "$tmp/bad.jsonl" ] && fail "$what: made its output file"
	no_sessions || fail "$what: a session left open"
	same_sites "$what"
}
one_line "unknown format" 2 --tree "$master" record --format nope -o "$tmp/bad.jsonl" "$Q"
one_line "unwritable path" 1 --tree "$master" record --format jsonl -o "$tmp/no/dir/x" "$Q"
one_line "no process" 1 -n no_such_kk_proc record --format jsonl -o "$tmp/bad.jsonl" "$Q"
one_line "no site" 1 --tree "$master" record --format jsonl -o "$tmp/bad.jsonl" \
	'func no_such_kk_function +T'
grep -q 'matches no site' "$tmp/bad.err" || fail "no site: $(cat "$tmp/bad.err")"

echo quit >&3
wait "$trio" || fail "record_trio exited with status $?"
echo "kkctl_record: ok"
