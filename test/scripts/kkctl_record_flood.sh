#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record against processes that write flat out (issue 39's
# kk-bench peers-record findings): NPROC copies of test/progs/record_flood,
# 2 threads each, every ring 16 MiB (buffer_size_kb 16384: each process holds
# far more JSON than one reply may carry, which a read that renders all it
# has cannot send whole nor in time), each thread writing N events with no
# pause, then kkctl record is stopped with SIGINT.  Asserted from kkctl's own
# output and the file, not from timing:
#  - no target dropped, nothing malformed: kkctl exits 0, says nothing but its
#    summary line, and every line of the file parses as JSON;
#  - the lease never expired: kkctl's `end` found its session open in every
#    process (the summary: every site put back; no "no session");
#  - nothing read twice, nothing dropped by a read: per process, the events
#    (round, thread, i) are distinct, and events + lost == written (2 x N).
set -u
KK_CTL_LIB_NAME=kkflood
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
PROG=$B/test/progs/record_flood
[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
command -v python3 > /dev/null || { echo "no python3"; exit 77; }
NPROC=3
N=80000
Q='func flood_tick +T'

. "$KK_SRC/test/record-lib.sh"
all_sessions() { for p in $procs; do has_session "$p" || return 1; done; }

procs=
for i in $(seq 1 $NPROC); do
	mkfifo "$tmp/in$i" "$tmp/out$i"
	env $control_env "$PROG" 2 $N < "$tmp/in$i" > "$tmp/out$i" 2> "$tmp/flood$i.err" &
	p=$!
	pids="$pids $p"
	procs="$procs $p"
	eval "exec $((2 + 2 * i))> \"\$tmp/in$i\" $((3 + 2 * i))< \"\$tmp/out$i\""
	IFS= read -r ans <&$((3 + 2 * i)) || fail "record_flood $i did not start"
	[ "$ans" = ready ] || fail "record_flood $i: $ans"
	until_ok "endpoint of $p" served "$p"
	"$K" -p "$p" write dynamic_debug/buffer_size_kb 16384 > /dev/null ||
		fail "buffer_size_kb of $p"
done

# --tree $$: this run's processes only; the same test runs beside it in other passes
timeout -s KILL 600 "$K" --tree $$ -n record_flood record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "sessions in all" all_sessions
until_ok "recording (its output made)" test -e "$tmp/r.jsonl"
for i in $(seq 1 $NPROC); do echo go >&$((2 + 2 * i)); done
for i in $(seq 1 $NPROC); do
	IFS= read -r ans <&$((3 + 2 * i)) || fail "record_flood $i: no answer to go"
	[ "$ans" = done ] || fail "record_flood $i: $ans"
done
kill -INT "$rec"
wait "$rec"
rc=$?
cat "$tmp/r.err"
ended_clean "$rc" "$NPROC"

PYTHONPATH=$KK_SRC/test python3 - "$tmp/r.jsonl" $N $procs <<'EOF' || fail "the recording"
import sys
from record_jsonl import Records
path, n, procs = sys.argv[1], int(sys.argv[2]), [int(p) for p in sys.argv[3:]]
seen, lost = {p: set() for p in procs}, {p: 0 for p in procs}
recs = Records(path)
for r in recs:
    if r['type'] == 'lost':
        lost[r['pid']] += r['count']
    elif r['type'] == 'event':
        a = {x['name']: x['value'] for x in r['args']}
        key = (r['tid'], a['round'], a['i'])
        if key in seen[r['pid']]:
            print("process %d: an event read twice: %r" % (r['pid'], key))
            sys.exit(1)
        seen[r['pid']].add(key)
if recs.bad:
    print("%d lines do not parse" % recs.bad)
    sys.exit(1)
for p in procs:
    got = len(seen[p]) + lost[p]
    print("process %d: %d events + %d lost of %d written" % (p, len(seen[p]), lost[p], 2 * n))
    if got != 2 * n:
        sys.exit(1)
EOF

for i in $(seq 1 $NPROC); do echo quit >&$((2 + 2 * i)); done
for p in $procs; do wait "$p" || fail "record_flood $p exited with status $?"; done
echo "kkctl_record_flood: ok"
