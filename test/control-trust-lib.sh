# SPDX-License-Identifier: MIT
# Shared by the endpoint's trust tests (control_trust_request.sh,
# control_trust_trace.sh, control_nul.sh), which drive test/progs/control_trust
# through its command pipe.  Sourced, not run; exits 77 where it cannot run
# (not root, no setpriv or ss, not built).  Offers:
#   B, KKCTL, PROG, RAW  the build, its kkctl, control_trust, control_raw
#   $U, $G2              a throwaway uid (its gid is the same number) and gid
#   $as_u                the setpriv command that runs what follows as U:U
#   $tmp                 world-readable, removed at exit, when $pid and every
#                        pid in $pids are killed
#   fail MSG             "FAIL: MSG" (and the program's stderr), exit 1
#   as UID [GID] CMD...  CMD as that uid, gid (default: UID), no groups
#   start [CMD...]       control_trust under CMD (a command that execs it,
#                        keeping its pid: $as_u, env; not a shell function),
#                        with KK_CONTROL=1 and $start_env;
#                        stdin on fd 3, stdout on fd 4; sets $pid
#   cmd LINE             one command, its answer in $ans; fails unless "ok..."
#   finish               quit, and fails unless the program exits 0
#   refused_reads        U's kkctl reads of dynamic_debug/trace, trace_pipe, trace_pipe_json, trace_pipe_raw
#                        exit 1 with one line (left in $tmp/kerr), nothing
#                        on stdout, and no $secret anywhere
#   flags FUNC           the flags of FUNC's site in root's read of
#                        dynamic_debug/control ("=_", "=p", ...)
#   listener             the inode of the process's listening socket, or empty
#   new_listener OLD     waits until the listening socket is not OLD (the
#                        endpoint makes a new one when the process's ids change)
#   hold UID GID REQUEST a control_raw -w client as UID:GID, connected and
#                        accepted by the endpoint (its connection is off the
#                        listen queue), waiting to send REQUEST; sets $cpid
#   release              the client sends; its reply in $tmp/reply, the
#                        status line in $status ("" when there was no reply:
#                        the endpoint's 2 s deadline cut the client off)
# Every wait is for a condition, bounded (5 s), never a sleep that orders.
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root to run processes as other uids"; exit 77; }
for c in setpriv ss; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
B=${KK_BUILD:?}
KKCTL=$B/kkctl
PROG=$B/test/progs/control_trust
RAW=$B/test/progs/control_raw
[ -x "$PROG" ] && [ -x "$RAW" ] && [ -x "$KKCTL" ] || { echo "not built"; exit 77; }
U=$((3996000 + $$ % 1000)) G2=$((3997000 + $$ % 1000))
as_u="setpriv --reuid=$U --regid=$U --clear-groups"
tmp=$(mktemp -d "/tmp/kk-${KK_TRUST_LIB_NAME:-trust}.XXXXXX")
chmod 755 "$tmp"
pid='' pids='' start_env=''
cleanup() {
	for p in $pid $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
	echo "FAIL: $*"
	[ -s "$tmp/err" ] && { echo "--- the program's stderr"; cat "$tmp/err"; }
	exit 1
}
as() {
	u=$1; shift
	g=$u
	case $1 in [0-9]*) g=$1; shift ;; esac
	setpriv --reuid="$u" --regid="$g" --clear-groups "$@"
}
start() {
	rm -f "$tmp/prog.in" "$tmp/prog.out"
	mkfifo "$tmp/prog.in" "$tmp/prog.out"
	chmod 666 "$tmp/prog.in" "$tmp/prog.out"
	: > "$tmp/err"
	chmod 666 "$tmp/err"
	"$@" env KK_CONTROL=1 $start_env "$PROG" < "$tmp/prog.in" > "$tmp/prog.out" 2> "$tmp/err" &
	pid=$!
	exec 3> "$tmp/prog.in" 4< "$tmp/prog.out"
	cmd ids
	i=0
	until [ -n "$(listener)" ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "process $pid serves no @kernelkit/$pid"
		sleep 0.01
	done
}
. "${KK_SRC:?}/test/pipe-lib.sh"	# cmd, finish
refused_reads() {
	for f in trace trace_pipe trace_pipe_json trace_pipe_raw; do
		as "$U" "$KKCTL" -p "$pid" read dynamic_debug/$f > "$tmp/out" 2> "$tmp/kerr"
		rc=$?
		grep -q "$secret" "$tmp/out" "$tmp/kerr" && fail "uid $U read the secret from dynamic_debug/$f"
		[ $rc -eq 1 ] || fail "U's read of dynamic_debug/$f: exit $rc, want 1: $(cat "$tmp/out" "$tmp/kerr")"
		[ -s "$tmp/out" ] && fail "U's read of dynamic_debug/$f printed: $(cat "$tmp/out")"
		[ "$(wc -l < "$tmp/kerr")" -eq 1 ] || fail "U's read of dynamic_debug/$f: not one line: $(cat "$tmp/kerr")"
	done
	echo "U's kkctl: $(cat "$tmp/kerr")"
}
flags() {
	"$KKCTL" -p "$pid" read dynamic_debug/control > "$tmp/ctl" 2> "$tmp/ctlerr" ||
		fail "root's read of dynamic_debug/control: $(cat "$tmp/ctlerr")"
	awk -v f="]$1" 'index($0, f " ") { for (i = 1; i <= NF; i++) if ($i ~ /^=/) { print $i; exit } }' \
		"$tmp/ctl"
}
# /proc/net/unix: "Num RefCount Protocol Flags Type St Inode Path"; listening: flags 00010000
listener() {
	awk -v n="@kernelkit/$pid" '$8 == n && $4 == "00010000" { print $7; exit }' /proc/net/unix
}
new_listener() {
	i=0
	while l=$(listener); [ -z "$l" ] || [ "$l" = "$1" ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "the endpoint made no new socket after the change of ids"
		sleep 0.01
	done
}
# The listening socket's queue (ss: Recv-Q of a listener is its queue of connections).
queued() {
	ss -xlH | awk -v n="@kernelkit/$pid" '$5 == n { print $3; exit }'
}
hold() {
	rm -f "$tmp/cin" "$tmp/cout"
	mkfifo "$tmp/cin" "$tmp/cout"
	chmod 666 "$tmp/cin" "$tmp/cout"
	as "$1" "$2" "$RAW" -w "$pid" "$3" < "$tmp/cin" > "$tmp/cout" &
	cpid=$!
	pids="$pids $cpid"
	exec 5> "$tmp/cin" 6< "$tmp/cout"
	IFS= read -r l <&6 || fail "control_raw as $1:$2 did not connect"
	[ "$l" = connected ] || fail "control_raw as $1:$2: $l"
	i=0
	while q=$(queued); [ "$q" != 0 ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "the endpoint did not accept the connection (queue: '$q')"
		sleep 0.01
	done
}
release() {
	echo go >&5
	exec 5>&-
	cat <&6 > "$tmp/reply"
	exec 6<&-
	wait "$cpid"
	pids=${pids%" $cpid"}
	status=$(head -n 1 "$tmp/reply")
}
