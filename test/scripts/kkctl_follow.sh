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
		[ $i -le 1000 ] || fail "kkctl -f printed $(grep -c . "$tmp/follow") lines, want $1 records"
		sleep 0.01
	done
}
mkfifo "$tmp/ina" "$tmp/outa" "$tmp/inb" "$tmp/outb"
guest a
a=$gpid
exec 3> "$tmp/ina" 4< "$tmp/outa"
ask 3 4 tasks
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
[ "$b" = "$a" ] || { kill -9 "$f"; echo "skip: B got pid $b, not $a"; exit 77; }
"$K" -p "$b" write dynamic_debug/control 'func guest_hello =T' > /dev/null || fail "+T on B"
ask 6 7 debug
kill -CONT "$f"
i=0
while kill -0 "$f" 2>/dev/null && [ "$(cut -d' ' -f3 "/proc/$f/stat")" != Z ]; do
	i=$((i + 1))
	[ $i -le 1500 ] || { kill -9 "$f"; fail "kkctl -f still follows pid $a 15 s after A exited: $(grep -c . "$tmp/follow") lines"; }
	sleep 0.01
done
wait "$f"
rc=$?
echo quit >&6
[ "$rc" -eq 1 ] || fail "kkctl -f ended with status $rc, want 1"
[ "$(grep -c . "$tmp/follow")" -eq 1 ] || fail "kkctl -f printed B's records: $(cat "$tmp/follow")"
[ "$(wc -l < "$tmp/follow.err")" -eq 1 ] || fail "not one line: $(cat "$tmp/follow.err")"
grep -qx "kkctl: process $a (control_guest): exited" "$tmp/follow.err" ||
	fail "kkctl -f: $(cat "$tmp/follow.err")"
echo "kkctl_follow: ok"
EOF
unshare -n -p -f --mount-proc sh "$tmp/inner.sh" "$KKCTL" "$PROG" "$tmp" "$control_env"
