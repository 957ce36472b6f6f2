#!/bin/sh
# SPDX-License-Identifier: MIT
# The cost of a trace_pipe_json read per record: kkctl record keeps up with
# 1M events/s only if the endpoint renders a record in well under a
# microsecond.  Rendering took about 12,000 instructions a record (a
# kk_buf_printf() per number, which ran vsnprintf() twice, and a snprintf()
# per conversion of the message); this holds it under a bound.  Instruction
# counts (callgrind) do not depend on the machine's load, so a test can hold
# them.  Prints the text trace_pipe's count too, and holds trace_pipe_raw's
# (issue 39: the records as the ring holds them) under a bound of its own:
# it was 786 (a time sort across threads, each record walked twice because
# its %s made the class "re-packed"); each ring walked once in ring order
# and the class's layout worked out once a read made it 330.
set -u
B=${KK_BUILD:?}
P=$B/test/progs/trace_read_cost
[ -x "$P" ] || { echo "not built: $P"; exit 77; }
command -v valgrind > /dev/null || { echo "valgrind not installed: no instruction counts"; exit 77; }
MAX_JSON=3000	# instructions a record of trace_pipe_json, the whole read included
MAX_RAW=450	# of trace_pipe_raw (786 with a time sort and two walks of a record; 330 now)
tmp=$(mktemp -d /tmp/kk-read-cost.XXXXXX)
fail() { echo "FAIL: $*"; rm -rf "$tmp"; exit 1; }

# Instructions per record of the reads of control file $1 (read_once, inclusive).
ir() {
	f=$tmp/cg.$(basename "$1")
	KK_CONTROL=0 valgrind --tool=callgrind --toggle-collect=read_once \
		--callgrind-out-file="$f" "$P" "$1" > "$f.n" 2> /dev/null ||
		fail "valgrind $P $1: $(cat "$f.n")"
	awk -v n="$(cat "$f.n")" '/^(summary|totals):/ { printf "%d\n", $2 / n; exit }' "$f"
}
# A sanitizer build does not run under valgrind: nothing to count there.
KK_CONTROL=0 valgrind --tool=none "$P" > /dev/null 2>&1 ||
	{ echo "valgrind cannot run $P (a sanitizer build?): no instruction counts"; rm -rf "$tmp"; exit 77; }
json=$(ir dynamic_debug/trace_pipe_json) text=$(ir dynamic_debug/trace_pipe)
raw=$(ir dynamic_debug/trace_pipe_raw)
echo "instructions per record read: trace_pipe_json $json, trace_pipe $text, trace_pipe_raw $raw" \
	"(bounds: json $MAX_JSON, raw $MAX_RAW)"
[ -n "$json" ] && [ -n "$raw" ] || fail "no counts"
[ "$json" -le "$MAX_JSON" ] || fail "a trace_pipe_json read costs $json instructions a record"
[ "$raw" -le "$MAX_RAW" ] || fail "a trace_pipe_raw read costs $raw instructions a record"
rm -rf "$tmp"
exit 0
