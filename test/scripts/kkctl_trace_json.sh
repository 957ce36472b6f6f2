#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl --json read dynamic_debug/trace gives one object per record (issue
# 40, item 6), with trace_pipe_json's names ("type":"event", "tid", "mono"
# or "ts" by dynamic_debug/trace_clock, "message"), after the process's
# fields; the header's numbers in one "type":"header" object.  Other files
# keep the documented {"pid":..,"ok":true,"reply":".."} shape.
set -u
command -v jq > /dev/null || { echo "skip: no jq"; exit 77; }
KK_TARGET_NAME=trjson
. "${KK_SRC:?}/test/target-lib.sh"
ctl() { "$K" -p "$pid" "$@"; }
ctl write dynamic_debug/control 'module dynamic_debug_target +T' > /dev/null || fail "+T"
ctl write target/run x > /dev/null || fail "run"
ctl --json read dynamic_debug/trace > "$tmp/j" || fail "--json read trace"
jq -e . "$tmp/j" > /dev/null || fail "not JSON: $(cat "$tmp/j")"
[ "$(jq -c 'select(.type == "event")' "$tmp/j" | wc -l)" -eq 3 ] || fail "not 3 records: $(cat "$tmp/j")"
[ "$(wc -l < "$tmp/j")" -eq 4 ] || fail "not 4 lines: $(cat "$tmp/j")"
jq -e -s '.[0].type == "header" and .[0].entries == 3 and .[0].written == 3' "$tmp/j" > /dev/null ||
	fail "header: $(head -n 1 "$tmp/j")"
jq -e -s --argjson p "$pid" 'map(select(.type == "event")) | .[0] |
	.pid == $p and .ok == true and (.tid | type) == "number" and (.mono | type) == "number" and
	.message == "target alpha 1"' "$tmp/j" > /dev/null || fail "record 1: $(sed -n 2p "$tmp/j")"
jq -e -s 'map(select(.type == "event")) | .[2].message == "target beta \"quoted\"\t2"' "$tmp/j" \
	> /dev/null || fail "record 3: $(sed -n 4p "$tmp/j")"
grep -q '"reply"' "$tmp/j" && fail "the whole text in one string: $(cat "$tmp/j")"
# the clock: realtime records have "ts"
ctl write dynamic_debug/trace_clock realtime || fail "trace_clock"
ctl --json read dynamic_debug/trace > "$tmp/j" || fail "--json read trace (realtime)"
jq -e -s 'map(select(.type == "event")) | .[0] | (.ts | type) == "number" and .ts > 1000000000000000000 and
	(has("mono") | not)' "$tmp/j" > /dev/null || fail "realtime: $(sed -n 2p "$tmp/j")"
# other files: the reply in one string, as documented
ctl --json read dynamic_debug/trace_clock > "$tmp/j" || fail "--json read trace_clock"
grep -q '^{"pid":[0-9]*,.*"ok":true,"reply":"mono \[realtime\]\\n"}$' "$tmp/j" || fail "trace_clock: $(cat "$tmp/j")"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_trace_json: ok"
