#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl's deadline is one deadline (kernelkit issue 37, item 4): -t bounds
# each target's whole exchange -- finding its names, every connect attempt,
# entering its namespaces, the request and the reply -- however many names
# another user squats with a full listen backlog (test/progs/kkctl_squat_full,
# run as nobody).  Before, each name waited up to 5 s and the list was walked
# without looking at the deadline: `kkctl -t 2` took 12 s over 6 such names.
# `timeout 8 kkctl -t 2 ...` (-t 4 in namespaces) must therefore end by
# itself (not killed: 124):
#  1. a host process with no endpoint whose name and 5 alternatives are
#     squatted: exit 1, one line saying no connection came within 2 s;
#  2. a host process serving its random name because all 16 predictable
#     ones are squatted: reached (a squatter's full queue hides nothing);
#  3. the same two in a network and UTS namespace of their own (kkctl
#     connects from a child that entered it), by -p and by -M NAME ls;
#  4. the same in a rootless container of a throwaway uid S, squatted by
#     its own root (S): host root's kkctl enters its user namespace too.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (a squatter of another uid, namespaces)"; exit 77; }
for c in setpriv unshare nsenter timeout; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
KK_CTL_LIB_NAME=kkdeadline
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
SQ=$B/test/progs/kkctl_squat_full
[ -x "$SQ" ] || { echo "not built"; exit 77; }

# squat FIFO CMD...: CMD runs a squatter (setpriv or nsenter, which exec it:
# $! is the squatter, for cleanup); returns once its names are all full.
squat() {
	f=$1; shift
	mkfifo "$f"
	chmod 666 "$f"
	"$@" > "$f" &
	pids="$pids $!"
	read -r ready < "$f" || fail "the squatter did not start"
	[ "$ready" = ready ] || fail "the squatter: $ready"
}
# names PID COUNT: kernelkit/PID and its first COUNT-1 alternatives
names() {
	echo "$1"
	i=1
	while [ $i -lt "$2" ]; do echo "$1/$i"; i=$((i + 1)); done
}
# bounded WHAT RC CMD...: CMD (a kkctl -t 2, or -t 4 where each try forks a
# helper into a namespace: room for a loaded machine) ends by itself within
# 8 s, with status RC; its output in $tmp/out and $tmp/err.  (Before, 6 full
# names took 6 times the deadline, at most 5 s each.)
bounded() {
	what=$1 want=$2; shift 2
	timeout 8 "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -ne 124 ] || fail "$what: still running after 8 s"
	[ $rc -eq "$want" ] || fail "$what: exit $rc, want $want: $(cat "$tmp/err")"
}
# one_line WHAT PID [SECONDS]: $tmp/err is one line: no connection within
# SECONDS (2) s.
one_line() {
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$1: not one line: $(cat "$tmp/err")"
	grep -q "^kkctl: process $2 (sleep): no connection within ${3:-2} s" "$tmp/err" ||
		fail "$1: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "$1: printed $(cat "$tmp/out")"
	return 0
}

# ---- 1. a host process without an endpoint, 6 of its names full
sleep 300 &
q=$!
pids="$pids $q"
squat "$tmp/sq1" setpriv --reuid=65534 --regid=65534 --clear-groups "$SQ" $(names "$q" 6)
bounded "-p $q with 6 full names" 1 "$K" -t 2 -p "$q" read static_keys
one_line "-p $q with 6 full names" "$q"
KKCTL_TIMEOUT=2 bounded "KKCTL_TIMEOUT=2, -p $q" 1 "$K" -p "$q" read static_keys
one_line "KKCTL_TIMEOUT=2, -p $q" "$q"

# ---- 2. a host process serving its random name, all 16 others full
mkfifo "$tmp/go" "$tmp/pid"
sh -c 'echo $$; read x < "$1"; exec env $3 "$2"' sh \
	"$tmp/go" "$B/test/progs/jump_label_prog" "$control_env" > "$tmp/pid" 2> "$tmp/perr" &
pids="$pids $!"
exec 5< "$tmp/pid"
read -r p <&5 || fail "no pid"
squat "$tmp/sq2" setpriv --reuid=65534 --regid=65534 --clear-groups "$SQ" $(names "$p" 16)
echo go > "$tmp/go"
read -r printed <&5 || fail "the program did not start"
exec 5<&-
grep -q " @kernelkit/$p\.[0-9a-f]*\$" /proc/net/unix || fail "$p serves no random name"
bounded "-p $p behind 16 full names" 0 "$K" -t 2 -p "$p" read static_keys
grep -q "$key_line" "$tmp/out" || fail "-p $p: $(cat "$tmp/out")"
grep -q "skipped a foreign socket on process $p's name; using @kernelkit/$p\." "$tmp/err" ||
	fail "-p $p says nothing of the squatters: $(cat "$tmp/err")"

# ---- 3. the same in a network and UTS namespace of their own
host=kkdl$$
mkfifo "$tmp/go3" "$tmp/ns"
unshare -n -u sh -c 'hostname "$1"; sleep 300 & echo "$!"; echo $$; read x < "$2"
	exec env $4 "$3"' sh "$host" "$tmp/go3" "$B/test/progs/jump_label_prog" "$control_env" \
	> "$tmp/ns" 2> "$tmp/nserr" &
pids="$pids $!"
exec 5< "$tmp/ns"
read -r nq <&5 && read -r np <&5 || fail "the namespace did not start"
pids="$pids $nq"
squat "$tmp/sq3" nsenter -t "$np" -n setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$SQ" $(names "$np" 16) $(names "$nq" 6)
echo go > "$tmp/go3"
read -r printed <&5 || fail "the program in the namespace did not start"
exec 5<&-
grep -q " @kernelkit/$np\.[0-9a-f]*\$" "/proc/$np/net/unix" || fail "$np serves no random name"
bounded "-p $nq in a namespace, 6 full names" 1 "$K" -t 4 -p "$nq" read static_keys
one_line "-p $nq in a namespace, 6 full names" "$nq" 4
bounded "-p $np in a namespace, behind 16 full names" 0 "$K" -t 4 -p "$np" read static_keys
grep -q "$key_line" "$tmp/out" || fail "-p $np: $(cat "$tmp/out")"
bounded "-M $host ls" 0 "$K" -t 4 -M "$host" ls
grep -q "^$np  *0  *jump_label_prog  \[container $host, " "$tmp/out" ||
	fail "-M $host ls: $(cat "$tmp/out")"
grep -q "^$np .*unreachable" "$tmp/out" && fail "-M $host ls: $(cat "$tmp/out")"
# (the sleep has names, the squatted ones: listed, and marked in time)
grep -q "^$nq  *0  *sleep  \[.*(unreachable: no connection within 4 s: " "$tmp/out" ||
	fail "-M $host ls: $(cat "$tmp/out")"

# ---- 4. a rootless container's root squats its names
if ! unshare -U -r true 2>/dev/null; then
	echo "SKIP: part 4, a rootless container's root squatting: no user namespaces here"
	echo "kkctl_deadline: ok"
	exit 0
fi
S=$((3997000 + $$ % 1000))
host=kkdr$$
mkfifo "$tmp/go4" "$tmp/ns4"
chmod 666 "$tmp/go4" "$tmp/ns4"
as "$S" unshare -U -r -n -u sh -c 'hostname "$1"; sleep 300 & echo "$!"; echo $$
	read x < "$2"; exec env $4 "$3"' sh "$host" "$tmp/go4" "$B/test/progs/jump_label_prog" \
	"$control_env" > "$tmp/ns4" 2> /dev/null &
pids="$pids $!"
exec 5< "$tmp/ns4"
read -r rq <&5 && read -r rp <&5 || fail "the rootless container did not start"
pids="$pids $rq"
squat "$tmp/sq4" nsenter -t "$rp" -U -n --preserve-credentials "$SQ" \
	$(names "$rp" 16) $(names "$rq" 6)
echo go > "$tmp/go4"
read -r printed <&5 || fail "the program in the rootless container did not start"
exec 5<&-
bounded "-p $rq in a rootless container, 6 full names" 1 "$K" -t 4 -p "$rq" read static_keys
one_line "-p $rq in a rootless container, 6 full names" "$rq" 4
bounded "-p $rp in a rootless container, behind 16 full names" 0 \
	"$K" -t 4 -p "$rp" read static_keys
grep -q "$key_line" "$tmp/out" || fail "-p $rp: $(cat "$tmp/out")"
bounded "-M $host ls" 0 "$K" -t 4 -M "$host" ls
grep -q "^$rp  *$S  *jump_label_prog  \[container $host, " "$tmp/out" ||
	fail "-M $host ls: $(cat "$tmp/out")"
grep -q "^$rp .*unreachable" "$tmp/out" && fail "-M $host ls: $(cat "$tmp/out")"
echo "kkctl_deadline: ok"
