#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/trace_pipe_json through kkctl, from another process (issue
# 39): the records a program wrote come out as JSON lines that Python's json
# module parses, with the program's pid, the site, the message, a typed
# argument and a wall-clock ts; a second read has nothing (consumed);
# dynamic_debug/trace_threads limits what is shown (a name no thread has:
# nothing; empty again: everything).
set -u
KK_GUEST_LIB_NAME=tjson
. "${KK_SRC:?}/test/guest-lib.sh"
command -v python3 > /dev/null || { echo "skip: needs python3"; exit 77; }

start $control_env
ctl write dynamic_debug/control 'func guest_hello =T' > /dev/null || fail "+T refused"
cmd "debug 1"
cmd "debug 2"
ctl read dynamic_debug/trace_pipe_json > "$tmp/j" 2> "$tmp/kerr" || fail "read: $(cat "$tmp/kerr")"
python3 - "$tmp/j" "$pid" 1 2 <<'PY' || fail "$(cat "$tmp/j")"
import json, sys, time
path, pid, want = sys.argv[1], int(sys.argv[2]), [int(v) for v in sys.argv[3:]]
ev = [json.loads(l) for l in open(path, encoding="utf-8")]
assert [e["type"] for e in ev] == ["event"] * len(want), ev
for e, n in zip(ev, want):
    assert e["pid"] == pid and e["function"] == "guest_hello", e
    assert e["file"].endswith("control_guest.c") and e["format"] == "guest hello %d", e
    assert e["message"] == "guest hello %d" % n, e
    assert e["args"] == [{"name": "arg0", "type": "int", "value": n}], e["args"]
    # wall-clock: the host's clock, not the time since boot
    assert abs(e["ts"] / 1e9 - time.time()) < 600, (e["ts"], time.time())
PY
ctl read dynamic_debug/trace_pipe_json > "$tmp/j2" || fail "second read"
[ -s "$tmp/j2" ] && fail "a second read showed consumed records: $(cat "$tmp/j2")"

ctl write dynamic_debug/trace_threads 'no-such-thread' > /dev/null || fail "trace_threads refused a name"
cmd "debug 3"
ctl read dynamic_debug/trace_pipe_json > "$tmp/j3" || fail "read with a filter"
[ -s "$tmp/j3" ] && fail "a thread not in trace_threads was shown: $(cat "$tmp/j3")"
ctl write dynamic_debug/trace_threads '' > /dev/null || fail "trace_threads refused the empty list"
cmd "debug 4"
ctl read dynamic_debug/trace_pipe_json > "$tmp/j4" || fail "read without a filter"
python3 - "$tmp/j4" "$pid" 4 <<'PY' || fail "$(cat "$tmp/j4")"
import json, sys
path, pid, want = sys.argv[1], int(sys.argv[2]), [int(v) for v in sys.argv[3:]]
ev = [json.loads(l) for l in open(path, encoding="utf-8")]
assert [e["message"] for e in ev] == ["guest hello %d" % n for n in want], ev
PY
finish
echo "ok: kkctl read trace_pipe_json: typed JSON records, consumed once, limited by trace_threads"
