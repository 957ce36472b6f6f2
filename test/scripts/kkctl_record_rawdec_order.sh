#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record --format jsonl by trace_pipe_raw writes records in time order
# when a reply is full (docs/tracing.md, "The raw stream"): a reply sends
# each thread's ring in ring order, its 1 MiB shared by the rings, so it is
# not a time prefix across threads, and the merge may only take as sent
# what is older than the earliest of the threads' last records.  Before
# (the latest), a thread's older records came in the next read after the
# merge had written the other thread's newer ones: out of order.
# test/progs/record_raw's two threads write 40000 records into 8 MiB rings
# before kkctl starts (KK_DYNDBG='+T'), so that its first reads are full.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrord record_raw
fail() {
	echo "FAIL: $*"
	exit 1
}
command -v python3 > /dev/null || { echo "skip: python3 is not installed"; exit 77; }

mkfifo "$tmp/in" "$tmp/out"
KK_DYNDBG='+T' env $control_env "$PROG" 2 5000 < "$tmp/in" > "$tmp/out" 2> "$tmp/prog.err" &
p=$!
pids="$pids $p"
exec 3> "$tmp/in" 4< "$tmp/out"
IFS= read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start: $ans"
until_ok "record_raw's endpoint" served "$p"
"$K" -p "$p" write dynamic_debug/buffer_size_kb 8192 || fail "buffer_size_kb"
echo go >&3
IFS= read -r ans <&4 && [ "$ans" = done ] || fail "no 'done' from record_raw: $ans"
"$K" -p "$p" record --format jsonl -o "$tmp/t.jsonl" --count 40000 'module record_raw +T' \
	2> "$tmp/rec.err" || fail "kkctl record: $(cat "$tmp/rec.err")"
grep -q "^kkctl: 40000 records from 1 process to .*; lost 0;" "$tmp/rec.err" ||
	fail "kkctl said: $(cat "$tmp/rec.err")"
python3 - "$tmp/t.jsonl" <<'PY' || fail "records out of time order"
import json, sys
last, n = None, 0
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("type") != "event":
        continue
    n += 1
    if last is not None and e["mono"] < last:
        print("event %d: mono %d after %d" % (n, e["mono"], last))
        sys.exit(1)
    last = e["mono"]
print("%d events in order" % n)
PY
echo quit >&3
echo "kkctl_record_rawdec_order: ok"
