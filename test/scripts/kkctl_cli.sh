#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl against a running process: ls, files, read, write, exit codes, the
# permissions of the socket, and a client running as nobody being refused.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
fail() { echo "FAIL: $*"; kill "$pid" 2>/dev/null; rm -rf "$tmp"; exit 1; }

tmp=$(mktemp -d /tmp/kk-cli.XXXXXX)
chmod 755 "$tmp"
export KK_CONTROL_DIR="$tmp/ctl"
"$B/test/progs/jl_target" > "$tmp/pid" &
pid=$!
i=0
while [ ! -S "$KK_CONTROL_DIR/$pid.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -S "$KK_CONTROL_DIR/$pid.sock" ] || fail "no socket for $pid"

[ "$(stat -c %a "$KK_CONTROL_DIR")" = 700 ] || fail "directory mode $(stat -c %a "$KK_CONTROL_DIR")"
[ "$(stat -c %a "$KK_CONTROL_DIR/$pid.sock")" = 600 ] || fail "socket mode"

"$KKCTL" ls | grep -q "^$pid *jl_target" || fail "ls does not list $pid"
"$KKCTL" -p "$pid" files | grep -q "static_keys" || fail "files"
out=$("$KKCTL" -p "$pid" read static_keys) || fail "read exit $?"
echo "$out" | grep -q '^# name enabled count sites module$' || fail "listing header: $out"
# The fallback build has no sites, so untouched keys are unknown to the registry.
if [ "${KK_TEST_LABEL:-default}" != fallback ]; then
	echo "$out" | grep -q '^target_key 0 0 1 jl_target$' || fail "listing: $out"
	echo "$out" | grep -q '^target_true_key 1 1 1 jl_target$' || fail "listing: $out"
fi

"$KKCTL" -p "$pid" read no/such/file 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"
grep -q "No such file or directory" "$tmp/err" || fail "message: $(cat "$tmp/err")"
echo hi | "$KKCTL" -p "$pid" write static_keys 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "read-only write: exit $rc"
grep -q "Permission denied" "$tmp/err" || fail "message: $(cat "$tmp/err")"
"$KKCTL" -p "$pid" 2>/dev/null; [ $? -eq 2 ] || fail "usage exit"
"$KKCTL" bogus 2>/dev/null; [ $? -eq 2 ] || fail "usage exit"
"$KKCTL" -p notapid read x 2>/dev/null; [ $? -eq 2 ] || fail "bad pid exit"
"$KKCTL" --help | grep -q "usage:" || fail "--help"
"$KKCTL" -p 999999 read static_keys 2>/dev/null; [ $? -eq 1 ] || fail "no endpoint exit"

# A foreign uid: first the 0700 directory stops it, then, with the file
# permissions opened up, SO_PEERCRED does.
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	cp "$KKCTL" "$tmp/kkctl"
	chmod 755 "$tmp/kkctl"
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	asnobody "$tmp/kkctl" -p "$pid" read static_keys >"$tmp/out" 2>"$tmp/err"; rc=$?
	[ $rc -eq 1 ] || fail "nobody through a 0700 dir: exit $rc"
	chmod 711 "$KK_CONTROL_DIR"; chmod 666 "$KK_CONTROL_DIR/$pid.sock"
	asnobody "$tmp/kkctl" -p "$pid" read static_keys >"$tmp/out" 2>"$tmp/err"; rc=$?
	chmod 700 "$KK_CONTROL_DIR"; chmod 600 "$KK_CONTROL_DIR/$pid.sock"
	[ $rc -eq 1 ] || fail "nobody with open permissions: exit $rc"
	grep -q "Permission denied" "$tmp/err" || fail "nobody message: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "nobody got data: $(cat "$tmp/out")"
else
	echo "skipping the foreign-uid part (needs root, nobody and setpriv)"
fi
"$KKCTL" -p "$pid" read static_keys >/dev/null || fail "owner no longer served"

kill "$pid"; wait "$pid"
[ -e "$KK_CONTROL_DIR/$pid.sock" ] && fail "socket left behind after exit"
rm -rf "$tmp"
echo "kkctl_cli: ok"
