#!/bin/sh
# SPDX-License-Identifier: MIT
# The library's threads stay asleep while a server works.  An nginx-shaped
# server (test/progs/mp_server.c: a master and 2 workers, sites off) answers
# 400 requests on one loopback connection; in that time the kk-control thread
# of the master and of each worker makes no context switch at all (voluntary
# and nonvoluntary counts of /proc/PID/task/TID/status), while the workers'
# own threads make hundreds (so the counts are read right).  A periodic
# wake-up, a timer, or work done per request in a library thread would show
# here.  This was one of the suspects when a server linked with kernelkit
# answered 3x slower under load; the cause was where the scheduler woke the
# worker, for a server without kernelkit too (docs/results.md, "Under load").
# A client of the endpoint wakes the thread for good reason, and root's
# kkctl ls reaches every process on the host, in any namespace (seen: 24
# switches each beside the kkctl tests; 130 with kkctl ls run in a loop).
# So the server notes each connection its library thread accepts and closes
# (MP_CTL_LOG, test/progs/mp_server.c), and a process that had a client in a
# window is measured again in the next one, up to 5 windows; a process that
# had none must have made no switch.  127.0.0.1 only.
set -u
KK_CTL_LIB_NAME=mpquiet
. "${KK_SRC:?}/test/control-lib.sh"
reqs=400
windows=5

mkfifo "$tmp/out"
: > "$tmp/ctl"
# env execs the server: $! is the master
env $control_env MP_CTL_LOG="$tmp/ctl" "$B/test/progs/mp_server" -n -w 2 -l "$tmp/log" \
	> "$tmp/out" &
M=$!
pids="$pids $M"
exec 5< "$tmp/out"
read -r line <&5 || fail "mp_server did not start; log: $(cat "$tmp/log")"
set -- $line
[ "$1 $2" = "ready $M" ] || fail "mp_server said '$line', want 'ready $M ...'"
port=$3 W1=$5 W2=$6
pids="$pids $W1 $W2"

# switches TASKDIR: its voluntary + nonvoluntary context switches
switches() {
	awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }' "$1/status"
}
# asleep PID: the task dir of its kk-control thread once it waits in poll()
# (it has finished starting, or serving a client, and sleeps until the next)
asleep() {
	i=0
	while [ $i -lt 500 ]; do
		for d in /proc/$1/task/*; do
			[ "$(cat "$d/comm" 2>/dev/null)" = kk-control ] || continue
			case "$(cat "$d/wchan" 2>/dev/null) $(cut -d')' -f2 "$d/stat" 2>/dev/null)" in
			*poll*" S "*) echo "$d"; return 0 ;;
			esac
		done
		i=$((i + 1))
		sleep 0.01
	done
	return 1
}
# clients PID FROM TO: did lines FROM+1..TO of the log show a client of
# PID's endpoint, or was one still connected at line FROM?
clients() {
	awk -v p="$1" -v from="$2" -v to="$3" '
		$1 != p { next }
		NR <= from { open += $2 == "a" ? 1 : -1; next }
		NR <= to { seen = 1 }
		END { exit !(open > 0 || seen) }' "$tmp/ctl"
}

# requests: $reqs requests on one connection, every reply OK
requests() {
	set --
	i=0
	while [ $i -lt $reqs ]; do
		i=$((i + 1))
		set -- "$@" "GET /$i"
	done
	"$B/test/progs/mp_server" -c "$port" "$@" > "$tmp/replies" ||
		fail "the client got no OK reply to every request: $(head -3 "$tmp/replies")"
	[ "$(grep -c '^OK /' "$tmp/replies")" -eq $reqs ] || fail "not $reqs replies"
}

todo="$M $W1 $W2"
w=0 failed=0 served=0
while [ -n "$todo" ] && [ $w -lt $windows ]; do
	w=$((w + 1))
	from=$(wc -l < "$tmp/ctl")
	watch=			# PID:TASKDIR:SWITCHES of each thread watched
	for p in $todo; do
		t=$(asleep "$p") || fail "process $p: no kk-control thread asleep in poll()"
		watch="$watch $p:$t:$(switches "$t")"
	done
	served0=$(( $(switches /proc/$W1/task/$W1) + $(switches /proc/$W2/task/$W2) ))
	requests
	served=$(( $(switches /proc/$W1/task/$W1) + $(switches /proc/$W2/task/$W2) - served0 ))
	[ $served -ge $((reqs / 2)) ] ||
		fail "the workers made $served context switches for $reqs requests: counts not read right"
	now=
	for e in $watch; do
		t=${e#*:}
		now="$now $(switches "${t%:*}")"
	done
	to=$(wc -l < "$tmp/ctl")
	todo=
	for e in $watch; do
		p=${e%%:*} t=${e#*:} b=${e##*:}
		t=${t%:*}
		set -- $now
		n=$1
		shift
		now="$*"
		if clients "$p" "$from" "$to"; then
			echo "window $w: process $p had a kkctl client: measured again"
			todo="$todo $p"
		elif [ "$n" -ne "$b" ]; then
			echo "FAIL: ${t#/proc/}: the kk-control thread switched $((n - b)) times while" \
				"its process served $reqs requests, with no client"
			failed=1
		fi
	done
done
[ -z "$todo" ] || { echo "FAIL: a kkctl client came in each of $windows windows to:$todo"; failed=1; }
kill -TERM "$M"
wait "$M" || { echo "FAIL: mp_server exited $? after SIGTERM"; failed=1; }
[ $failed -eq 0 ] && echo "ok: 3 kk-control threads, 0 switches in a window with no client" \
	"($w window(s)); the workers $served, for $reqs requests"
exit $failed
