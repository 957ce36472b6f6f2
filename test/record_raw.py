#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks of dynamic_debug/trace_pipe_raw replies (test/scripts/dynamic_debug_trace_raw.sh).

  record_raw.py decode REPLY...         every frame checked; one JSON event a line
                                        ({"tid","function","args":[[name,value]...]}, in
                                        ring order), "lost TID N" lines; exit 1 on a bad frame
  record_raw.py json FILE...            trace_pipe_json lines into the same form
  record_raw.py addrs PID REPLY...      exit 1 if a reply holds an address of a file the
                                        process maps, its heap or its stack
  record_raw.py sizes REPLY...          each reply's body size, one a line
  record_raw.py complete REPLY...       exit 1 unless each reply's HEAD says complete (not 0),
                                        and every record of the later replies is stamped at or
                                        after it

A REPLY is control_raw's output: the status line, then the body.
"""
import json
import struct
import sys

KINDS = {1: "int", 2: "uint", 3: "char", 4: "pointer", 5: "float", 6: "string"}


def body(path):
    data = open(path, "rb").read()
    nl = data.index(b"\n")
    if data[:nl] != b"0":
        sys.exit("%s: status %r" % (path, data[:nl]))
    return data[nl + 1:]


def fail(msg):
    print("bad reply: " + msg, file=sys.stderr)
    sys.exit(1)


def decode_class(b):
    cid, line, nf = struct.unpack_from("<IIH", b, 8)
    slen = struct.unpack_from("<4H", b, 18)
    at = 28
    strs = []
    for n in slen:
        strs.append(b[at:at + n].decode("utf-8", "replace"))
        at += n
    fields = []
    for _ in range(nf):
        kind, size, nl = struct.unpack_from("<BBH", b, at)
        at += 4
        fields.append((b[at:at + nl].decode(), kind, size))
        at += nl
    if at > len(b):
        fail("class %d runs past its frame" % cid)
    return cid, {"module": strs[0], "function": strs[1], "file": strs[2], "format": strs[3],
                 "line": line, "fields": fields}


def value(rec, at, kind, size):
    if kind == 6:
        (n,) = struct.unpack_from("<H", rec, at)
        return rec[at + 2:at + 2 + n].decode("utf-8", "replace"), at + 2 + n
    if kind == 5:
        return struct.unpack_from("<d", rec, at)[0], at + 8
    fmt = {(4, True): "<i", (8, True): "<q", (4, False): "<I", (8, False): "<Q"}
    signed = kind in (1, 3)
    v = struct.unpack_from(fmt[(size, signed)], rec, at)[0]
    if kind == 3:
        v &= 0xff       # trace_pipe_json gives a %c as an unsigned char
    return v, at + size


def decode(b, out):
    at, classes, seen_head = 0, {}, False
    while at < len(b):
        if len(b) - at < 8:
            fail("a frame head cut at %d" % at)
        typ, ln = struct.unpack_from("<II", b, at)
        if ln < 8 or ln % 8 or at + ln > len(b):
            fail("frame at %d: length %d" % (at, ln))
        f = b[at:at + ln]
        if typ == 1:
            seen_head = True
        elif typ == 2:
            cid, c = decode_class(f)
            classes[cid] = c
        elif typ == 3:
            tid, nrec, lost = struct.unpack_from("<iIQ", f, 8)
            if lost:
                out.append("lost %d %d" % (tid, lost))
            r = 40
            for _ in range(nrec):
                rl, cls, ts, rtid, pid = struct.unpack_from("<IIQii", f, r)
                stride = (rl + 7) // 8 * 8
                if rl < 24 or r + stride > ln or cls not in classes or rtid != tid:
                    fail("record at %d of frame %d" % (r, at))
                c, va, args = classes[cls], r + 24, []
                for name, kind, size in c["fields"]:
                    v, va = value(f, va, kind, size)
                    args.append([name, v])
                if va - r != rl:
                    fail("record of %s: values end at %d, length %d" % (c["function"], va - r, rl))
                out.append(json.dumps({"tid": tid, "function": c["function"], "args": args}))
                r += stride
            if r != ln:
                fail("ring frame: records end at %d of %d" % (r, ln))
        else:
            fail("frame type %d" % typ)
        at += ln
    if not seen_head:
        fail("no HEAD frame")


def from_json(path, out):
    for line in open(path, encoding="utf-8"):
        e = json.loads(line)
        if e["type"] == "lost":
            out.append("lost %d %d" % (e["tid"], e["count"]))
            continue
        args = [[a["name"], a["value"]] for a in e["args"]]
        out.append(json.dumps({"tid": e["tid"], "function": e["function"], "args": args}))


def addrs(pid, paths):
    # the mappings of files (the program and its libraries: where a site and its
    # format are), the heap and the stack; not anonymous ones (ASan's shadow is
    # terabytes of them, which any 8 bytes fall into)
    ranges = []
    for line in open("/proc/%s/maps" % pid):
        f = line.split()
        if len(f) < 6:
            continue
        lo, hi = f[0].split("-")
        ranges.append((int(lo, 16), int(hi, 16)))
    for p in paths:
        b = body(p)
        for i in range(len(b) - 7):
            (v,) = struct.unpack_from("<Q", b, i)
            if v >= 0x10000 and any(lo <= v < hi for lo, hi in ranges):
                print("%s: offset %d holds 0x%x, an address of process %s" % (p, i, v, pid))
                sys.exit(1)


def stamps(b):
    """A reply's HEAD complete (0 when its HEAD has none) and its records' stamps."""
    at, complete, ts = 0, 0, []
    while at < len(b):
        typ, ln = struct.unpack_from("<II", b, at)
        if typ == 1 and ln >= 32:
            (complete,) = struct.unpack_from("<Q", b, at + 24)
        elif typ == 3:
            r = 40
            while r < ln:
                rl, _, t = struct.unpack_from("<IIQ", b, at + r)
                ts.append(t)
                r += (rl + 7) // 8 * 8
        at += ln
    return complete, ts


def complete(paths):
    replies = [stamps(body(p)) for p in paths]
    for i, (c, _) in enumerate(replies):
        if not c:
            fail("reply %d of %d: no complete in its HEAD" % (i + 1, len(paths)))
        for j in range(i + 1, len(replies)):
            early = [t for t in replies[j][1] if t < c]
            if early:
                fail("reply %d says complete at %d, and reply %d has %d records before it (the "
                     "first %d)" % (i + 1, c, j + 1, len(early), early[0]))


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    out = []
    if cmd == "decode":
        for p in args:
            decode(body(p), out)
    elif cmd == "json":
        for p in args:
            from_json(p, out)
    elif cmd == "addrs":
        addrs(args[0], args[1:])
    elif cmd == "sizes":
        out = [str(len(body(p))) for p in args]
    elif cmd == "complete":
        complete(args)
    print("\n".join(out))


main()
