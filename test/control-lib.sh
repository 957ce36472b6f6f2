# SPDX-License-Identifier: MIT
# Shared by the scripts that set KK_CTL_LIB_NAME (the name of their $tmp) and
# source it: control_userns.sh, control_squat.sh, control_stopped.sh,
# kkctl_userns.sh, kkctl_netns.sh, kkctl_ssh.sh, kkctl_unreachable.sh,
# mp_server.sh, mp_server_stderr.sh, mp_server_quiet.sh, sigwait_daemon.sh (the
# scripts that drive control_guest have test/guest-lib.sh).  Sourced, not run.
# Sets B, a world-readable $tmp removed at exit with every process whose pid is
# in $pids, fail(), as UID CMD... (CMD as that uid and gid, no groups),
# $control_env (the fallback build has no sites to start the endpoint lazily),
# $key_line (what a read of jump_label_prog's static_keys must hold),
# start CMD... (jump_label_prog under CMD, which execs it keeping its pid, in
# the background; sets $tpid once its endpoint listens, which is before it
# prints), and start_sigwait_daemon (test/progs/sigwait_daemon with 2 workers
# in the background, its stdout on fd 3; sets $dpid once it printed "ready",
# and exits 77 where it is not built), and stop_sigwait_daemon (SIGTERM,
# then reaps it and sets $rc to its exit status; it leaves $pids, or cleanup
# would kill the pid again, by then maybe another process's).
B=${KK_BUILD:?}
pids=
tmp=$(mktemp -d "/tmp/kk-${KK_CTL_LIB_NAME:-ctl}.XXXXXX")
chmod 755 "$tmp"
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
control_env=
key_line='^target_key 0 '
if [ "${KK_TEST_LABEL:-default}" = fallback ]; then
	control_env=KK_CONTROL=1
	# (and an untouched key is not listed: the reply is the header alone)
	key_line='^# name enabled count sites module mode$'
fi
n=0
start() {
	n=$((n + 1))
	mkfifo "$tmp/p$n"
	chmod 666 "$tmp/p$n"
	"$@" env $control_env "$B/test/progs/jump_label_prog" > "$tmp/p$n" &
	pids="$pids $!"
	read -r tpid < "$tmp/p$n" || fail "$*: jump_label_prog did not start"
	pids="$pids $tpid"
	grep -q " @kernelkit/$tpid\$" /proc/net/unix || fail "$*: no @kernelkit/$tpid"
}
start_sigwait_daemon() {
	[ -x "$B/test/progs/sigwait_daemon" ] || { echo "not built"; exit 77; }
	mkfifo "$tmp/sigwait_out"
	env $control_env "$B/test/progs/sigwait_daemon" 2 > "$tmp/sigwait_out" 2>/dev/null &
	dpid=$!
	pids="$pids $dpid"
	exec 3< "$tmp/sigwait_out"
	read -r line <&3 || fail "the daemon died before it was ready"
	[ "$line" = ready ] || fail "first line '$line', want 'ready'"
}
stop_sigwait_daemon() {
	kill -TERM "$dpid"
	wait "$dpid"
	rc=$?
	pids=${pids%" $dpid"}
}
