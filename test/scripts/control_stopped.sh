#!/bin/sh
# SPDX-License-Identifier: MIT
# A process stopped (SIGSTOP, or a debugger attached) while kkctl writes:
# kkctl gives up at its deadline with one line, the process is fine once
# continued, and the write kkctl reported as unanswered is never made.
# Issue 22 audit: the endpoint, continued, accepted the abandoned connection
# and ran its request, so 'func hot +p' took effect after kkctl had said
# "no complete reply" (hours later, for a process left stopped).
# test/progs/sigwait_daemon runs `func hot`; a second write, answered, comes
# after the abandoned one in the listen backlog, so the listing read after it
# shows whatever the abandoned one did.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
PROG=$B/test/progs/sigwait_daemon
[ -x "$PROG" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-stopped.XXXXXX)
pid=
fail() {
	echo "FAIL: $*"
	if [ -n "$pid" ]; then
		kill -KILL "$pid" 2>/dev/null
		kill -CONT "$pid" 2>/dev/null
	fi
	rm -rf "$tmp"
	exit 1
}
# The fallback build has no sites to start the endpoint lazily.
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
mkfifo "$tmp/out"
env $control_env "$PROG" 2 > "$tmp/out" 2>/dev/null &
pid=$!
exec 3< "$tmp/out"
read -r line <&3 || fail "the daemon died before it was ready"
[ "$line" = ready ] || fail "first line '$line', want 'ready'"

kill -STOP "$pid"
"$KKCTL" -t 1 -p "$pid" write dynamic_debug/control 'func hot +p' > "$tmp/w" 2>&1 &&
	fail "a write to a stopped process succeeded: $(cat "$tmp/w")"
[ "$(wc -l < "$tmp/w")" -eq 1 ] || fail "want one line, got: $(cat "$tmp/w")"
grep -q "no complete reply within 1 s" "$tmp/w" || fail "unexpected message: $(cat "$tmp/w")"
kill -CONT "$pid"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func no_such_function +p' > "$tmp/w2" 2>&1 ||
	fail "write after SIGCONT: $(cat "$tmp/w2")"
"$KKCTL" -p "$pid" read dynamic_debug/control > "$tmp/control" || fail "read control"
on=$(grep -c '\[sigwait_daemon\]hot =p' "$tmp/control")
[ "$on" -eq 0 ] || fail "the abandoned write was made after SIGCONT: $(grep hot "$tmp/control")"
kill -TERM "$pid"
wait "$pid"
rc=$?
pid=
[ "$rc" -eq 0 ] || fail "the daemon exited $rc after SIGCONT"
rm -rf "$tmp"
echo "control_stopped: ok"
