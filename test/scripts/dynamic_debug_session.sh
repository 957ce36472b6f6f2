#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/session (issue 39): what a tracer switches on is held by a
# lease, and goes back when the session ends, by `end` or because nobody
# renewed it.  test/progs/dynamic_debug_session has three sites (sess_alpha,
# sess_beta, sess_gamma) and answers commands on a pipe; kkctl writes the
# session file.  Checked:
#  1. begin, renew, end: the reply's counts; at the end a site is put back
#     when its flags are still the session's, and left as it is when a write
#     of dynamic_debug/control changed it during the session;
#  2. one session: a second begin is refused (EBUSY, one line) and changes
#     nothing;
#  3. a bad lease or a bad query is refused in one line and changes nothing;
#  4. the lease: a session nobody renews ends by itself, with no client
#     connecting (the program reads its own flags in-process): begun by a
#     kkctl that is gone, and begun from a thread of the program; with no
#     session open the endpoint's poll() has no timeout (no periodic wake-up);
#  5. fork: the child keeps the session (same id) with a fresh lease, is
#     renewed and ended by that id, and ends by itself when nobody renews it.
# Every wait is for a condition, bounded (30 s), never a sleep that orders.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
PROG=$B/test/progs/dynamic_debug_session
[ -x "$PROG" ] && [ -x "$KKCTL" ] || { echo "not built"; exit 77; }
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
tmp=$(mktemp -d /tmp/kk-session.XXXXXX)
pid=
pids=
cleanup() {
	for p in $pid $pids; do kill -9 "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
	echo "FAIL: ${t:+$t: }$*"
	[ -s "$tmp/err" ] && { echo "--- the program's stderr"; cat "$tmp/err"; }
	exit 1
}
. "${KK_SRC:?}/test/pipe-lib.sh"	# cmd, finish

mkfifo "$tmp/in" "$tmp/out"
env $control_env "$PROG" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
pid=$!
exec 3> "$tmp/in" 4< "$tmp/out"
cmd hello
nl='
'
# flags P FUNC: FUNC's flags in process P, as kkctl reads them ("=_", "=pT")
flags() {
	"$KKCTL" -p "$1" read dynamic_debug/control > "$tmp/ctl" 2>&1 || fail "read control: $(cat "$tmp/ctl")"
	awk -v f="]$2" 'index($0, f " ") { for (i = 1; i <= NF; i++) if ($i ~ /^=/) { print $i; exit } }' \
		"$tmp/ctl"
}
# want_flags P FUNC=FLAGS...
want_flags() {
	p=$1
	shift
	for w in "$@"; do
		got=$(flags "$p" "${w%%=*}")
		[ "$got" = "=${w#*=}" ] || fail "${w%%=*}'s flags are $got, want =${w#*=}"
	done
}
# sw P TEXT: write TEXT to P's dynamic_debug/session: $reply (stdout and
# stderr), $rc
sw() {
	reply=$("$KKCTL" -p "$1" write dynamic_debug/session "$2" 2>&1)
	rc=$?
}
# refused WHAT: the last sw failed with exactly one line that matches WHAT
refused() {
	[ $rc -eq 1 ] || fail "exit $rc, want 1: $reply"
	[ "$(printf '%s\n' "$reply" | wc -l)" -eq 1 ] || fail "not one line: $reply"
	printf '%s\n' "$reply" | grep -Eq "$1" || fail "'$reply' does not say '$1'"
}
# no_session P: P's dynamic_debug/session reads "no session"
no_session() {
	s=$("$KKCTL" -p "$1" read dynamic_debug/session 2>&1) || fail "read session: $s"
	[ "$s" = "no session" ] || fail "process $1's session: '$s', want 'no session'"
}
hex='[0-9a-f]{16}'

t="begin/renew/end"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func sess_gamma +p' > /dev/null || fail "+p refused"
want_flags "$pid" sess_alpha=_ sess_beta=_ sess_gamma=p
no_session "$pid"
sw "$pid" "begin 60000${nl}func sess_alpha +T${nl}func sess_beta +T; func sess_gamma +T"
[ $rc -eq 0 ] || fail "begin: $reply"
printf '%s\n' "$reply" | grep -Eqx "session $hex: matched 3 changed 3" || fail "begin replied '$reply'"
id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
want_flags "$pid" sess_alpha=T sess_beta=T sess_gamma=pT
s=$("$KKCTL" -p "$pid" read dynamic_debug/session)
printf '%s\n' "$s" | grep -Eqx "session $id lease_ms 60000 expires_in_ms [0-9]+ sites 3" ||
	fail "read: '$s'"
# somebody else changes sess_beta during the session: it is theirs now
"$KKCTL" -p "$pid" write dynamic_debug/control 'func sess_beta =p' > /dev/null || fail "=p refused"
sw "$pid" "renew $id"
[ $rc -eq 0 ] || fail "renew: $reply"
sw "$pid" "renew 0123456789abcdef"
refused "no session 0123456789abcdef"
sw "$pid" "end 0123456789abcdef"
refused "no session 0123456789abcdef"
want_flags "$pid" sess_alpha=T sess_beta=p sess_gamma=pT
sw "$pid" "end $id"
[ $rc -eq 0 ] || fail "end: $reply"
[ "$reply" = "session $id ended: restored 2, left 1" ] || fail "end replied '$reply'"
want_flags "$pid" sess_alpha=_ sess_beta=p sess_gamma=p
no_session "$pid"
sw "$pid" "end $id"
refused "no session $id"
sw "$pid" "renew $id"
refused "no session $id"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func sess_beta =_; func sess_gamma =_' > /dev/null ||
	fail "=_ refused"
echo "ok: $t"

t="one session"
sw "$pid" "begin 60000${nl}func sess_alpha +T"
[ $rc -eq 0 ] || fail "begin: $reply"
id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
sw "$pid" "begin 60000${nl}func sess_beta +T"
refused "^kkctl: .*busy: session $id is open \(its lease ends in [0-9]+ ms\)$"
want_flags "$pid" sess_alpha=T sess_beta=_
sw "$pid" "end $id"
[ "$reply" = "session $id ended: restored 1, left 0" ] || fail "end replied '$reply'"
echo "ok: $t: $reply"

t="bad input"
for lease in 99 60001 1000x x "" "-1" 99999999999999999999; do
	sw "$pid" "begin $lease${nl}func sess_alpha +T"
	refused "bad lease"
done
sw "$pid" "begin 1000${nl}func sess_alpha +T${nl}func sess_beta +Q"
refused "query 2 is malformed \(unknown flag 'Q'\)"
sw "$pid" "begin 1000${nl}func sess_alpha +T${nl}nonsense sess_beta +T"
refused "query 2 is malformed"
sw "$pid" "begin 1000"
refused "no query"
sw "$pid" "renew"
refused "expected a session id"
sw "$pid" "stop"
refused "expected 'begin LEASE_MS'"
want_flags "$pid" sess_alpha=_ sess_beta=_ sess_gamma=_
no_session "$pid"
echo "ok: $t: $reply"

# The endpoint thread's wait: "none" (poll() with no timeout), "some"
# (with one), or "" (not in poll: busy, or a system call we do not know).
ctl_tid=
for c in /proc/"$pid"/task/*/comm; do
	[ "$(cat "$c" 2>/dev/null)" = kk-control ] && ctl_tid=$(basename "$(dirname "$c")")
done
poll_wait() {
	set -- $(cat "/proc/$pid/task/$ctl_tid/syscall" 2>/dev/null)
	case ${1:-} in
	7) case ${4:-} in 0xffffffff | 0xffffffffffffffff) echo none ;; *) echo some ;; esac ;; # x86-64 poll: int -1
	271 | 73) [ "${4:-}" = 0x0 ] && echo none || echo some ;;	# ppoll (x86-64, arm64)
	esac
}
# wait_poll WANT: the thread waits in poll(), its timeout WANT (30 s bound)
wait_poll() {
	i=0
	while w=$(poll_wait); [ "$w" != "$1" ]; do
		i=$((i + 1))
		[ $i -le 3000 ] || fail "the endpoint's thread does not wait in poll() with $1 timeout ($w)"
		[ -z "$w" ] || [ "$2" = any ] || break
		sleep 0.01
	done
	[ "$w" = "$1" ] || fail "the endpoint's thread waits with $w timeout, want $1"
}
t="no session, no wake-up"
if [ -n "$ctl_tid" ] && [ -n "$(poll_wait)" ]; then
	wait_poll none any
	sw "$pid" "begin 60000${nl}func sess_alpha +T"
	id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
	# the client gone or not, a session open means a timeout
	wait_poll some first
	sw "$pid" "end $id"
	[ $rc -eq 0 ] || fail "end: $reply"
	wait_poll none any
	echo "ok: $t"
else
	echo "SKIP: $t: cannot see the endpoint's system call in /proc/$pid/task/${ctl_tid:-?}/syscall"
fi

# wait_own FUNC FLAGS: the program's own reading of FUNC's flags is FLAGS
# (30 s bound); no client connects meanwhile
wait_own() {
	i=0
	while cmd "flags $1"; [ "$ans" != "ok =$2" ]; do
		i=$((i + 1))
		[ $i -le 3000 ] || fail "$1 is still $ans 30 s after its lease, want =$2"
		sleep 0.01
	done
}
t="lease, kkctl gone"
sw "$pid" "begin 300${nl}func sess_alpha +T"
[ $rc -eq 0 ] || fail "begin: $reply"
printf '%s\n' "$reply" | grep -Eqx "session $hex: matched 1 changed 1" || fail "begin replied '$reply'"
wait_own sess_alpha _
no_session "$pid"
echo "ok: $t"

t="lease, begun in the program"
cmd "begin 300 func sess_beta +T"
printf '%s\n' "$ans" | grep -Eqx "ok session $hex: matched 1 changed 1" || fail "begin: $ans"
wait_own sess_beta _
no_session "$pid"
echo "ok: $t"

t="fork"
sw "$pid" "begin 60000${nl}func sess_alpha +T"
[ $rc -eq 0 ] || fail "begin: $reply"
id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
# Let 1.5 s of the parent's lease run (the time the lease is about), then
# fork: a fresh lease has more left in the child than the parent had just
# before the fork.
sleep 1.5
cmd session
set -- $ans
left_parent=$7
t1=$(date +%s%N)
cmd fork
t2=$(date +%s%N)
set -- $ans
kid=$2
pids="$pids $kid"
shift 2
printf '%s\n' "$*" | grep -Eqx "session $id lease_ms 60000 expires_in_ms [0-9]+ sites 1" ||
	fail "the child's session: '$*'"
# The fork came after t1, its line before t2: a fresh lease has at least
# 60000 ms less the time between them left (a slow machine only weakens the
# check); one copied from the parent had at most $left_parent.
fresh_min=$((60000 - (t2 - t1) / 1000000))
[ "$6" -ge "$fresh_min" ] ||
	fail "the child's lease ends in $6 ms, under $fresh_min: not fresh (the parent's: $left_parent)"
[ "$fresh_min" -gt "$left_parent" ] ||
	echo "note: the fork took $(((t2 - t1) / 1000000)) ms: a copied lease would pass this run's check"
i=0
until grep -q " @kernelkit/$kid\$" /proc/net/unix; do
	i=$((i + 1))
	[ $i -le 3000 ] || fail "the child $kid serves no endpoint"
	sleep 0.01
done
want_flags "$kid" sess_alpha=T
sw "$kid" "renew $id"
[ $rc -eq 0 ] || fail "the child's renew: $reply"
sw "$kid" "end $id"
[ "$reply" = "session $id ended: restored 1, left 0" ] || fail "the child's end: '$reply'"
want_flags "$kid" sess_alpha=_
want_flags "$pid" sess_alpha=T
no_session "$kid"
kill -9 "$kid"
sw "$pid" "end $id"
[ "$reply" = "session $id ended: restored 1, left 0" ] || fail "the parent's end: '$reply'"
echo "ok: $t: renewed and ended by its id"

t="fork, nobody renews"
sw "$pid" "begin 1000${nl}func sess_gamma +T"
[ $rc -eq 0 ] || fail "begin: $reply"
id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
cmd fork
set -- $ans
kid=$2
pids="$pids $kid"
shift 2
if [ "$*" = "no session" ]; then
	echo "SKIP: $t: the parent's lease of 1 s ended before its fork (a slow machine)"
else
	printf '%s\n' "$*" | grep -Eqx "session $id lease_ms 1000 expires_in_ms [0-9]+ sites 1" ||
		fail "the child's session: '$*'"
	i=0
	while [ "$(flags "$kid" sess_gamma)" != "=_" ]; do
		i=$((i + 1))
		[ $i -le 3000 ] || fail "the child's sess_gamma is still $(flags "$kid" sess_gamma) after 30 s"
		sleep 0.01
	done
	no_session "$kid"
	echo "ok: $t: the child's session ended by itself"
fi
wait_own sess_gamma _
no_session "$pid"
finish
echo "dynamic_debug_session: ok"
