#!/bin/sh
# SPDX-License-Identifier: MIT
# The trust cases with two real users (created here, removed at exit):
#  1. user B squats @kernelkit/PID of user A's process before that process
#     starts its endpoint: A's process takes @kernelkit/PID/1 and says so on
#     stderr in one line; A's kkctl refuses B's socket (nothing sent to it)
#     and reaches the real endpoint; A's kkctl ls lists the process once;
#  2. B squats the name of an A process that serves none: A's kkctl refuses
#     it before sending anything, says why in one line, exits 1;
#  3. B's kkctl refuses A's process (another uid), B's ls does not list it;
#  4. root's kkctl ls lists A's process, and root may read it.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root to create two users"; exit 77; }
command -v useradd >/dev/null && command -v userdel >/dev/null && command -v setpriv >/dev/null ||
	{ echo "skip: needs useradd, userdel and setpriv"; exit 77; }
B=${KK_BUILD:?}
ua=kkta$$ ub=kktb$$
pids=
tmp=$(mktemp -d /tmp/kk-users.XXXXXX)
cleanup() {
	for p in $pids; do kill -9 "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	userdel -f "$ua" 2>/dev/null
	userdel -f "$ub" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
useradd -M -N -r -s /bin/sh "$ua" || { echo "skip: useradd failed"; exit 77; }
useradd -M -N -r -s /bin/sh "$ub" || { echo "skip: useradd failed"; exit 77; }
chmod 755 "$tmp"
cp "$B/kkctl" "$B/test/progs/control_squat" "$tmp/"
chmod 755 "$tmp/kkctl" "$tmp/control_squat"
as() { u=$1; shift; setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@"; }
# bg_as USER OUT CMD...: in the background, stdout to OUT (opened by the
# child: OUT may be a FIFO), with $! the program's own pid (a simple command
# is exec'd).
bg_as() {
	u=$1 o=$2; shift 2
	setpriv --reuid="$u" --regid="$(id -g "$u")" --clear-groups "$@" > "$o" &
}
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1

# ---- 1. B squats the name before A's process binds it
mkfifo "$tmp/go" "$tmp/apid" "$tmp/sq"
: > "$tmp/a.err"
chmod 666 "$tmp/a.err"
chmod 666 "$tmp/go" "$tmp/apid" "$tmp/sq"
# The pid is known before exec (exec keeps it); the endpoint starts after it.
bg_as "$ua" "$tmp/apid" sh -c 'echo $$; read x < "$1"; exec env $3 "$2" 2> "$4"' sh \
	"$tmp/go" "$B/test/progs/jump_label_prog" "$control_env" "$tmp/a.err"
exec 5< "$tmp/apid"
read -r apid <&5 || fail "no pid from A"
pids="$pids $apid"
bg_as "$ub" "$tmp/sq" "$tmp/control_squat" "$apid"
sq=$!
pids="$pids $sq"
exec 6< "$tmp/sq"
read -r ready <&6 || fail "B's squatter did not start"
[ "$ready" = ready ] || fail "squatter: $ready"
echo go > "$tmp/go"
read -r printed <&5 || fail "A's program did not start"
[ "$printed" = "$apid" ] || fail "A's program printed $printed, want $apid"
grep -q " @kernelkit/$apid/1\$" /proc/net/unix || fail "no @kernelkit/$apid/1"
[ "$(wc -l < "$tmp/a.err")" -eq 1 ] || fail "A's stderr is not one line: $(cat "$tmp/a.err")"
grep -q "@kernelkit/$apid is taken by another socket" "$tmp/a.err" ||
	fail "A's stderr: $(cat "$tmp/a.err")"
as "$ua" "$tmp/kkctl" -p "$apid" read static_keys > "$tmp/out" 2> "$tmp/err" ||
	fail "A's kkctl: exit $?: $(cat "$tmp/err")"
grep -q '^# name enabled' "$tmp/out" || fail "A's kkctl output: $(cat "$tmp/out")"
grep -q "skipped a foreign socket on process $apid's name; using @kernelkit/$apid/1" "$tmp/err" ||
	fail "A's kkctl says nothing of the squatter: $(cat "$tmp/err")"
read -r got <&6 || fail "squatter: no report"
[ "$got" = "received 0" ] || fail "B's squatter got data from A's kkctl: $got"
as "$ua" "$tmp/kkctl" ls > "$tmp/ls" || fail "A's ls"
[ "$(grep -c "^$apid " "$tmp/ls")" -eq 1 ] || fail "A's ls: $(cat "$tmp/ls")"
exec 6<&-

# ---- 2. B squats the name of an A process that serves none
bg_as "$ua" /dev/null sleep 60
sl=$!
pids="$pids $sl"
bg_as "$ub" "$tmp/sq" "$tmp/control_squat" "$sl"
pids="$pids $!"
exec 6< "$tmp/sq"
read -r ready <&6 || fail "B's second squatter did not start"
as "$ua" "$tmp/kkctl" -p "$sl" write static_keys secret > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "A's kkctl on a squatted name: exit $rc"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "not one line: $(cat "$tmp/err")"
grep -q "refusing @kernelkit/$sl: it is served by process [0-9]* (uid $(id -u "$ub")), not by process $sl" \
	"$tmp/err" || fail "refusal: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "output from a squatter: $(cat "$tmp/out")"
read -r got <&6 || fail "squatter: no report"
[ "$got" = "received 0" ] || fail "B's squatter got A's query: $got"
exec 6<&-
as "$ua" "$tmp/kkctl" ls > "$tmp/ls" || fail "A's ls"
grep -q "^$sl " "$tmp/ls" && fail "A's ls lists B's squatter: $(cat "$tmp/ls")"

# ---- 3. B may not control A's process
as "$ub" "$tmp/kkctl" -p "$apid" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "B's kkctl on A's process: exit $rc"
grep -q "refusing process $apid: it runs as uid $(id -u "$ua")" "$tmp/err" ||
	fail "B's refusal: $(cat "$tmp/err")"
as "$ub" "$tmp/kkctl" ls > "$tmp/ls" || fail "B's ls"
grep -q "^$apid " "$tmp/ls" && fail "B's ls lists A's process"

# ---- 4. root sees and reads A's process
"$B/kkctl" ls > "$tmp/ls" || fail "root's ls"
grep -Eq "^$apid +$(id -u "$ua") +jump_label_prog\$" "$tmp/ls" || fail "root's ls: $(cat "$tmp/ls")"
"$B/kkctl" -p "$apid" read static_keys > /dev/null 2> "$tmp/err" || fail "root's read: $(cat "$tmp/err")"
echo "kkctl_users: ok"
