#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record's lease follows its holder, not the machine's speed (issue
# 39): a session ends when the kkctl that holds it is gone, and stays while
# that kkctl lives, even when its renewals come late.  Before, the lease was
# 1000 ms renewed by kkctl's reads: with 50 writers flat out on two loaded
# cores, renewals came more than 1000 ms apart and every session ended under
# a kkctl that was alive and recording (kkctl_record_many.sh).  Here the late
# renewals are made deterministic: kkctl is stopped (SIGSTOP) for three times
# its lease (3 s), so that no renewal at all reaches the writers meanwhile.
#  - every session is still open after the stop (the same id), held by kkctl;
#  - continued, kkctl records again, ends on SIGINT with status 0 and one
#    summary line that puts every site back; no session is left open;
#  - a kkctl killed with SIGKILL: its sessions are gone as soon as it is
#    (a read right after `wait` finds no session), and the site is back.
# The 3 s are the fault injected, not a bound on anything; every wait for an
# event has a hang guard and no timing assertion.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kklease
NPROC=${KK_LEASE_NPROC:-3}
Q='func flood_tick +T'
fail() { echo "FAIL: $*"; [ -s "$tmp/r.err" ] && tail -5 "$tmp/r.err"; exit 1; }
rounds_done() { [ "$(grep -c done "$tmp/out$1")" -ge "$2" ]; }
# A round of records in every writer ("go"; each answers "done").
go_round() {
	for i in $(seq 1 $NPROC); do echo go >&$((i + 2)); done
	for i in $(seq 1 $NPROC); do until_ok "round $1 of writer $i" rounds_done "$i" "$1"; done
}
in_file() { grep -q "\"pid\":$1," "$tmp/r.jsonl" 2>/dev/null; }
size_of() { stat -c %s "$tmp/r.jsonl" 2>/dev/null || echo 0; }
grew() { [ "$(size_of)" -gt "$1" ]; }

procs=
for i in $(seq 1 $NPROC); do
	mkfifo "$tmp/in$i"
	env $control_env "$PROG" 1 20000 < "$tmp/in$i" > "$tmp/out$i" 2> "$tmp/flood$i.err" &
	p=$!
	pids="$pids $p"
	procs="$procs $p"
	eval "exec $((i + 2))> \"\$tmp/in$i\""	# (its stdin stays open: it waits for "go")
done
for p in $procs; do until_ok "endpoint of $p" served "$p"; done

record() {
	# --tree $$: this run's processes only; the same test may run beside it in other passes
	"$K" --tree $$ -n record_flood record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
	rec=$!
	pids="$pids $rec"
	for p in $procs; do until_ok "session in $p" has_session "$p"; done
	until_ok "recording (its output made)" test -e "$tmp/r.jsonl"
}

# 1. kkctl stopped for 3 s, three times its lease: no session may end.
record
for p in $procs; do session_of "$p" | cut -d' ' -f2 > "$tmp/id.$p"; done
go_round 1
for p in $procs; do until_ok "records of $p in the file" in_file "$p"; done
kill -STOP "$rec"
until_ok "kkctl stopped" all_stopped "$rec"
t0=$(date +%s%N)
while [ $(($(date +%s%N) - t0)) -lt 3000000000 ]; do sleep 0.2; done
for p in $procs; do
	s=$(session_of "$p")
	case $s in
	"session $(cat "$tmp/id.$p") "*) ;;
	*) kill -CONT "$rec"; fail "process $p: kkctl alive (stopped 3 s), but its session ended: $s" ;;
	esac
done
kill -CONT "$rec"
size=$(size_of)
go_round 2
until_ok "records after the stop" grew "$size"
kill -INT "$rec"
until_ok "kkctl record's end after SIGINT" gone "$rec"
wait "$rec"
rc=$?
cat "$tmp/r.err"
ended_clean "$rc" "$NPROC"

# 2. kkctl killed with SIGKILL: its sessions end with it, not a lease later.
rm -f "$tmp/r.jsonl"
record
kill -KILL "$rec"
wait "$rec" 2>/dev/null
for p in $procs; do
	s=$(session_of "$p")
	[ "$s" = "no session" ] || fail "process $p: kkctl is gone, its session is not: $s"
	site_off "$p" || fail "process $p: flood_tick is still switched on after kkctl's SIGKILL"
done
echo "kkctl_record_lease: ok"
