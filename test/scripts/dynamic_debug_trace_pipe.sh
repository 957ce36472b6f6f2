#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -f read dynamic_debug/trace_pipe streams a process's trace records as
# they are written (issue 26: "a blocking trace_pipe-like file"): one kkctl,
# started before any record, prints each record the program writes later,
# in order, without being restarted; when the process is gone it stops with
# status 1.  The program runs its site on a command through a pipe, and the
# script waits for each line in kkctl's output with a bounded poll: no sleep
# orders anything.
set -u
KK_GUEST_LIB_NAME=tpipe
. "${KK_SRC:?}/test/guest-lib.sh"
. "$KK_SRC/test/record-lib.sh"	# (wait_gone)
show_on_fail() { [ -s "$tmp/follow" ] && { echo "--- kkctl -f:"; cat "$tmp/follow"; }; }

start $control_env
ctl write dynamic_debug/control 'func guest_hello =T' > /dev/null || fail "+T refused"

: > "$tmp/follow"
"$KKCTL" -f -p "$pid" read dynamic_debug/trace_pipe >> "$tmp/follow" 2> "$tmp/follow.err" &
fpid=$!
pids=$fpid	# killed at exit
# n lines of "guest hello N" in kkctl's output, within 10 s
wait_lines() {
	i=0
	while [ "$(grep -c 'guest hello [0-9]*$' "$tmp/follow")" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -le 1000 ] || fail "kkctl -f printed $(grep -c 'guest hello' "$tmp/follow") records, want $1"
		kill -0 "$fpid" 2>/dev/null || fail "kkctl -f exited early: $(cat "$tmp/follow.err")"
		sleep 0.01
	done
}
# Distinct records: 1 alone (streamed after kkctl started), then 2 and 3
# back to back, which may come in one read; they must come out 1, 2, 3.
cmd "debug 1"
wait_lines 1
cmd "debug 2"
cmd "debug 3"
wait_lines 3
got=$(sed -n 's/.*\] guest hello \([0-9]*\)$/\1/p' "$tmp/follow" | tr '\n' ' ')
[ "$got" = "1 2 3 " ] || fail "records in the order '$got', want '1 2 3 '"
[ "$(grep -c . "$tmp/follow")" -eq 3 ] || fail "other lines than the 3 records"

# The process goes: kkctl -f stops, with status 1 and the reason.
echo quit >&3
wait "$pid"
pid=
wait_gone "kkctl -f, its target exited" "$fpid" 10
wait "$fpid"
rc=$?
pids=
[ "$rc" -eq 1 ] || fail "kkctl -f ended with status $rc, want 1"
[ -s "$tmp/follow.err" ] || fail "kkctl -f did not say why it stopped"
"$KKCTL" -f -p "$$" write dynamic_debug/control x > /dev/null 2>&1
[ $? -eq 2 ] || fail "-f with write was not a usage error"
echo "ok: kkctl -f streamed 3 numbered records written after it started, in order, and stopped with its target"
