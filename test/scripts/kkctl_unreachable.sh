#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl tells the truth about the processes a selector matched (kernelkit
# issue 24, item 2).  U1 and U2 are throwaway uids with no passwd entry; A
# (uid U1) and B (uid U2) are jump_label_prog under one name of their own (a
# symlink: no other test's process shares it).  kkctl runs as U1:
#  1. -n NAME reads A, and reports B (which it may not use) in one stderr
#     line naming B and why, and exits 1; --json has an object for each;
#  2. --all matches U1's processes only (B is another user's: not matched),
#     so it succeeds;
#  3. ls lists a U1 process whose name U2 squats, marked unreachable with
#     why, and sends the squatter nothing.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root to run processes as other uids"; exit 77; }
command -v setpriv >/dev/null || { echo "skip: needs setpriv"; exit 77; }
KK_CTL_LIB_NAME=kkunreach
. "${KK_SRC:?}/test/control-lib.sh"
U1=$((3994000 + $$ % 1000)) U2=$((3995000 + $$ % 1000))
name=kku$$
cp "$B/kkctl" "$tmp/kkctl"
chmod 755 "$tmp/kkctl"
ln -s "$B/test/progs/jump_label_prog" "$tmp/$name"
K="as $U1 $tmp/kkctl"
# start_as UID: $name as UID; $tpid once its endpoint listens.
start_as() {
	n=$((n + 1))
	mkfifo "$tmp/p$n"
	chmod 666 "$tmp/p$n"
	as "$1" env $control_env "$tmp/$name" > "$tmp/p$n" &
	pids="$pids $!"
	read -r tpid < "$tmp/p$n" || fail "$name as uid $1 did not start"
	pids="$pids $tpid"
}
start_as "$U1"
a=$tpid
start_as "$U2"
b=$tpid

# ---- 1. -n NAME: A's reply, B in one line with why, exit 1
$K -n "$name" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "-n with an unreachable process: exit $rc, want 1: $(cat "$tmp/err")"
grep -q "^==> $a $name <==\$" "$tmp/out" || fail "no reply from $a: $(cat "$tmp/out")"
grep -q "$key_line" "$tmp/out" || fail "A's reply: $(cat "$tmp/out")"
grep -q "^==> $b " "$tmp/out" && fail "a reply from B: $(cat "$tmp/out")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "not one line on stderr: $(cat "$tmp/err")"
grep -qx "kkctl: process $b ($name): refusing process $b: it runs as uid $U2, you are uid $U1 (and not root)" \
	"$tmp/err" || fail "B's line: $(cat "$tmp/err")"
$K --json -n "$name" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "--json -n: exit $rc, want 1"
[ -s "$tmp/err" ] && fail "--json: errors belong in the objects: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "--json: want two objects: $(cat "$tmp/out")"
grep -q "^{\"pid\":$a,\"name\":\"$name\",\"uid\":$U1,\"ok\":true,\"reply\":\"# name" "$tmp/out" ||
	fail "--json A: $(cat "$tmp/out")"
grep -qx "{\"pid\":$b,\"name\":\"$name\",\"uid\":$U2,\"ok\":false,\"error\":\"refusing process $b: it runs as uid $U2, you are uid $U1 (and not root)\"}" \
	"$tmp/out" || fail "--json B: $(cat "$tmp/out")"

# ---- 2. --all: U1's processes only, all reached
$K --all read static_keys > "$tmp/out" 2> "$tmp/err" || fail "--all as U1: exit $?: $(cat "$tmp/err")"
grep -q "$key_line" "$tmp/out" || fail "--all: $(cat "$tmp/out")"
[ -s "$tmp/err" ] && fail "--all as U1: $(cat "$tmp/err")"

# ---- 3. ls: U1's process whose name U2 squats is listed, marked, and the
# squatter gets nothing
# (setpriv itself, not the function as(): $! is then the sleep's own pid)
setpriv --reuid="$U1" --regid="$U1" --clear-groups sleep 60 &
sl=$!
pids="$pids $sl"
mkfifo "$tmp/sq"
chmod 666 "$tmp/sq"
as "$U2" "$B/test/progs/control_squat" "$sl" > "$tmp/sq" &
pids="$pids $!"
exec 5< "$tmp/sq"
read -r ready <&5 || fail "the squatter did not start"
$K ls > "$tmp/out" 2> "$tmp/err" || fail "ls as U1: exit $?: $(cat "$tmp/err")"
grep -Eq "^$a +$U1 +$name\$" "$tmp/out" || fail "ls does not list A: $(cat "$tmp/out")"
grep -q "^$b " "$tmp/out" && fail "U1's ls lists U2's process: $(cat "$tmp/out")"
grep -Eq "^$sl +$U1 +sleep  \(unreachable: refusing @kernelkit/$sl: it is served by process [0-9]+ \(uid $U2\), not by process $sl\)\$" \
	"$tmp/out" || fail "ls does not mark the squatted process: $(cat "$tmp/out")"
read -r got <&5 || fail "the squatter: no report"
[ "$got" = "received 0" ] || fail "ls sent the squatter something: $got"
exec 5<&-
echo "kkctl_unreachable: ok"
