#!/bin/sh
# SPDX-License-Identifier: MIT
# One deadline per whole request, several clients at once: a client that
# drips a byte every 1.5 s (each receive well inside the old per-receive 2 s
# timeout) is cut off, and a normal client that comes after it is answered
# meanwhile (test/progs/control_drip.c; its only times are 30 s failure detectors).
set -u
B=${KK_BUILD:?}
pid=
tmp=$(mktemp -d /tmp/kk-drip.XXXXXX)
fail() {
	echo "FAIL: $*"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
	exit 1
}
mkfifo "$tmp/pidfifo"
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
env $control_env "$B/test/progs/jump_label_prog" > "$tmp/pidfifo" &
pid=$!
read -r printed < "$tmp/pidfifo" || fail "no pid line"
"$B/test/progs/control_drip" "$pid" static_keys > "$tmp/out" 2>&1 || fail "control_drip: $(cat "$tmp/out")"
cat "$tmp/out"
grep -q '^normal ok' "$tmp/out" || fail "no normal reply: $(cat "$tmp/out")"
grep -q '^drip cut' "$tmp/out" || fail "drip not cut: $(cat "$tmp/out")"
# And the endpoint still serves.
"$B/kkctl" -p "$pid" read static_keys > /dev/null || fail "endpoint gone after the drip"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "control_drip: ok"
