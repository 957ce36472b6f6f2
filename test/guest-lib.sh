# SPDX-License-Identifier: MIT
# Shared by the scripts that drive test/progs/control_guest through its command
# pipe (control_guest.sh, control_identity.sh, dynamic_debug_trace_pipe.sh):
# sourced, not run.  Exits 77 when the program or kkctl is not built.  Offers:
#   B, KKCTL, PROG      the build, its kkctl, the control_guest program
#   $control_env        KK_CONTROL=1 in the fallback build (no sites there to
#                       start the endpoint lazily), else empty: for start
#   $tmp                /tmp/kk-$KK_GUEST_LIB_NAME.XXXXXX, removed at exit,
#                       when the program ($pid) and the processes in $pids are
#                       killed
#   fail MSG            prints "FAIL: MSG", then what show_on_fail (a script
#                       may define it again after sourcing) prints; exits 1
#   start [ENV=VAL...]  the program with those variables, its stdin on fd 3,
#                       its stdout on fd 4 and its stderr in $tmp/err (closed
#                       when guest_close_stderr=1); sets $pid; returns once
#                       main() answers (the endpoint started at load then,
#                       the program has sites)
#   cmd LINE            sends a command; its answer in $ans; fails unless
#                       "ok..." (the program answers "ok[ detail]" or "fail
#                       what"); $t, when set, names the case in the message
#   finish              "quit", and fails unless the program exits 0
#   ctl ARGS...         kkctl -p $pid ARGS...
B=${KK_BUILD:?}
KKCTL=$B/kkctl
PROG=$B/test/progs/control_guest
[ -x "$PROG" ] && [ -x "$KKCTL" ] || { echo "not built"; exit 77; }
control_env=
# shellcheck disable=SC2034  # for the scripts that source this
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
tmp=$(mktemp -d "/tmp/kk-${KK_GUEST_LIB_NAME:-guest}.XXXXXX")
pid=
pids=
guest_close_stderr=0
cleanup() {
	for p in $pid $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
show_on_fail() { [ -s "$tmp/err" ] && { echo "--- stderr"; cat "$tmp/err"; }; }
fail() { echo "FAIL: $*"; show_on_fail; exit 1; }

start() {
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in" "$tmp/out"
	if [ "$guest_close_stderr" = 1 ]; then
		env "$@" "$PROG" < "$tmp/in" > "$tmp/out" 2>&- &
	else
		env "$@" "$PROG" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
	fi
	pid=$!
	exec 3> "$tmp/in" 4< "$tmp/out"
	cmd tasks
}
. "${KK_SRC:?}/test/pipe-lib.sh"	# cmd, finish
ctl() { "$KKCTL" -p "$pid" "$@"; }
