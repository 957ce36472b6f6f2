#!/bin/sh
# SPDX-License-Identifier: MIT
# What kkctl record spends per record it receives, in instructions
# (callgrind: they do not depend on the machine's load, so a test can hold
# them).  kkctl record keeps up with processes writing 1 M events/s only if
# it reads, merges and writes a record in about a microsecond.  It spent
# 69,000 instructions a record of this workload (~7 us on the bench machine:
# it read one record in four and the rings overwrote the rest, issue 39):
# two vsnprintf() per printf of the writer, a dozen printf a record, a
# strchr() and a realloc check per byte written, a memmove() per byte
# parsed, every key compared with every name.  One record_flood thread
# writes N events (each ~470 bytes of JSON) into a ring that holds them all;
# kkctl record --format jsonl, under callgrind counting only its reads and
# its writer's rounds (target_read and write_round, inclusive: the request,
# the parse, the merge, the writer, the flushes), must have them all in the
# file, at most MAX instructions a record.  KK_RECORD_COST_KEEP=DIR keeps
# the callgrind file there.  kkctl reads trace_pipe_raw and decodes it
# (tools/kkctl/record_rawdec.c): 8,810 a record, bound 10,000; with
# KKCTL_RECORD_RAW=0 it parses trace_pipe_json: 15,460, bound 20,000.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrcost
command -v valgrind > /dev/null || { echo "valgrind not installed: no instruction counts"; exit 77; }
valgrind --tool=none "$K" --help > /dev/null 2>&1 ||
	{ echo "valgrind cannot run $K (a sanitizer build?): no instruction counts"; exit 77; }
N=${KK_RECORD_COST_N:-20000}
if [ "${KKCTL_RECORD_RAW:-1}" = 0 ]; then
	MAX=${KK_RECORD_COST_MAX:-20000}
else
	MAX=${KK_RECORD_COST_MAX:-10000}
fi
FORMAT=${KK_RECORD_COST_FORMAT:-jsonl}

flood_start -- 1 $N
p=$flood
"$K" -p "$p" write dynamic_debug/buffer_size_kb 16384 > /dev/null || fail "buffer_size_kb of $p"

timeout -s KILL 600 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" \
	--toggle-collect=target_read --toggle-collect=write_round \
	"$K" -p "$p" record --format "$FORMAT" --count $N -o "$tmp/r.out" 'func flood_tick +T' \
	2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "session in $p" has_session "$p"
flood_go
wait "$rec"
rc=$?
grep -v '^==' "$tmp/r.err"
[ "$rc" -eq 0 ] || fail "kkctl record: status $rc"
grep -q "kkctl: $N records from 1 process to .*; lost 0" "$tmp/r.err" ||
	fail "not every record was read"
ir=$(awk '/^(summary|totals):/ { print $2; exit }' "$tmp/cg")
[ -n "$ir" ] || fail "no counts"
per=$((ir / N))
[ -n "${KK_RECORD_COST_KEEP:-}" ] && cp "$tmp/cg" "$KK_RECORD_COST_KEEP/"
echo "kkctl record --format $FORMAT: $per instructions a record ($N records; bound $MAX)"
[ "$per" -le "$MAX" ] || fail "kkctl record spends $per instructions a record (more than $MAX)"
exit 0
