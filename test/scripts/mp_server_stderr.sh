#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 24, an nginx-shaped server started with fd 2 closed (as nginx's test
# harness starts it): the master opens its log and dup2()s it onto fd 2.  An
# endpoint thread that waits in accept4() holds the kernel's reservation of
# the lowest free number, 2, so that dup2 fails with EBUSY and the server
# exits.  mp_server waits until its other threads sleep before the dup2, so
# that such a thread is surely in accept4() by then: the failure, if any, is
# on every start, not by chance.  20 starts with `2>&-`: every one must get
# ready, and its log must hold the master's and both workers' lines.
set -u
KK_CTL_LIB_NAME=mpstderr
. "${KK_SRC:?}/test/control-lib.sh"
runs=20 bad=0 first=
i=0
while [ $i -lt $runs ]; do
	i=$((i + 1))
	log=$tmp/log$i
	mkfifo "$tmp/out$i"
	# env execs the server: $! is the master
	env $control_env "$B/test/progs/mp_server" -w 2 -l "$log" > "$tmp/out$i" 2>&- &
	mp=$!
	pids="$pids $mp"
	# The first line: "ready ..." once every worker is up, or nothing (EOF)
	# when the master exits before it forks any.
	line=
	read -r line < "$tmp/out$i"
	why=
	case $line in
	"ready $mp "*)
		grep -q "^mp_server $mp: master: listening on 127.0.0.1:" "$log" ||
			why="no listening line in the log"
		[ "$(grep -c ': worker of generation 1 ready' "$log")" -eq 2 ] ||
			why="${why:+$why; }not 2 workers' lines in the log"
		kill -TERM "$mp"
		;;
	*)
		why="did not start: ${line:-no ready line}; log: $(cat "$log" 2>/dev/null)"
		;;
	esac
	wait "$mp"
	rc=$?
	[ -z "$why" ] && [ $rc -ne 0 ] && why="exit status $rc after SIGTERM"
	if [ -n "$why" ]; then
		bad=$((bad + 1))
		[ -n "$first" ] || first="start $i: $why"
	fi
done
if [ $bad -ne 0 ]; then
	echo "FAIL: $bad of $runs starts with fd 2 closed failed; first: $first"
	exit 1
fi
echo "mp_server_stderr: $runs of $runs starts with fd 2 closed ok"
