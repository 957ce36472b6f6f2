#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 24: an nginx-shaped server (test/progs/mp_server.c: a root master,
# workers that setuid() to a throwaway uid U, reload by SIGHUP, binary upgrade
# by SIGUSR2) stays under kkctl's control through its whole life.
#  b. root's kkctl reaches the master and every worker after the workers'
#     setuid (`kkctl --tree MASTER` when kkctl has it, else -p each pid and a SKIP:
#     line);
#     'func handle_request +p' makes a request log its pr_debug line; U's
#     kkctl reaches (and switches) the workers, and is refused the master;
#  c. after a reload the new workers have the site on (fork), and '-p'
#     through kkctl switches it off in the master and every new worker: a
#     request then logs no debug line;
#  d. after a binary upgrade the new master and its workers have the site on
#     (exec), and '-p' switches all of them off.
# Checks go on after a failed one where they can, so that one run says all
# that is wrong; the script fails if any did.  127.0.0.1 only.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (the workers setuid)"; exit 77; }
command -v setpriv >/dev/null || { echo "skip: needs setpriv"; exit 77; }
U=$((3992000 + $$ % 1000))	# a throwaway uid and gid, no passwd entry
failed=0
KK_CTL_LIB_NAME=mpserver
. "${KK_SRC:?}/test/control-lib.sh"
bad() { echo "FAIL: $*"; failed=1; }
cp "$B/kkctl" "$tmp/"
chmod 755 "$tmp/kkctl"
tree=0
"$B/kkctl" --help 2>&1 | grep -q -- '--tree' && tree=1
[ $tree -eq 1 ] ||
	echo "SKIP: kkctl --tree not tested (b, c, d use -p each pid; d's old master's tree not checked): this kkctl's --help lists no --tree"

# ---- start: the master's stdout is a FIFO read line by line on fd 5
mkfifo "$tmp/out"
env $control_env "$B/test/progs/mp_server" -w 2 -u "$U" -g "$U" -l "$tmp/log" -P "$tmp/pid" \
	> "$tmp/out" 2> "$tmp/early" &
M=$!
pids="$pids $M"
exec 5< "$tmp/out"
# next PATTERN: read the server's stdout up to a line matching PATTERN (a case
# pattern), into $line; the server's output ends only when every master is gone
next() {
	while read -r line <&5; do
		case $line in $1) return 0 ;; esac
	done
	fail "mp_server's stdout ended before '$1'; log: $(cat "$tmp/log" "$tmp/early")"
}
next "ready $M *"
set -- $line
port=$3 W1=$5 W2=$6
pids="$pids $W1 $W2"
[ "$(cat "$tmp/pid")" = "$M" ] || bad "pid file: $(cat "$tmp/pid"), want $M"
for w in $W1 $W2; do
	grep -q "^Uid:	$U	$U	$U	$U" "/proc/$w/status" || fail "worker $w did not setuid to $U"
done

# sel MASTER WORKERS...: the kkctl targets of one instance
sel() {
	if [ $tree -eq 1 ]; then
		echo "--tree $1"
	else
		for p in "$@"; do printf -- '-p %s ' "$p"; done
	fi
}
# write WHAT QUERY TARGETS...: root's kkctl writes QUERY; one "matched 1" each
write() {
	what=$1 q=$2; shift 2
	"$B/kkctl" "$@" write dynamic_debug/control "$q" > "$tmp/w" 2> "$tmp/w.err" ||
		{ bad "$what: kkctl $* write '$q': exit $?: $(cat "$tmp/w.err")"; return 0; }
	[ -s "$tmp/w.err" ] && bad "$what: kkctl said: $(cat "$tmp/w.err")"
	return 0
}
# flags WHAT WANT PIDS -- TARGETS...: root's kkctl reads the control file of
# TARGETS; handle_request has flags WANT (=p or =_) in each of PIDS, and no
# other flags anywhere
flags() {
	what=$1 want=$2 ps=
	shift 2
	while [ "$1" != -- ]; do ps="$ps $1"; shift; done
	shift
	"$B/kkctl" "$@" read dynamic_debug/control > "$tmp/r" 2> "$tmp/r.err" ||
		bad "$what: kkctl $* read: exit $?: $(cat "$tmp/r.err")"
	awk '/^==> /{ pid = $2 } /\]handle_request / { for (i = 1; i <= NF; i++) if ($i ~ /^=/) { print pid, $i; break } }' \
		"$tmp/r" > "$tmp/st"
	for p in $ps; do
		grep -qx "$p $want" "$tmp/st" ||
			bad "$what: process $p: handle_request is not $want: $(grep "^$p " "$tmp/st")"
	done
	grep -v " $want\$" "$tmp/st" > "$tmp/other" && bad "$what: not $want: $(cat "$tmp/other")"
	return 0
}
# req NAME: one request over loopback, answered
req() {
	KK_CONTROL=0 "$B/test/progs/mp_server" -c "$port" "GET $1" > "$tmp/reply" 2>&1 ||
		fail "request $1: $(cat "$tmp/reply")"
	[ "$(cat "$tmp/reply")" = "OK $1" ] || fail "request $1: reply $(cat "$tmp/reply")"
}
# logged NAME PIDS...: request NAME logged its debug line, from one of PIDS
# (the worker writes it before it replies)
logged() {
	n=$1; shift
	who=$(sed -n "s/^worker \([0-9]*\): request GET $n\$/\1/p" "$tmp/log")
	[ -n "$who" ] || { bad "request $n logged no debug line"; return 0; }
	for p in "$@"; do [ "$who" = "$p" ] && return 0; done
	bad "request $n logged by $who, not by one of $*"
}
quiet() {
	grep "request GET $1\$" "$tmp/log" > "$tmp/q" && bad "request $1 logged: $(cat "$tmp/q")"
	return 0
}

# ---- b. root reaches the master and the setuid workers; U reaches the workers
req b0
quiet b0
write "b" "func handle_request +p" $(sel $M $W1 $W2)
flags "b, root" =p $M $W1 $W2 -- $(sel $M $W1 $W2)
req b1
logged b1 $W1 $W2
for w in $W1 $W2; do
	as "$U" "$tmp/kkctl" -p "$w" write dynamic_debug/control 'func handle_request -p' \
		> /dev/null 2> "$tmp/u.err" || bad "b, uid $U on worker $w: exit $?: $(cat "$tmp/u.err")"
done
as "$U" "$tmp/kkctl" -p "$M" read dynamic_debug/control > /dev/null 2> "$tmp/u.err"
rc=$?
[ $rc -eq 1 ] || bad "b, uid $U on root's master: exit $rc, want 1 (refused)"
req b2
quiet b2

# ---- c. reload: the new workers inherit the master's +p; -p reaches all
# (the master kept its +p; U switched only the old workers off)
kill -HUP "$M"
next "ready $M $port 2 *"
set -- $line
W3=$5 W4=$6
pids="$pids $W3 $W4"
next "retired 1"		# the old workers are reaped: requests go to the new ones
flags "c, after reload" =p $M $W3 $W4 -- $(sel $M $W3 $W4)
req c1
logged c1 $W3 $W4
write "c" "func handle_request -p" $(sel $M $W3 $W4)
flags "c, after -p" =_ $M $W3 $W4 -- $(sel $M $W3 $W4)
req c2
req c3
quiet c2
quiet c3

# ---- d. binary upgrade: the new master and its workers inherit +p by exec
write "d" "func handle_request +p" $(sel $M $W3 $W4)
kill -USR2 "$M"
next "ready * $port 1 *"
set -- $line
M2=$2 W5=$5 W6=$6
pids="$pids $M2 $W5 $W6"
[ "$M2" != "$M" ] || fail "the upgrade made no new master"
[ "$(cat "$tmp/pid" 2>/dev/null)" = "$M2" ] || bad "d: pid file: $(cat "$tmp/pid"), want $M2"
[ "$(cat "$tmp/pid.oldbin" 2>/dev/null)" = "$M" ] || bad "d: no pid.oldbin with $M"
# the new master is a child of the old one: one tree
[ $tree -eq 1 ] && flags "d, the old master's tree" =p $M $W3 $W4 $M2 $W5 $W6 -- --tree $M
flags "d, after the upgrade" =p $M2 $W5 $W6 -- $(sel $M2 $W5 $W6)
kill -QUIT "$M"		# graceful: its workers finish, it exits
wait "$M" || bad "d: the old master exited with status $?"
[ -e "$tmp/pid.oldbin" ] && bad "d: the old master left pid.oldbin"
req d1
logged d1 $W5 $W6
write "d" "func handle_request -p" $(sel $M2 $W5 $W6)
flags "d, after -p" =_ $M2 $W5 $W6 -- $(sel $M2 $W5 $W6)
req d2
req d3
quiet d2
quiet d3

# ---- the new master exits on SIGTERM with its workers and its pid file
kill -TERM "$M2"
i=0
while [ $i -lt 100 ] && [ -d "/proc/$M2" ] && [ "$(cut -d' ' -f3 "/proc/$M2/stat" 2>/dev/null)" != Z ]; do
	sleep 0.05
	i=$((i + 1))
done
for p in $M2 $W5 $W6; do
	[ -d "/proc/$p" ] && [ "$(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null)" != Z ] &&
		bad "process $p still runs 5 s after SIGTERM to the master"
done
[ -e "$tmp/pid" ] && bad "the new master left its pid file"
[ $failed -eq 0 ] || exit 1
echo "mp_server: ok ($([ $tree -eq 1 ] && echo "--tree" || echo "-p each pid"))"
