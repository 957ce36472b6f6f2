#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record of a process in a container shape: record_flood runs as a
# throwaway uid S in `unshare -U -r -p -f` (its own user and pid namespaces,
# where it is pid 1).  Host root records it in every format, each session
# ended by SIGINT once a round of N records is written (a 1 MiB ring holds
# them all: the end reads what is left):
#  - every round's records are in the file, none lost, and the summary puts
#    the one site back (the process's control file shows it off after);
#  - jsonl: "pid" is the host's pid, "vpid" the namespace's (1);
#  - ctf: babeltrace2 (when installed) reads it with vpid 1.
# kkctl reaches the endpoint by entering the namespace (docs/control.md,
# "User namespaces"); the decoded formats read trace_pipe_raw there.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
for c in unshare setpriv; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
unshare -U -r -p -f true 2>/dev/null || { echo "skip: unshare -U -r -p refused here"; exit 77; }
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrecuserns
N=2000
S=$((3994000 + $$ % 1000))
mkfifo "$tmp/in" "$tmp/out"
chmod 666 "$tmp/in" "$tmp/out"
as "$S" unshare -U -r -p -f env $control_env "$PROG" 1 $N < "$tmp/in" > "$tmp/out" 2> "$tmp/flood.err" &
pids="$pids $!"
exec 3> "$tmp/in" 4< "$tmp/out"
IFS= read -r ans <&4 || fail "record_flood did not start: $(cat "$tmp/flood.err")"
[ "$ans" = ready ] || fail "record_flood: $ans"
# (its host pid: the child of unshare's fork)
p=$(pgrep -u "$S" -f "$PROG 1 $N" | while read -r q; do
	[ "$(sed -n 's/^NSpid:[[:space:]]*[0-9]*[[:space:]]*//p' /proc/$q/status)" = 1 ] && echo "$q"; done)
[ -n "$p" ] || fail "no record_flood that is pid 1 of its namespace"
pids="$pids $p"
# (its socket is @kernelkit/1, the namespace's pid: kkctl finds it)
reached() { "$K" -p "$1" read dynamic_debug/control 2>/dev/null | grep -q flood_tick; }
until_ok "endpoint of $p" reached "$p"

round=0
for fmt in jsonl ctf text perfetto; do
	round=$((round + 1))
	out=$tmp/r.$fmt
	"$K" -p "$p" record --format $fmt -o "$out" 'func flood_tick +T' 2> "$tmp/r.err" &
	rec=$!
	until_ok "kkctl record --format $fmt began" test -e "$out"
	echo go >&3
	IFS= read -r ans <&4 || fail "record_flood: no answer to round $round"
	[ "$ans" = done ] || fail "record_flood, round $round: $ans"
	kill -INT $rec
	wait $rec || fail "$fmt: kkctl record exited $?: $(cat "$tmp/r.err")"
	grep -q "^kkctl: $N records from 1 process to .*; lost 0; sites put back 1," "$tmp/r.err" ||
		fail "$fmt: $(cat "$tmp/r.err")"
	site_off "$p" || fail "$fmt: flood_tick still on after the session"
done
n=$(grep -c '"type":"event"' "$tmp/r.jsonl")
[ "$n" = $N ] || fail "jsonl: $n events, want $N"
grep '"type":"event"' "$tmp/r.jsonl" | grep -v "\"pid\":$p,\"vpid\":1," | head -1 | grep . &&
	fail "jsonl: an event without the host pid $p and vpid 1"
if command -v babeltrace2 >/dev/null; then
	n=$(babeltrace2 "$tmp/r.ctf" 2>&1 | grep -c 'vpid = 1 }')
	[ "$n" = $N ] || fail "ctf: babeltrace2 shows $n events of vpid 1, want $N: $(babeltrace2 "$tmp/r.ctf" 2>&1 | head -3)"
else
	echo "note: babeltrace2 not installed, the ctf directory was not read back"
fi
echo "ok: a process in its own user and pid namespaces, recorded in 4 formats, sites back each time"
