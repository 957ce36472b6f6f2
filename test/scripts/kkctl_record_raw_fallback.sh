#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record reads a local process's dynamic_debug/trace_pipe_raw (ctf:
# written into the trace; jsonl, text, perfetto: decoded), and takes
# trace_pipe_json for a process whose library has no trace_pipe_raw
# (docs/tracing.md, "The raw stream").  The older library is played by
# test/progs/record_old_library, an endpoint that answers trace_pipe_raw
# with "no such file" (and a held begin as its library did) and passes every
# other request to a record_flood.  For --format ctf and jsonl, --count 100:
#   - kkctl asks for trace_pipe_raw once, is refused, and reads
#     trace_pipe_json from then on; status 0, its one summary line, all 100
#     records in the file (jsonl: 100 lines; ctf: the json path's process
#     stream "pidN", no thread stream), nothing said of the refusal.
# Before: jsonl never asked for trace_pipe_raw (checked only by hand for ctf).
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrfall
OLD=$B/test/progs/record_old_library
[ -x "$OLD" ] || { echo "not built"; exit 77; }
fail() {
	echo "FAIL: $*"
	[ -s "$tmp/old.log" ] && tail -5 "$tmp/old.log"
	exit 1
}
count() { grep -c "$1" "$tmp/old.log"; }

for f in ctf jsonl; do
	mkfifo "$tmp/in.$f"
	env $control_env "$PROG" 1 100 < "$tmp/in.$f" > "$tmp/out.$f" 2> "$tmp/flood.err" &
	p=$!
	pids="$pids $p"
	exec 3> "$tmp/in.$f"
	until_ok "endpoint of $p" served "$p"
	"$OLD" "$p" > "$tmp/old.log" 2> "$tmp/old.err" 3>&- &
	o=$!
	pids="$pids $o"
	until_ok "the old library's endpoint ($o)" served "$o"
	"$K" -p "$o" record --format "$f" --count 100 -o "$tmp/r.$f" 'func flood_tick +T' \
		2> "$tmp/r.$f.err" 3>&- &
	rec=$!
	pids="$pids $rec"
	until_ok "$f: a session in $p" has_session "$p"
	until_ok "$f: recording (its output made)" test -e "$tmp/r.$f"
	echo go >&3
	until_ok "$f: kkctl record's end" gone "$rec"
	wait "$rec" || fail "$f: kkctl record: status $? $(cat "$tmp/r.$f.err")"
	grep -q "^kkctl: 100 records from 1 process to .*; lost 0;" "$tmp/r.$f.err" &&
		[ "$(wc -l < "$tmp/r.$f.err")" -eq 1 ] || fail "$f: kkctl said: $(cat "$tmp/r.$f.err")"
	[ "$(count '^read dynamic_debug/trace_pipe_raw|.* refused$')" -eq 1 ] ||
		fail "$f: want one read of trace_pipe_raw, refused"
	[ "$(count '^read dynamic_debug/trace_pipe_json|.* passed$')" -ge 1 ] ||
		fail "$f: no read of trace_pipe_json"
	if [ "$f" = jsonl ]; then
		n=$(grep -c '"function":"flood_tick"' "$tmp/r.jsonl")
		[ "$n" -eq 100 ] || fail "jsonl: $n records in the file"
	else
		ls "$tmp/r.ctf" | grep -qx "pid$o" || fail "ctf: no process stream: $(ls "$tmp/r.ctf")"
		ls "$tmp/r.ctf" | grep -q -- '-tid' && fail "ctf: a thread stream: $(ls "$tmp/r.ctf")"
	fi
	echo quit >&3
	exec 3>&-
	until_ok "record_flood's exit" gone "$p"
	kill "$o"
	wait "$o" 2> /dev/null
done
[ -s "$tmp/flood.err" ] && fail "record_flood said: $(cat "$tmp/flood.err")"
echo "kkctl_record_raw_fallback: ok"
