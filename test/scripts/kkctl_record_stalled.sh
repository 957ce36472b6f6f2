#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record whose output nobody reads (`kkctl record -o - | consumer`
# with the consumer stuck): a fifo held open here and never read, so that
# kkctl's writer blocks in write(2) for good.  Then SIGINT, then SIGINT
# again.  Asserted from state, not timing:
#  - the first SIGINT puts the site back and ends the session although kkctl
#    cannot write (before: its main thread, stuck in the write, never began
#    the end, and flood_tick stayed switched on until kkctl was killed);
#  - at the end too, kkctl holds no more records than while recording
#    (READ_ROOM, 65536, and the reads under way): two rings hold all 240000
#    events (before: all of them were read into kkctl's memory);
#  - the second SIGINT ends kkctl at once (before: it went back into the
#    write, and only the hang guard ended it): it exits, and says that it
#    did not write everything and why, in one line each;
#  - what the fifo got is JSON Lines (only the last may be cut).
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkstall
command -v python3 > /dev/null || { echo "no python3"; exit 77; }
Q='func flood_tick +T'

# (where kkctl blocks is read from /proc/PID/wchan: it must name functions)
sleep 30 &
s=$!
pids="$pids $s"
until_ok "sleep asleep" grep -q sleep "/proc/$s/wchan"
kill "$s"

N=120000
flood_start -- 2 $N
"$K" -p "$flood" write dynamic_debug/buffer_size_kb 16384 > /dev/null || fail "buffer_size_kb"
mkfifo "$tmp/o"
exec 5<> "$tmp/o"	# (a reader that never reads: kkctl's open does not wait)
"$K" -p "$flood" record --format jsonl -o "$tmp/o" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "the session begun" has_session "$flood"
flood_go	# (about 30 MB of JSON for a fifo of 64 KiB)
stuck() { grep -q pipe_write "/proc/$rec/wchan"; }
until_ok "kkctl blocked writing to the fifo" stuck

kill -INT "$rec"
until_ok "the site back after the first SIGINT, the output still blocked" site_off "$flood"
until_ok "the session ended after the first SIGINT" no_session "$flood"
gone "$rec" && fail "kkctl exited although its output could not take the rest"
# Its reader is done (it paused, and the end's deadline, 20 s, cut it; before,
# it read the rings empty): only the main thread is left, stuck in the write.
one_thread() { [ "$(ls "/proc/$rec/task" | wc -l)" -eq 1 ]; }
i=0
until one_thread; do
	i=$((i + 1))
	[ $i -le 1800 ] || fail "kkctl's reader still runs 90 s after the first SIGINT"
	sleep 0.05
done

kill -INT "$rec"
wait_gone "kkctl after the second SIGINT" "$rec" 60
wait "$rec"
rc=$?
cat "$tmp/r.err"
[ "$rc" -ne 0 ] || fail "kkctl exited 0 although the rest of the recording was not written"
grep -q "^kkctl: $tmp/o: not written to the end: a second signal ended kkctl" "$tmp/r.err" ||
	fail "no line says why the output stops short"
grep -q "records from 1 process to $tmp/o;.* [1-9][0-9]* records not written (a second signal)" \
	"$tmp/r.err" || fail "the summary does not count the records not written"
site_off "$flood" || fail "flood_tick is on after kkctl ended"
held=$(sed -n 's/.* \([0-9]*\) records not written.*/\1/p' "$tmp/r.err")
lost=$(sed -n 's/.*; lost \([0-9]*\);.*/\1/p' "$tmp/r.err")
[ "$lost" -eq 0 ] || fail "the ring lost records: it does not hold them all"
# (65536, and at most 1 MiB of raw records more: the last read, about 16000)
[ "$held" -le $((65536 + 20000)) ] || fail "kkctl held $held records at the end"

python3 - <<'EOF' || fail "what the fifo got"
import json, os
os.set_blocking(5, False)
data = b''
while True:
    try:
        b = os.read(5, 1 << 16)
    except BlockingIOError:
        break
    if not b:
        break
    data += b
lines = data.split(b'\n')[:-1]	# (the last, cut or empty, is not checked)
for l in lines:
    json.loads(l)
print("%d bytes, %d whole lines of JSON" % (len(data), len(lines)))
if not lines:
    raise SystemExit("no whole line")
EOF

echo quit >&3
wait "$flood" || fail "record_flood exited with status $?"
echo "kkctl_record_stalled: ok"
