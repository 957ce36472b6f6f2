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
# 127.0.0.1 only.
set -u
KK_CTL_LIB_NAME=mpquiet
. "${KK_SRC:?}/test/control-lib.sh"
reqs=400

mkfifo "$tmp/out"
# env execs the server: $! is the master
env $control_env "$B/test/progs/mp_server" -n -w 2 -l "$tmp/log" > "$tmp/out" &
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
# The kk-control thread of each process, once it waits in poll(): it has
# finished starting (reading /proc, binding) and sleeps until a client comes.
ctl=
for p in $M $W1 $W2; do
	t=
	i=0
	while [ $i -lt 500 ]; do
		for d in /proc/$p/task/*; do
			[ "$(cat "$d/comm" 2>/dev/null)" = kk-control ] || continue
			case "$(cat "$d/wchan" 2>/dev/null) $(cut -d')' -f2 "$d/stat" 2>/dev/null)" in
			*poll*" S "*) t=$d ;;
			esac
		done
		[ -n "$t" ] && break
		i=$((i + 1))
		sleep 0.01
	done
	[ -n "$t" ] || fail "process $p: no kk-control thread asleep in poll()"
	ctl="$ctl $t"
done

before=
for t in $ctl; do before="$before $(switches "$t")"; done
served0=$(( $(switches /proc/$W1/task/$W1) + $(switches /proc/$W2/task/$W2) ))

i=0
set --
while [ $i -lt $reqs ]; do
	i=$((i + 1))
	set -- "$@" "GET /$i"
done
"$B/test/progs/mp_server" -c "$port" "$@" > "$tmp/replies" ||
	fail "the client got no OK reply to every request: $(head -3 "$tmp/replies")"
[ "$(grep -c '^OK /' "$tmp/replies")" -eq $reqs ] || fail "not $reqs replies"

served=$(( $(switches /proc/$W1/task/$W1) + $(switches /proc/$W2/task/$W2) - served0 ))
[ $served -ge $((reqs / 2)) ] ||
	fail "the workers made $served context switches for $reqs requests: counts not read right"
failed=0
set -- $before
for t in $ctl; do
	now=$(switches "$t")
	[ "$now" -eq "$1" ] || {
		echo "FAIL: ${t#/proc/}: the kk-control thread switched $(( now - $1 )) times while" \
			"its process served $reqs requests"
		failed=1
	}
	shift
done
kill -TERM "$M"
wait "$M" || { echo "FAIL: mp_server exited $? after SIGTERM"; failed=1; }
[ $failed -eq 0 ] && echo "ok: 3 kk-control threads, 0 switches; the workers $served, for $reqs requests"
exit $failed
