#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -f follows a process, not a pid (kernelkit issue 37, item 7).  In a
# pid and network namespace of its own (so that a pid is easy to give again:
# /proc/sys/kernel/ns_last_pid), A (test/progs/control_guest) writes a trace
# record that kkctl -f -p A read dynamic_debug/trace_pipe prints.  kkctl is
# stopped (SIGSTOP), A exits, B starts with A's pid and writes a record of
# its own, and kkctl is continued: it must end with one line saying A
# exited, status 1, and never print B's record (before, it reconnected to B
# and printed B's records as A's, for ever).
#
# A process's start time counts clock ticks (10 ms), and B often starts in
# A's tick: kkctl used to tell them apart by it, and followed B then (CI, run
# of b987c71).  So B must have A's start time: when the tick did not give it,
# a copy of B's /proc/PID/stat with A's start is bound over it (in the
# namespace's own mount namespace, kkctl's too); where that cannot be done,
# rounds run until one gave B A's start tick (each round must pass), at most
# 80: none is a skip, said so.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (a pid namespace, ns_last_pid)"; exit 77; }
command -v unshare >/dev/null || { echo "skip: needs unshare"; exit 77; }
KK_GUEST_LIB_NAME=kkfollow
. "${KK_SRC:?}/test/guest-lib.sh"
chmod 755 "$tmp"
cat > "$tmp/inner.sh" <<'EOF'
# Inside: $1 the build's kkctl, $2 control_guest, $3 $tmp, $4 $control_env.
set -u
K=$1 PROG=$2 tmp=$3 env_=$4
fail() { echo "FAIL: $*"; [ -s "$tmp/follow.err" ] && cat "$tmp/follow.err"; exit 1; }
# guest X: control_guest on the fifos $tmp/inX and $tmp/outX (made before:
# no fork between ns_last_pid and B's); $gpid its pid.
guest() {
	env $env_ "$PROG" < "$tmp/in$1" > "$tmp/out$1" 2> /dev/null &
	gpid=$!
}
ask() {	# ask FDIN FDOUT LINE
	echo "$3" >&"$1"
	IFS= read -r ans <&"$2" || fail "no answer to '$3'"
	case $ans in ok*) ;; *) fail "'$3': $ans" ;; esac
}
# n records in kkctl's output, within 10 s (a bounded wait for the event)
wait_lines() {
	i=0
	while [ "$(grep -c 'guest hello 42$' "$tmp/follow")" -lt "$1" ]; do
		i=$((i + 1))
		[ $i -le 5000 ] || fail "kkctl -f printed $(grep -c . "$tmp/follow") lines, want $1 records"
		sleep 0.002	# short: A's life is the window for B to start in its tick
	done
}
# One round: A, B and kkctl -f as above.  Sets same=1 if B started in A's
# clock tick; returns 2 if B did not get A's pid (no test made).
round() {
	rm -f "$tmp/ina" "$tmp/outa" "$tmp/inb" "$tmp/outb"
	mkfifo "$tmp/ina" "$tmp/outa" "$tmp/inb" "$tmp/outb"
	guest a
	a=$gpid
	exec 3> "$tmp/ina" 4< "$tmp/outa"
	ask 3 4 tasks
	sa=$(start_of "$a")
	"$K" -p "$a" write dynamic_debug/control 'func guest_hello =T' > /dev/null || fail "+T on A"
	: > "$tmp/follow"
	"$K" -f -p "$a" read dynamic_debug/trace_pipe >> "$tmp/follow" 2> "$tmp/follow.err" &
	f=$!
	ask 3 4 debug
	wait_lines 1
	kill -STOP "$f"
	echo quit >&3
	wait "$a"
	exec 3>&- 4<&-
	echo $((a - 1)) > /proc/sys/kernel/ns_last_pid || { kill -9 "$f"; echo "skip: ns_last_pid"; exit 77; }
	guest b
	b=$gpid
	exec 6> "$tmp/inb" 7< "$tmp/outb"
	ask 6 7 tasks
	if [ "$b" != "$a" ]; then
		kill -9 "$f"
		wait "$f"
		echo quit >&6
		wait "$b"
		exec 6>&- 7<&-
		return 2
	fi
	[ "$(start_of "$b")" = "$sa" ] && same=1
	# When the tick did not give B A's start time, /proc says it did: B's
	# stat with A's start, bound over /proc/B/stat in this mount namespace
	# (kkctl's too).  kkctl has its pidfd to tell them apart, or nothing.
	[ "$same" -eq 0 ] && fake_start "$b" "$sa" && same=1 faked=" (faked: B's /proc stat shows A's start)"
	"$K" -p "$b" write dynamic_debug/control 'func guest_hello =T' > /dev/null || fail "+T on B"
	ask 6 7 debug
	kill -CONT "$f"
	i=0
	while kill -0 "$f" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$f/stat")" != Z ]; do
		i=$((i + 1))
		[ $i -le 1500 ] || { kill -9 "$f"; fail "kkctl -f still follows pid $a 15 s after A exited (B in A's tick: ${same:-0}): $(grep -c . "$tmp/follow") lines"; }
		sleep 0.01
	done
	wait "$f"
	rc=$?
	echo quit >&6
	wait "$b"
	exec 6>&- 7<&-
	[ "$rc" -eq 1 ] || fail "kkctl -f ended with status $rc, want 1"
	[ "$(grep -c . "$tmp/follow")" -eq 1 ] || fail "kkctl -f printed B's records: $(cat "$tmp/follow")"
	[ "$(wc -l < "$tmp/follow.err")" -eq 1 ] || fail "not one line: $(cat "$tmp/follow.err")"
	grep -qx "kkctl: process $a (control_guest): exited" "$tmp/follow.err" ||
		fail "kkctl -f: $(cat "$tmp/follow.err")"
}
start_of() { cut -d' ' -f22 "/proc/$1/stat"; }	# (comm has no space)
fake_start() {	# fake_start PID START
	awk -v s="$2" '{ i = index($0, ") "); n = split(substr($0, i + 2), f, " "); f[20] = s
		out = substr($0, 1, i + 1) f[1]; for (k = 2; k <= n; k++) out = out " " f[k]; print out }' \
		"/proc/$1/stat" > "$tmp/stat.$1" && mount --bind "$tmp/stat.$1" "/proc/$1/stat" 2>/dev/null &&
		[ "$(start_of "$1")" = "$2" ]
}
same=0 n=0 made=0 faked=
while [ "$same" -eq 0 ] && [ $n -lt 80 ]; do
	n=$((n + 1))
	round && made=$((made + 1))
done
[ "$made" -gt 0 ] || { echo "skip: B never got A's pid in $n rounds"; exit 77; }
[ "$same" -eq 1 ] || { echo "skip: $made rounds passed, but none gave B A's start tick (the case that failed)"; exit 77; }
echo "kkctl_follow: $made rounds passed, the last with B in A's start tick$faked"
EOF
unshare -n -p -f --mount-proc sh "$tmp/inner.sh" "$KKCTL" "$PROG" "$tmp" "$control_env"
