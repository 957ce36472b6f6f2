#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl reports an endpoint's refusal even when the connection is reset
# after it: the endpoint sends its one line and closes with the request
# unread (test/progs/control_refuse.c says when the library does so).  The
# old kkctl dropped the line: "no reply: Connection reset by peer" (tally
# run 36 of issue 27, script/kkctl_userns.sh).
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/control_refuse
[ -x "$PROG" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-refused.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkfifo "$tmp/out"
"$PROG" > "$tmp/out" &
pid=$!
exec 5< "$tmp/out"
read -r ready <&5 || fail "control_refuse did not start"
[ "$ready" = ready ] || fail "control_refuse: $ready"
"$B/kkctl" -p "$pid" read static_keys > "$tmp/rout" 2> "$tmp/err"
rc=$?
read -r done <&5 || fail "control_refuse: no report"
[ "$done" = refused ] || fail "control_refuse: $done"
[ $rc -eq 1 ] || fail "kkctl exit $rc, want 1: $(cat "$tmp/rout" "$tmp/err")"
grep -q "read static_keys: Permission denied" "$tmp/err" || fail "not the refusal: $(cat "$tmp/err")"
[ -s "$tmp/rout" ] && fail "a reply on stdout: $(cat "$tmp/rout")"
wait "$pid"
pid=
echo "kkctl_refused_reset: ok ($(cat "$tmp/err"))"
