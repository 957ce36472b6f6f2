#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record against many processes that all write flat out
# (kk-bench peers-record with 100 processes: leases ran out, and kkctl did
# not end within 30 s of SIGINT).  NPROC (4; KK_MANY_NPROC=100 for the
# benchmark's count) copies of test/progs/record_flood,
# one thread each, writing continuously (more than kkctl can read on two
# loaded cores: the rings overwrite, which is counted, not a failure), are
# recorded until the file holds MIN_BYTES, then kkctl gets SIGINT.
# Asserted from kkctl's own output, the processes and the file, with no
# timing assertion (the bounds are hang guards):
#  - no lease ran out while kkctl recorded: its `renew` and `end` found its
#    session open in every process (no "no session", status 0);
#  - every site is back in every process (flood_tick =_), no session is open;
#  - kkctl ends after SIGINT (hang guard: 120 s) with status 0, and says
#    nothing but its summary line (and the time it took is printed, for the
#    end's one deadline: END_NS, 20 s, in tools/kkctl/record.c; not asserted);
#  - every line of the file parses as JSON.
set -u
KK_CTL_LIB_NAME=kkmany
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
PROG=$B/test/progs/record_flood
[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
command -v python3 > /dev/null || { echo "no python3"; exit 77; }
# 4 by default: the suite runs it beside ~600 others on two cores.  (With 50
# and the time lease alone, every lease ran out; kkctl_record_lease.sh makes
# that deterministic.)
NPROC=${KK_MANY_NPROC:-4}
MIN_BYTES=${KK_MANY_BYTES:-1000000}
Q='func flood_tick +T'

. "$KK_SRC/test/record-lib.sh"
# (what kkctl said, with any failure)
fail() { echo "FAIL: $*"; [ -s "$tmp/r.err" ] && tail -5 "$tmp/r.err"; exit 1; }
big_enough() { [ "$(stat -c %s "$tmp/r.jsonl" 2>/dev/null || echo 0)" -ge $MIN_BYTES ]; }
gone() { ! kill -0 "$1" 2>/dev/null; }
# Until CMD succeeds, at most 120 s by the clock (a hang guard: on two
# cores shared with the rest of the suite and NPROC writers, one poll may
# take long, so it is not a count of polls).
until_long() {
	what=$1
	shift
	end=$(($(date +%s) + 120))
	until "$@"; do
		[ "$(date +%s)" -le $end ] || fail "$what: not within 120 s"
		sleep 0.05
	done
}

procs=
for i in $(seq 1 $NPROC); do
	# "go" at once: each writes flood_tick continuously (a no-op until
	# kkctl switches it on), as kk-bench's peers do.
	echo go | env $control_env "$PROG" 1 1000000000000 > /dev/null 2> "$tmp/flood$i.err" &
	p=$!
	pids="$pids $p"
	procs="$procs $p"
done
for p in $procs; do until_long "endpoint of $p" served "$p"; done

# --tree $$: this run's processes only; the same test may run beside it in other passes
"$K" --tree $$ -n record_flood record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
# (events in the file: every session began, the recording runs)
until_long "$MIN_BYTES bytes recorded" big_enough
t0=$(date +%s%N)
kill -INT "$rec"
until_long "kkctl record's end after SIGINT" gone "$rec"
wait "$rec"
rc=$?
echo "kkctl ended $((($(date +%s%N) - t0) / 1000000)) ms after SIGINT, $NPROC processes" \
	"(load: $(cut -d' ' -f1-3 /proc/loadavg))"
cat "$tmp/r.err"
ended_clean "$rc" "[1-9][0-9]*"

PYTHONPATH=$KK_SRC/test python3 - "$tmp/r.jsonl" <<'EOF' || fail "the recording"
import sys
from record_jsonl import Records
events = lost = 0
pids = set()
recs = Records(sys.argv[1])
for r in recs:
    if r['type'] == 'event':
        events += 1
        pids.add(r['pid'])
    elif r['type'] == 'lost':
        lost += r['count']
print("%d events from %d processes, %d lost" % (events, len(pids), lost))
sys.exit(1 if recs.bad or not events else 0)
EOF
echo "kkctl_record_many: ok"
