#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/trace_pipe_raw (issue 39; docs/tracing.md, "The raw stream"):
# test/progs/record_raw writes every packed shape (ints of each width, %hhd,
# %c, %p, doubles, a long double, strings and a NULL one, %m, '*' width and
# precision, %%, a record cut at %ls) from two threads, and
# test/record_raw.py checks each reply frame by frame:
#   - a round read raw and the same round read from trace_pipe_json give the
#     same events, thread by thread, with the same names and values;
#   - no 8 bytes of a reply are an address of a file the process maps, its
#     heap or its stack (the site and
#     format pointers of the ring's records are not sent);
#   - a read is bounded: 40000 records come in several replies, none larger
#     than 1 MiB and a record, every one exactly once, in order; each reply's
#     HEAD says up to when it is complete, the first record it left when it
#     stopped full, and no later reply has a record before that.
set -u
B=${KK_BUILD:?}
K=$B/kkctl
PROG=$B/test/progs/record_raw
RAW=$B/test/progs/control_raw
PY=${KK_SRC:?}/test/record_raw.py
[ -x "$PROG" ] && [ -x "$RAW" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
command -v python3 > /dev/null || { echo "skip: python3 is not installed"; exit 77; }
tmp=$(mktemp -d /tmp/kk-traw.XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null
	exec 3>&- 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# round: one "go", answered "done" (the program's stdout is a pipe we read)
round() {
	echo go >&3
	read -r ans <&4 && [ "$ans" = done ] || fail "no 'done' from record_raw: $ans"
}
# read_raw FILE: one read of trace_pipe_raw into FILE (status line, body)
read_raw() {
	timeout 600 "$RAW" "$pid" "read dynamic_debug/trace_pipe_raw" > "$1" || fail "control_raw: rc $?"
	[ "$(head -n 1 "$1")" = 0 ] || fail "trace_pipe_raw: status $(head -n 1 "$1")"
}

mkfifo "$tmp/in" "$tmp/out"
KK_DYNDBG='+T' "$PROG" 2 4 < "$tmp/in" > "$tmp/out" &
pid=$!
exec 3> "$tmp/in" 4< "$tmp/out"
read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start: $ans"

# ---- the same events as trace_pipe_json -------------------------------------------
round
read_raw "$tmp/r1"
round
timeout 600 "$RAW" "$pid" "read dynamic_debug/trace_pipe_json" > "$tmp/j1" || fail "json read"
tail -n +2 "$tmp/j1" > "$tmp/j1.body"
python3 "$PY" decode "$tmp/r1" > "$tmp/d.raw" || fail "a bad reply"
python3 "$PY" json "$tmp/j1.body" > "$tmp/d.json" || fail "trace_pipe_json's lines"
[ "$(wc -l < "$tmp/d.raw")" -eq 32 ] || fail "want 32 events raw, got: $(cat "$tmp/d.raw")"
# (the threads' ids are the same in both rounds; their order in time is not)
sort "$tmp/d.raw" > "$tmp/s.raw"
sort "$tmp/d.json" > "$tmp/s.json"
cmp -s "$tmp/s.raw" "$tmp/s.json" ||
	fail "raw and json differ: $(diff "$tmp/s.raw" "$tmp/s.json" | head -20)"
grep -q '"name", "(null)"' "$tmp/d.raw" || fail "no NULL string as (null)"
grep -q '"hh", 44' "$tmp/d.raw" || fail "%hhd not narrowed"
grep -q '"err", "No such file or directory"' "$tmp/d.raw" || fail "%m not as text"
grep '"raw_cut"' "$tmp/d.raw" | grep -q '"after"' && fail "the record cut at %ls has values after it"

# ---- no address of the process --------------------------------------------------------
python3 "$PY" addrs "$pid" "$tmp/r1" || fail "a reply holds an address"

# ---- a bounded read --------------------------------------------------------------------
echo quit >&3
wait "$pid"
exec 3>&- 4<&-
KK_DYNDBG='+T' "$PROG" 2 5000 < "$tmp/in" > "$tmp/out" &
pid=$!
exec 3> "$tmp/in" 4< "$tmp/out"
read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start again: $ans"
"$K" -p "$pid" write dynamic_debug/buffer_size_kb 8192 || fail "buffer_size_kb"
round
n=0
while :; do
	n=$((n + 1))
	read_raw "$tmp/b$n"
	[ "$(python3 "$PY" sizes "$tmp/b$n")" -gt 4096 ] || break
	[ $n -lt 100 ] || fail "more than 100 reads"
done
for f in "$tmp"/b*; do
	sz=$(python3 "$PY" sizes "$f")
	[ "$sz" -le $((1024 * 1024 + 4096)) ] || fail "a reply of $sz bytes (bound: 1 MiB and a record)"
done
[ $n -ge 3 ] || fail "40000 records came in $n reads: not bounded"
python3 "$PY" decode $(ls "$tmp"/b* | sort -V) > "$tmp/all" || fail "a bad reply in the bounded reads"
python3 "$PY" complete $(ls "$tmp"/b* | sort -V) || fail "a reply's complete is past a later record"
grep -q '^lost' "$tmp/all" && fail "records lost: $(grep '^lost' "$tmp/all")"
[ "$(grep -c raw_ints "$tmp/all")" -eq 10000 ] || fail "want 10000 raw_ints, got $(grep -c raw_ints "$tmp/all")"
# each thread's raw_ints i = 0..4999, once each, in order
python3 - "$tmp/all" <<'PY' || fail "records out of order, twice or missing"
import json, sys
seen = {}
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e["function"] == "raw_ints":
        seen.setdefault(e["tid"], []).append(e["args"][1][1])
assert len(seen) == 2 and all(v == list(range(5000)) for v in seen.values()), seen.keys()
PY
echo "reads: $n"

# ---- a reader slower than the endpoint's deadline -----------------------------------
# The endpoint closes a connection 2 s after accept(), and a reply the socket
# could not take whole was cut there: its records were consumed, sent nowhere
# and counted nowhere.  A reply is now no larger than the socket takes at
# once, so it is queued whole before the reader reads.
round
rm -f "$tmp"/b*
n=0
while :; do
	n=$((n + 1))
	timeout 600 "$RAW" -s 3 "$pid" "read dynamic_debug/trace_pipe_raw" > "$tmp/b$n" ||
		fail "control_raw -s: rc $?"
	python3 "$PY" decode "$tmp/b$n" > /dev/null || fail "a slow reader's reply $n is cut"
	[ "$(python3 "$PY" sizes "$tmp/b$n")" -gt 4096 ] || break
	[ $n -lt 100 ] || fail "more than 100 reads"
done
python3 "$PY" decode $(ls "$tmp"/b* | sort -V) > "$tmp/all" || fail "a bad reply (slow reader)"
grep -q '^lost' "$tmp/all" && fail "records lost (slow reader): $(grep '^lost' "$tmp/all")"
[ "$(grep -c raw_ints "$tmp/all")" -eq 10000 ] ||
	fail "slow reader: want 10000 raw_ints, got $(grep -c raw_ints "$tmp/all")"
echo "slow reader's reads: $n"
echo "dynamic_debug_trace_raw: ok"
