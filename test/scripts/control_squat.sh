#!/bin/sh
# SPDX-License-Identifier: MIT
# Someone squats all 16 predictable names of a future pid (@kernelkit/PID and
# @kernelkit/PID/1 .. /15; as nobody when we are root).  The process still
# serves an endpoint, on @kernelkit/PID.<random>, and says in one line on
# stderr every name it refused and the one it serves; kkctl finds that name
# in /proc/net/unix, verifies it, reaches the process (sending nothing to any
# squatter it passes, a fake random name included), and kkctl ls lists the
# process once.
set -u
KK_CTL_LIB_NAME=squat
. "${KK_SRC:?}/test/control-lib.sh"
squat=
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	squat="setpriv --reuid=nobody --regid=$(id -g nobody) --clear-groups"
fi
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1

# The pid is known before exec (exec keeps it); the endpoint starts after it.
mkfifo "$tmp/go" "$tmp/pid"
sh -c 'echo $$; read x < "$1"; exec env $3 "$2" 2> "$4"' sh \
	"$tmp/go" "$B/test/progs/jump_label_prog" "$control_env" "$tmp/err" > "$tmp/pid" &
pids="$pids $!"
exec 5< "$tmp/pid"
read -r pid <&5 || fail "no pid"
names="@kernelkit/$pid"
i=1
while [ $i -lt 16 ]; do names="$names @kernelkit/$pid/$i"; i=$((i + 1)); done
i=0
for n in $names; do
	$squat "$B/test/progs/control_squat" "${n#@kernelkit/}" > "$tmp/sq$i" &
	pids="$pids $!"
	[ $i -eq 0 ] && sq0=$!
	i=$((i + 1))
done
# Bounded polling: all 16 squatters listen.
for t in $(seq 200); do
	[ "$(grep -c " @kernelkit/$pid\(/[0-9]*\)\?\$" /proc/net/unix)" -eq 16 ] && break
	sleep 0.05
done
[ "$(grep -c " @kernelkit/$pid\(/[0-9]*\)\?\$" /proc/net/unix)" -eq 16 ] || fail "the squatters did not start"
echo go > "$tmp/go"
read -r printed <&5 || fail "the program did not start"
[ "$printed" = "$pid" ] || fail "the program printed $printed, want $pid"
own=$(grep -o " @kernelkit/$pid\.[0-9a-f]*\$" /proc/net/unix | tr -d ' ')
[ -n "$own" ] || fail "the process serves no endpoint: $(cat "$tmp/err")"
[ ${#own} -eq $((${#pid} + 28)) ] || fail "not 16 hex digits: $own"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "stderr is not one line: $(cat "$tmp/err")"
for n in $names; do
	grep -q "$n[ ,]" "$tmp/err" || fail "$n not named: $(cat "$tmp/err")"
done
grep -q "are taken by other sockets (refused); serving $own instead\$" "$tmp/err" ||
	fail "stderr: $(cat "$tmp/err")"

# A fake random name too: kkctl verifies those like any other.
$squat "$B/test/progs/control_squat" "$pid.0123456789abcdef" > "$tmp/sqfake" &
pids="$pids $!"
for t in $(seq 200); do
	grep -q " @kernelkit/$pid.0123456789abcdef\$" /proc/net/unix && break
	sleep 0.05
done
"$B/kkctl" -p "$pid" read static_keys > "$tmp/out" 2> "$tmp/kerr" ||
	fail "kkctl: exit $?: $(cat "$tmp/kerr")"
grep -q '^# name enabled' "$tmp/out" || fail "kkctl output: $(cat "$tmp/out")"
grep -q "skipped a foreign socket on process $pid's name; using $own\$" "$tmp/kerr" ||
	fail "kkctl says nothing of the squatters: $(cat "$tmp/kerr")"
"$B/kkctl" ls > "$tmp/ls" || fail "ls"
[ "$(grep -c "^$pid " "$tmp/ls")" -eq 1 ] || fail "ls: $(cat "$tmp/ls")"
# Every squatter kkctl passed by got nothing (one that printed a count was
# reached; the first, on the name itself, always is: it exits after one client).
wait "$sq0"
grep -q '^received 0$' "$tmp/sq0" || fail "the squatter of $pid: $(cat "$tmp/sq0")"
for f in "$tmp"/sq*; do
	if grep -q '^received' "$f"; then
		grep -q '^received 0$' "$f" || fail "a squatter got data: $(cat "$f")"
	fi
done
echo "control_squat: ok"
