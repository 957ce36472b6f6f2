#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""babeltrace2's text of a kkctl record --format ctf trace, without what the
json and raw paths lay out differently (test/scripts/kkctl_record_raw.sh):
one line an event, "NAME vtid=TID {payload}", sorted; the time, the
context's other fields, the json path's "message" and the raw path's
string length fields ("name_len" before "name") left out.

  record_raw_bt.py < babeltrace2-output
"""
import re
import sys


def scan(s):
    """Each character of @s as (index, char, quoted): quoted for those of a
    "..." string, its quotes included (a backslash escapes the next one)."""
    q, esc = False, False
    for i, ch in enumerate(s):
        if q:
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                q = False
            yield i, ch, True
            continue
        q = ch == '"'
        yield i, ch, q


def groups(s):
    """The top-level { ... } groups of @s, quotes respected."""
    out, depth, start = [], 0, 0
    for i, ch, quoted in scan(s):
        if quoted:
            continue
        if ch == "{":
            if not depth:
                start = i + 1
            depth += 1
        elif ch == "}":
            depth -= 1
            if not depth:
                out.append(s[start:i].strip())
    return out


def fields(g):
    """NAME = VALUE pairs of a group, quotes respected."""
    out, cur = [], ""
    for _, ch, quoted in scan(g + ","):
        if ch == "," and not quoted:
            if cur.strip():
                k, _, v = cur.strip().partition(" = ")
                out.append((k, v))
            cur = ""
        else:
            cur += ch
    return out


lines = []
for line in sys.stdin:
    m = re.match(r"\[[^]]*\] (\([^)]*\) )?\S+ (\S+): (.*)$", line.rstrip("\n"))
    if not m:
        sys.exit("not an event line: " + line)
    name, gs = m.group(2), groups(m.group(3))
    vtid = None
    for g in gs[:-1]:
        for k, v in fields(g):
            if k == "vtid":
                vtid = v
    payload = fields(gs[-1]) if gs else []
    keys = {k for k, _ in payload}
    kept = [(k, v) for k, v in payload
            if k != "message" and not (k.endswith("_len") and k[:-4] in keys)]
    lines.append("%s vtid=%s {%s}" % (name, vtid, ", ".join("%s = %s" % kv for kv in kept)))
print("\n".join(sorted(lines)))
