# SPDX-License-Identifier: MIT
"""Check what kkctl record's ctf or perfetto writer made of test/progs/record_writers's
records (test/scripts/record_writers.sh runs it).  Sourced by no one: run as

    record-writers-check.py ctf OUT EXPECT [--prefix]      (needs the bt2 module)
    record-writers-check.py ctf-cli OUT EXPECT CLI_STDOUT CLI_STDERR
    record-writers-check.py perfetto OUT EXPECT [--prefix]

EXPECT is what the program fed, one JSON object a line, strings as hex.  The
rules checked are docs/tracing.md's ("Formats"), made here on their own: a
field's name, a string's UTF-8, a clamped time.  --prefix: the writer failed
(a full disk): what is there must be a prefix of what was fed, per stream.
Exit 0 when it holds; else the first difference on stderr and exit 1."""
import collections
import datetime
import decimal
import json
import math
import re
import socket
import sys

HOST_STRIDE = 4194304


def fail(msg):
    sys.stderr.write("FAIL: %s\n" % msg)
    sys.exit(1)


def sanitize(b):
    """UTF-8 as the writers must make it: each byte that is not part of a valid
    sequence becomes U+FFFD (one per byte, not Python's 'replace')."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xc2 <= c <= 0xdf else 3 if 0xe0 <= c <= 0xef \
            else 4 if 0xf0 <= c <= 0xf4 else 0
        if n:
            try:
                out.append(b[i:i + n].decode("utf-8"))
                i += n
                continue
            except UnicodeDecodeError:
                pass
        out.append("\ufffd")
        i += 1
    return "".join(out)


def load_expect(path):
    recs = []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            for k in ("host", "pname", "comm", "module", "function", "message"):
                if k in r:
                    r[k] = bytes.fromhex(r[k])
            for a in r.get("args", []):
                a["name"] = bytes.fromhex(a["name"]).decode()
                if a["type"] == "string":
                    a["value"] = bytes.fromhex(a["value"])
            recs.append(r)
    return recs


def keys(args, ctf):
    """The args' names: the name ("argN" if none); for ctf, a character that
    is not [A-Za-z0-9_] made '_'; one taken (earlier, or "message") gets "_N"."""
    out = []
    for i, a in enumerate(args):
        k = a["name"] or "arg%d" % i
        if ctf:
            k = re.sub(r"[^A-Za-z0-9_]", "_", k)
        while k == "message" or k in out:
            k += "_%d" % i
        out.append(k)
    return out


def value(a):
    """An arg's value as the checker compares it: (kind, value)."""
    t, v = a["type"], a["value"]
    if t == "string":
        return ("s", sanitize(v))
    if t == "float":
        v = float(v)
        return ("f", repr(v) if math.isfinite(v) else "nan" if math.isnan(v)
                else "inf" if v > 0 else "-inf")
    return ("i" if t in ("int", "char") else "u", v)


def site_name(r):
    return "%s:%s:%d" % (sanitize(r["module"]), sanitize(r["function"]), r["line"])


# ---- ctf ----------------------------------------------------------------------

def ctf_expected(recs):
    """The events a ctf reader must give, each with its stream and clamped time."""
    last, inst, out = {}, collections.Counter(), []
    local = socket.gethostname()
    for r in recs:
        sk = (r["host"], r["pid"])
        stream = sk + (inst[sk],)
        ts = max(r["ts"], last.get(stream, 0))
        last[stream] = ts
        host = sanitize(r["host"]) or local
        if r["kind"] == "event":
            ctx = (r["vpid"], r["tid"], sanitize(r["comm"]), host)
            pay = [(k, value(a)) for k, a in zip(keys(r["args"], True), r["args"])]
            pay.append(("message", ("s", sanitize(r["message"]))))
            name = site_name(r)
        elif r["kind"] == "lost":
            ctx = (r["vpid"], r["tid"], "", host)
            pay, name = [("count", ("u", r["count"]))], "kernelkit:records_lost"
        else:
            ctx = (r["vpid"], r["vpid"], sanitize(r["pname"]), host)
            pay, name = [("pid", ("i", r["pid"]))], "kernelkit:process_exit"
            inst[sk] += 1
        out.append((stream, (ts, name, ctx, tuple(pay))))
    return out


def bt2_value(f):
    import bt2
    if isinstance(f, bt2._StringFieldConst):
        # bt2 2.0.4's str() of an empty string field can give the bytes of
        # an earlier, longer one (a reused field): len() is right.
        return ("s", str(f).encode("utf-8")[:len(f)].decode("utf-8"))
    if isinstance(f, bt2._RealFieldConst):
        v = float(f)
        return ("f", "nan" if math.isnan(v) else "inf" if v == math.inf
                else "-inf" if v == -math.inf else repr(v))
    if isinstance(f, bt2._SignedIntegerFieldConst):
        return ("i", int(f))
    if isinstance(f, bt2._UnsignedIntegerFieldConst):
        return ("u", int(f))
    fail("a field of an unexpected class: %r" % type(f))


def ctf_read(out):
    import bt2
    events, discarded, packets = [], [], collections.Counter()
    for m in bt2.TraceCollectionMessageIterator(out):
        if isinstance(m, bt2._PacketBeginningMessageConst):
            packets[m.packet.stream.name] += 1
        elif isinstance(m, bt2._DiscardedEventsMessageConst):
            discarded.append(m.count)
        elif isinstance(m, bt2._EventMessageConst):
            cs = m.default_clock_snapshot
            cc = cs.clock_class
            if not cc.origin_is_unix_epoch or cc.frequency != 10**9:
                fail("clock %s: origin_is_unix_epoch %s, frequency %d"
                     % (cc.name, cc.origin_is_unix_epoch, cc.frequency))
            ev = m.event
            c = ev.common_context_field
            ctx = (int(c["vpid"]), int(c["vtid"]), bt2_value(c["procname"])[1],
                   bt2_value(c["hostname"])[1])
            pay = tuple((k, bt2_value(v)) for k, v in ev.payload_field.items())
            events.append((cs.ns_from_origin, ev.name, ctx, pay))
    return events, discarded, packets


def check_prefix(exp, got):
    """Each stream's events that are there are the first ones fed to it."""
    per = collections.defaultdict(list)
    for stream, e in exp:
        per[stream].append(e)
    left = collections.Counter(got)
    for stream, evs in per.items():
        n = 0
        while n < len(evs) and left[evs[n]]:
            left[evs[n]] -= 1
            n += 1
        if any(left[e] for e in evs[n:]):
            fail("stream %r: an event after a missing one" % (stream,))
    if sum(left.values()):
        fail("events that were not fed: %r" % list(left.elements())[:3])


def check_ctf(out, expect, prefix):
    recs = load_expect(expect)
    exp = ctf_expected(recs)
    got, discarded, packets = ctf_read(out)
    times = [e[0] for e in got]
    if times != sorted(times):
        fail("events out of time order")
    if prefix:
        check_prefix(exp, got)
        print("ctf: %d of %d events, a prefix of each stream" % (len(got), len(exp)))
        return
    want = collections.Counter(e for _, e in exp)
    have = collections.Counter(got)
    if want != have:
        miss, extra = list((want - have).elements()), list((have - want).elements())
        fail("%d events differ: missing %r ... extra %r ..." % (len(miss) + len(extra),
             miss[:1], extra[:1]))
    lost = sorted(r["count"] for r in recs if r["kind"] == "lost")
    if sorted(discarded) != lost:
        fail("discarded-events messages %r, want %r" % (sorted(discarded), lost))
    if max(packets.values()) < 3:
        fail("no stream rotated its packets: %r" % dict(packets))
    clamped = sum(1 for r, (_, e) in zip(recs, exp) if e[0] != r["ts"])
    if not clamped:
        fail("the record out of time order was not in the test")
    print("ctf: %d events, typed, in time order (%d clamped); discarded %r; packets %r"
          % (len(got), clamped, discarded, sorted(packets.values())))


def check_ctf_cli(out, expect, stdout, stderr):
    """babeltrace2 --clock-gmt --clock-date: one line per event, at its UTC time,
    in order; a warning for each loss."""
    exp = sorted(e[0] for _, e in ctf_expected(load_expect(expect)))
    lines = open(stdout, encoding="utf-8", errors="replace").read().splitlines()
    stamp = re.compile(r"^\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.(\d{9})\] ")
    got = []
    for ln in lines:
        m = stamp.match(ln)
        if not m:
            fail("babeltrace2 printed a line that is not an event: %r" % ln[:200])
        t = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S")
        t = t.replace(tzinfo=datetime.timezone.utc)
        got.append(int(t.timestamp()) * 10**9 + int(m.group(2)))
    if got != exp:
        fail("babeltrace2 printed %d events, want %d; times differ from index %d" % (
             len(got), len(exp), next((i for i, (a, b) in enumerate(zip(got, exp)) if a != b),
                                      min(len(got), len(exp)))))
    err = open(stderr, encoding="utf-8", errors="replace").read()
    for n in (17, 5, 3, 2):
        if "discarded %d events" % n not in err:
            fail("babeltrace2 did not warn of %d discarded events: %r" % (n, err[:500]))
    print("babeltrace2: %d events at their UTC times, 4 discarded-events warnings" % len(got))


# ---- perfetto -----------------------------------------------------------------

def pf_expected(recs):
    """The instant events, in the order fed."""
    hosts, out = [], []
    for r in recs:
        h = r["host"]
        if h and h not in hosts:
            hosts.append(h)
        base = (hosts.index(h) + 1) * HOST_STRIDE if h else 0
        pid, ts = base + r["pid"], decimal.Decimal(r["ts"]) / 1000
        if r["kind"] == "event":
            args = {k: value(a) for k, a in zip(keys(r["args"], False), r["args"])}
            args["message"] = ("s", sanitize(r["message"]))
            out.append((site_name(r), "t", ts, pid, base + r["tid"], args))
        elif r["kind"] == "lost":
            args = {"tid": ("i", r["tid"]), "count": ("u", r["count"])}
            out.append(("kernelkit:records_lost", "t", ts, pid, base + r["tid"], args))
        else:
            args = {"pid": ("i", r["pid"]), "vpid": ("i", r["vpid"])}
            out.append(("kernelkit:process_exit", "p", ts, pid, pid, args))
    return out


def pf_value(v, kind):
    if isinstance(v, str):
        return (kind, v)
    if isinstance(v, bool) or not isinstance(v, (int, decimal.Decimal)):
        fail("an arg of JSON type %r" % type(v))
    if kind == "f":
        return ("f", repr(float(v)))
    if not isinstance(v, int):
        fail("an integer arg written as %r" % v)
    return (kind, v)


def check_names(recs, evs):
    """One process_name per process (before its events), one thread_name per
    thread that has a name, each the sanitized name."""
    hosts, want_p, want_t = [], collections.Counter(), collections.Counter()
    for r in recs:
        h = r["host"]
        if h and h not in hosts:
            hosts.append(h)
        base = (hosts.index(h) + 1) * HOST_STRIDE if h else 0
        name = (sanitize(h) + ": " if h else "") + sanitize(r["pname"])
        want_p[(base + r["pid"], name)] = 1
        if r["kind"] == "event" and r["comm"]:
            want_t[(base + r["pid"], base + r["tid"], sanitize(r["comm"]))] = 1
    got_p = collections.Counter((e["pid"], e["args"]["name"]) for e in evs
                                if e["ph"] == "M" and e["name"] == "process_name")
    got_t = collections.Counter((e["pid"], e["tid"], e["args"]["name"]) for e in evs
                                if e["ph"] == "M" and e["name"] == "thread_name")
    # pid 1002 is two processes (one after the other's exit): two of each there.
    if set(got_p) != set(want_p) or set(got_t) != set(want_t):
        fail("names: processes %r want %r; threads %r want %r" % (
             sorted(got_p), sorted(want_p), sorted(got_t), sorted(want_t)))
    procs, threads = set(), set()	# named in the process's lifetime
    for e in evs:
        pid = e["pid"]
        if e["name"] == "process_name":
            if pid in procs:
                fail("a second process_name for live pid %d" % pid)
            procs.add(pid)
        elif e["name"] == "thread_name":
            if (pid, e["tid"]) in threads:
                fail("a second thread_name for thread %d of pid %d" % (e["tid"], pid))
            threads.add((pid, e["tid"]))
        elif pid not in procs:
            fail("an event of pid %d before its process_name" % pid)
        if e["name"] == "kernelkit:process_exit":
            procs.discard(pid)
            threads = {t for t in threads if t[0] != pid}
    return len(got_t)


def check_perfetto(out, expect, prefix):
    recs = load_expect(expect)
    raw = open(out, "rb").read()
    try:
        # Numbers exact; "-0" (a float's -0.0) kept apart from 0.
        doc = json.loads(raw.decode("utf-8"), parse_float=decimal.Decimal,
                         parse_int=lambda s: decimal.Decimal(s) if s == "-0" else int(s))
    except (UnicodeDecodeError, ValueError) as e:
        fail("not UTF-8 JSON: %s" % e)
    if set(doc) != {"traceEvents", "displayTimeUnit"} or doc["displayTimeUnit"] != "ns":
        fail("top-level keys %r" % sorted(doc))
    evs = doc["traceEvents"]
    got = []
    for e in evs:
        if e["ph"] == "M":
            continue
        if e["ph"] != "i":
            fail("an event with ph %r" % e["ph"])
        got.append((e["name"], e["s"], e["ts"], e["pid"], e["tid"], e["args"]))
    exp = pf_expected(recs)
    if prefix:
        exp = exp[:len(got)]
    for i, (g, w) in enumerate(zip(got, exp)):
        kinds = {k: v[0] for k, v in w[5].items()}
        if set(g[5]) != set(kinds):
            fail("event %d: args %r, want %r" % (i, sorted(g[5]), sorted(kinds)))
        g = g[:5] + ({k: pf_value(v, kinds[k]) for k, v in g[5].items()},)
        if g != w:
            fail("event %d: %r, want %r" % (i, g, w))
    if len(got) != len(exp):
        fail("%d events, want %d" % (len(got), len(exp)))
    if prefix:
        print("perfetto: %d of %d events, the first ones, valid JSON" % (len(got), len(recs)))
        return
    threads = check_names(recs, evs)
    print("perfetto: %d events in order, typed args, %d named threads" % (len(got), threads))


def main():
    mode, out, expect = sys.argv[1:4]
    prefix = "--prefix" in sys.argv[4:]
    if mode == "ctf":
        check_ctf(out, expect, prefix)
    elif mode == "ctf-cli":
        check_ctf_cli(out, expect, sys.argv[4], sys.argv[5])
    else:
        check_perfetto(out, expect, prefix)


if __name__ == "__main__":
    main()
