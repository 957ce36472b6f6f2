# SPDX-License-Identifier: MIT
# Waiting helpers of the kkctl record scripts, sourced once $K (kkctl) and
# fail() exist (or first, by a script that then calls record_setup).
# record_setup NAME [PROG]: the set-up of a script that drives PROG
# (test/progs/, default record_flood) with kkctl: control-lib.sh with its
# $tmp named NAME (B, $pids, fail(), $control_env), K and PROG; exit 77
# where kkctl or PROG is not built.
record_setup() {
	KK_CTL_LIB_NAME=$1
	. "${KK_SRC:?}/test/control-lib.sh"
	K=$B/kkctl
	PROG=$B/test/progs/${2:-record_flood}
	[ -x "$PROG" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
}
# prog_start NAME [VAR=VALUE...] -- [ARG...]: $PROG ARG... in the
# background, $control_env and each VAR=VALUE (one word: it may hold
# spaces) in its environment, its stdin on fd 3 and its stdout on fd 4
# (fifos), its stderr in $tmp/NAME.err; sets $prog_pid.
prog_start() {
	prog_err=$tmp/$1.err
	shift
	mkfifo "$tmp/in" "$tmp/out"
	(
		while [ "$1" != -- ]; do
			export "$1"
			shift
		done
		shift
		exec env $control_env "$PROG" "$@"
	) < "$tmp/in" > "$tmp/out" 2> "$prog_err" &
	prog_pid=$!
	pids="$pids $prog_pid"
	exec 3> "$tmp/in" 4< "$tmp/out"
}
# trio_start: record_trio ($PROG) by prog_start; sets $trio.
# trio_ask LINE: one command of record_trio's, its answer in $ans ("ok...").
trio_start() {
	prog_start trio --
	trio=$prog_pid
}
trio_ask() {
	echo "$1" >&3
	IFS= read -r ans <&4 || fail "record_trio: no answer to '$1'"
	case $ans in ok*) ;; *) fail "record_trio: '$1': $ans" ;; esac
}
# flood_start [VAR=VALUE...] -- [ARG...]: record_flood ($PROG) by
# prog_start, once it said "ready" and its endpoint listens; sets $flood.
# flood_go: one round of record_flood's ("go"), until it answered "done".
flood_start() {
	prog_start flood "$@"
	flood=$prog_pid
	IFS= read -r ans <&4 || fail "record_flood did not start"
	[ "$ans" = ready ] || fail "record_flood: $ans"
	until_ok "endpoint of $flood" served "$flood"
}
flood_go() {
	echo go >&3
	IFS= read -r ans <&4 || fail "record_flood: no answer to go"
	[ "$ans" = done ] || fail "record_flood: $ans"
}
# until_ok WHAT CMD...: until CMD succeeds, at most 30 s (a hang guard: each
# try waits for the event).
until_ok() {
	what=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "$what: not within 30 s"
		sleep 0.05
	done
}
gone() { ! kill -0 "$1" 2>/dev/null; }
# wait_gone WHAT PID SECONDS: until PID has exited, at most SECONDS (a hang
# guard: then fail "WHAT: still running after SECONDS s").
wait_gone() {
	i=0
	while kill -0 "$2" 2>/dev/null; do
		i=$((i + 1))
		[ $i -le $(($3 * 20)) ] || fail "$1: still running after $3 s"
		sleep 0.05
	done
}
# all_stopped PID: every thread of PID stopped (kill -STOP returns before the
# group stop reached them all)
all_stopped() {
	for st in /proc/"$1"/task/*/stat; do
		state=$(sed 's/.*) \(.\).*/\1/' "$st" 2>/dev/null) || continue
		[ "$state" = T ] || return 1
	done
	return 0
}
served() { grep -q " @kernelkit/$1\$" /proc/net/unix; }
session_of() { "$K" -p "$1" read dynamic_debug/session 2>&1; }
has_session() { session_of "$1" | grep -q '^session '; }
no_session() { session_of "$1" | grep -qx 'no session'; }
# session_begin P 'begin LEASE_MS [held]': that begin of 'func flood_tick
# +T' in process P, by a one-shot kkctl write (it exits: a holder gone);
# its reply.  session_end P: end P's open session.
session_begin() { "$K" -p "$1" write dynamic_debug/session "$(printf '%s\nfunc flood_tick +T' "$2")" 2>&1; }
session_end() {
	id=$(session_of "$1" | cut -d' ' -f2)
	"$K" -p "$1" write dynamic_debug/session "end $id" > /dev/null || fail "end $id"
}
# site_off P: record_flood's flood_tick has no flag set in process P.
site_off() { "$K" -p "$1" read dynamic_debug/control | grep flood_tick | grep -q ' =_ '; }
# ended_clean RC SITES: kkctl record exited with RC 0 and said one line
# ($tmp/r.err), which puts back SITES sites (a number, or a grep pattern)
# and leaves none as others set them; no lease ran out; no process in
# $procs (record_flood) has a session open or flood_tick on.
ended_clean() {
	[ "$1" -eq 0 ] || fail "kkctl record: status $1"
	grep -q 'no session' "$tmp/r.err" && fail "a session's lease ran out while kkctl lived"
	grep -q "; sites put back $2, left as others set them 0\$" "$tmp/r.err" ||
		fail "kkctl did not put back the sites (a lease ran out?)"
	[ "$(wc -l < "$tmp/r.err")" -eq 1 ] || fail "kkctl record said more than its summary"
	for p in $procs; do
		no_session "$p" || fail "process $p: a session is still open: $(session_of "$p")"
		site_off "$p" || fail "process $p: flood_tick is still switched on"
	done
}
