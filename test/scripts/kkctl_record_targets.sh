#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record with more processes than its first table holds (16, doubled
# as it fills): every one is begun, recorded and put back, and kkctl exits
# 0.  (The table grew only when realloc() moved it: a realloc() that grew it
# in place left its capacity at 16, and the 33rd process on was written past
# its end: kkctl -n peer-kk record with 100 processes died of SIGSEGV, in
# malloc, before its first event; issue 39's benchmark showed "n/a".  ASan and
# valgrind always move a block on realloc(), so the default build is the one
# that shows it.)  NPROC (100) idle copies of test/progs/record_flood, each
# named by -p.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrtargets
NPROC=${KK_TARGETS_NPROC:-100}

# (one fifo, open read-write here, is every copy's stdin: none gets EOF)
mkfifo "$tmp/in"
exec 3<> "$tmp/in"
sel=
for i in $(seq $NPROC); do
	env $control_env "$PROG" 1 1 < "$tmp/in" > "$tmp/out$i" 2> /dev/null &
	pids="$pids $!"
	sel="$sel -p $!"
done
i=0
for p in $pids; do
	i=$((i + 1))
	until_ok "record_flood $p" grep -qx ready "$tmp/out$i"
	until_ok "endpoint of $p" served "$p"
done
# shellcheck disable=SC2086
timeout -s KILL 120 "$K" $sel record --format jsonl --duration 0.5 -o "$tmp/r.jsonl" \
	'func flood_tick +T' 2> "$tmp/r.err"
rc=$?
cat "$tmp/r.err"
[ "$rc" -eq 0 ] || fail "kkctl record with $NPROC processes: status $rc"
grep -q "sites put back $NPROC," "$tmp/r.err" || fail "not every process's site was put back"
echo "ok: $NPROC processes"
exit 0
