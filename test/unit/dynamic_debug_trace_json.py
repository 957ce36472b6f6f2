#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# The checker of unit/dynamic_debug_trace_json: reads what the test read from
# dynamic_debug/trace_pipe_json (a file) and checks it as the contract in
# docs/dynamic_debug.md says.  Exit 0 when it holds, else 1 with one line why.
#   valid FILE                       every line a JSON object with its keys in order
#   all FILE MSG FMT PID TID COMM LINE OFFSET
#                                    js_all's event: its fields, message, format, args
#   more FILE                        js_more's, js_cut's and js_quote's args
#   lost FILE TID1 N1 [TID2 N2 ...]  per thread: one lost line before its events,
#                                    lost + events == N
import json
import sys

EVENT_KEYS = ["type", "ts", "mono", "pid", "tid", "comm", "module", "function", "file", "line",
              "format", "message", "args"]
LOST_KEYS = ["type", "pid", "tid", "comm", "count"]


def fail(msg):
    print("json check: " + msg)
    sys.exit(1)


def lines(path):
    raw = open(path, "rb").read()
    try:
        text = raw.decode("utf-8")  # strict: the stream is valid UTF-8 always
    except UnicodeDecodeError as e:
        fail("not UTF-8: %s" % e)
    out = []
    for n, line in enumerate(text.split("\n")[:-1], 1):
        try:
            obj = json.loads(line, object_pairs_hook=lambda kv: kv)
        except ValueError as e:
            fail("line %d is not JSON (%s): %r" % (n, e, line))
        keys = [k for k, _ in obj]
        want = EVENT_KEYS if dict(obj).get("type") == "event" else LOST_KEYS
        if keys != want:
            fail("line %d keys %s, want %s" % (n, keys, want))
        out.append(json.loads(line))
    if not text.endswith("\n") and text:
        fail("the last line has no newline")
    return out


def event_of(objs, function):
    ev = [o for o in objs if o["type"] == "event" and o["function"] == function]
    if len(ev) != 1:
        fail("%d events of %s, want 1: %s" % (len(ev), function, objs))
    return ev[0]


def check_args(ev, want):
    got = [(a["name"], a["type"], a["value"]) for a in ev["args"]]
    if len(got) != len(want):
        fail("%s: %d args, want %d: %s" % (ev["function"], len(got), len(want), got))
    for g, w in zip(got, want):
        # bool is an int in Python: check the JSON type too
        if g != w or type(g[2]) is not type(w[2]):
            fail("%s: arg %s, want %s" % (ev["function"], g, w))


def check_all(objs, msg, fmt, pid, tid, comm, line, offset):
    ev = event_of(objs, "js_all")
    exp_msg = open(msg, "rb").read().decode("utf-8", "replace").rstrip("\n")
    exp_fmt = open(fmt, "rb").read().decode("utf-8", "replace").rstrip("\n")
    for key, want in (("pid", int(pid)), ("tid", int(tid)), ("comm", comm), ("line", int(line)),
                      ("message", exp_msg), ("format", exp_fmt), ("module", "dynamic_debug_trace_json")):
        if ev[key] != want:
            fail("%s %r, want %r" % (key, ev[key], want))
    if not ev["file"].endswith("dynamic_debug_trace_json.c"):
        fail("file %r" % ev["file"])
    if not isinstance(ev["ts"], int) or not isinstance(ev["mono"], int):
        fail("ts and mono are not integers: %r %r" % (ev["ts"], ev["mono"]))
    if abs(ev["ts"] - ev["mono"] - int(offset)) > 1000000000:
        fail("ts - mono = %d, CLOCK_REALTIME - CLOCK_MONOTONIC = %s" % (ev["ts"] - ev["mono"], offset))
    check_args(ev, [
        ("d", "int", -5), ("i", "int", 7), ("u", "uint", 4000000000), ("x", "uint", 0xbeef),
        ("o", "uint", 8), ("c", "char", 65), ("e", "float", 1.5e10), ("f", "float", 3.25),
        ("g", "float", -0.0001), ("s", "string", "plain"), ("p", "pointer", 0x1234),
        ("err", "string", "No such file or directory"), ("hh", "int", -3),
        ("ll", "int", -9007199254740993), ("zu", "uint", 18446744073709551615),
        ("w", "int", 42), ("nan", "float", "nan"), ("q", "string", 'say "hi"'),
        ("nl", "string", "a\nb"), ("ctl", "string", "x\x01y"),
        ("bad", "string", "\ufffd\ufffd ok \ufffd("), ("arg21", "int", 99),
    ])


def check_more(objs):
    check_args(event_of(objs, "js_more"), [
        ("inf", "float", "inf"), ("ninf", "float", "-inf"), ("ld", "float", 1.5),
        ("big", "uint", 0xfedcba9876543210), ("neg", "int", -2), ("uc", "uint", 255),
        ("arg6", "string", "(null)"),
    ])
    # packing stopped at %ls: only what was packed
    ev = event_of(objs, "js_cut")
    check_args(ev, [("n", "int", 5)])
    if ev["message"] != "n=5 then %ls w=%d":
        fail("js_cut message %r" % ev["message"])
    ev = event_of(objs, "js_quote")
    check_args(ev, [("arg0", "string", "q\"\\")])
    if ev["format"] != 'say "%s"\ttab' or ev["message"] != 'say "q"\\"\ttab':
        fail("js_quote format %r message %r" % (ev["format"], ev["message"]))


def check_lost(objs, pairs):
    for tid, n in pairs:
        mine = [o for o in objs if o["tid"] == tid]
        lost = [i for i, o in enumerate(mine) if o["type"] == "lost"]
        events = [o for o in mine if o["type"] == "event"]
        if len(lost) != 1 or lost[0] != 0:
            fail("thread %d: lost lines at %s of its %d lines, want one, first" % (tid, lost, len(mine)))
        if mine[0]["count"] + len(events) != n:
            fail("thread %d: %d lost + %d events != %d written" % (tid, mine[0]["count"], len(events), n))
        if mine[0]["count"] <= 0:
            fail("thread %d: lost %d" % (tid, mine[0]["count"]))


def main(argv):
    objs = lines(argv[2])
    if argv[1] == "all":
        check_all(objs, *argv[3:10])
    elif argv[1] == "more":
        check_more(objs)
    elif argv[1] == "lost":
        check_lost(objs, [(int(argv[i]), int(argv[i + 1])) for i in range(3, len(argv), 2)])
    elif argv[1] != "valid":
        fail("unknown mode " + argv[1])
    if argv[1] == "valid" and not objs:
        fail("no lines")


main(sys.argv)
