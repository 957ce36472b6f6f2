#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl's one line says what happened (kernelkit issue 37, item 10):
#  1. -p PID of no process: "no such process" (was: "has no control
#     endpoint"), --json too;
#  2. a process whose network namespace kkctl may not enter: it says so and
#     why (was: "has no control endpoint", while /proc/PID/net/unix lists
#     its socket): nobody on root's process in `unshare -n`, and a uid on
#     its own process in a namespace root made (setns refused);
#  3. a process a selector (-n) matched that exits during the command is
#     reported as gone on stderr, and is no failure (exit 0; --json: an
#     object with "gone":true); one named by -p is: "no such process",
#     exit 1.  test/progs/kkctl_gone_pair: two processes whose file
#     peer/end kills the other one, so with --jobs 1 the second target is
#     gone when kkctl reaches it (no sleep, no race); and whose file
#     self/end ends the process before it replies ("exited before it
#     replied": a failure for -p, gone for -n).
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (other uids, namespaces)"; exit 77; }
for c in setpriv unshare; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
KK_CTL_LIB_NAME=kkmsg
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
PAIR=$B/test/progs/kkctl_gone_pair
[ -x "$PAIR" ] || { echo "not built"; exit 77; }
U=$((3996000 + $$ % 1000))
cp "$K" "$tmp/kkctl"
chmod 755 "$tmp/kkctl"
# one WHAT RC LINE CMD...: CMD exits RC, prints nothing, and its stderr is the
# one line LINE (a grep -x pattern).
one() {
	what=$1 want=$2 line=$3; shift 3
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -eq "$want" ] || fail "$what: exit $rc, want $want: $(cat "$tmp/err")"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$what: not one line: $(cat "$tmp/err")"
	grep -qx -- "$line" "$tmp/err" || fail "$what: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "$what: printed $(cat "$tmp/out")"
	return 0
}

# ---- 1. no such process
none=$(($(cat /proc/sys/kernel/pid_max) + 1))
one "-p $none" 1 "kkctl: process $none: no such process" "$K" -p "$none" read static_keys
"$K" --json -p "$none" read static_keys > "$tmp/out" 2> "$tmp/err"
[ $? -eq 1 ] || fail "--json -p $none: exit status"
grep -q "^{\"pid\":$none,.*\"ok\":false,\"error\":\"no such process\"}\$" "$tmp/out" ||
	fail "--json -p $none: $(cat "$tmp/out" "$tmp/err")"

# ---- 2. a network namespace kkctl may not enter
# in_netns CMD...: jump_label_prog under `unshare -n` CMD; $tpid once its
# endpoint listens in that namespace.
in_netns() {
	n=$((n + 1))
	mkfifo "$tmp/p$n"
	chmod 666 "$tmp/p$n"
	unshare -n "$@" env $control_env "$B/test/progs/jump_label_prog" > "$tmp/p$n" &
	pids="$pids $!"
	read -r tpid < "$tmp/p$n" || fail "$*: jump_label_prog did not start"
	grep -q " @kernelkit/$tpid\$" "/proc/$tpid/net/unix" || fail "no endpoint in $tpid's namespace"
}
in_netns
r=$tpid
one "nobody on root's process in a namespace" 1 \
	"kkctl: process $r (jump_label_prog): cannot enter its network namespace, where its endpoint is: /proc/$r/ns/net: Permission denied" \
	as 65534 "$tmp/kkctl" -p "$r" read static_keys
in_netns setpriv --reuid="$U" --regid="$U" --clear-groups
u=$tpid
one "uid $U on its process in root's namespace" 1 \
	"kkctl: process $u (jump_label_prog): cannot enter its network namespace, where its endpoint is: setns: Operation not permitted" \
	as "$U" "$tmp/kkctl" -p "$u" read static_keys

# ---- 3. gone during the command
# pair NAME: a new pair, named NAME (each pair its own: one of the last one
# lives on); $p1 and $p2 their pids, in the order they printed
pair() {
	name=$1
	ln -s "$PAIR" "$tmp/$name"
	n=$((n + 1))
	mkfifo "$tmp/p$n"
	"$tmp/$name" > "$tmp/p$n" &
	pids="$pids $!"
	exec 5< "$tmp/p$n"
	read -r p1 <&5 && read -r p2 <&5 || fail "the pair did not start"
	exec 5<&-
	pids="$pids $p1 $p2"
}
pair kkg$$a
"$K" --jobs 1 -n "$name" read peer/end > "$tmp/out" 2> "$tmp/err" ||
	fail "-n $name, one gone: exit $?: $(cat "$tmp/err")"
first=$(sed -n 's/^==> \([0-9]*\) .*/\1/p' "$tmp/out")
case $first in "$p1") gone=$p2 ;; "$p2") gone=$p1 ;; *) fail "-n $name: $(cat "$tmp/out")" ;; esac
grep -qx "ended $gone" "$tmp/out" || fail "-n $name: $(cat "$tmp/out")"
grep -q "^==> $gone " "$tmp/out" && fail "-n $name: a reply from $gone: $(cat "$tmp/out")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "-n $name: not one line: $(cat "$tmp/err")"
grep -qx "kkctl: process $gone ($name): gone: it exited before kkctl reached it" "$tmp/err" ||
	fail "-n $name: $(cat "$tmp/err")"

pair kkg$$b
"$K" --json --jobs 1 -n "$name" read peer/end > "$tmp/out" 2> "$tmp/err" ||
	fail "--json -n $name, one gone: exit $?: $(cat "$tmp/err")"
[ -s "$tmp/err" ] && fail "--json -n $name: $(cat "$tmp/err")"
[ "$(grep -c '"ok":true,"reply":"ended ' "$tmp/out")" -eq 1 ] || fail "--json: $(cat "$tmp/out")"
grep -q "^{\"pid\":[0-9]*,\"name\":\"$name\",\"uid\":0,\"ok\":false,\"gone\":true,\"error\":\"gone: it exited before kkctl reached it\"}\$" \
	"$tmp/out" || fail "--json: $(cat "$tmp/out")"

pair kkg$$c
"$K" --jobs 1 -p "$p1" -p "$p2" read peer/end > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "-p $p1 -p $p2, the second gone: exit $rc, want 1: $(cat "$tmp/err")"
grep -qx "ended $p2" "$tmp/out" || fail "-p $p1 -p $p2: $(cat "$tmp/out")"
grep -qx "kkctl: process $p2 ($name): no such process" "$tmp/err" ||
	fail "-p $p1 -p $p2: $(cat "$tmp/err")"

pair kkg$$d
one "-p $p1 read self/end" 1 "kkctl: process $p1 ($name): exited before it replied" \
	"$K" -p "$p1" read self/end
# (a new pair: the one just ended may still be listed a moment, and be gone)
pair kkg$$e
"$K" --jobs 1 -n "$name" read self/end > "$tmp/out" 2> "$tmp/err" ||
	fail "-n $name read self/end: exit $?: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "-n $name read self/end: printed $(cat "$tmp/out")"
for p in $p1 $p2; do
	grep -qx "kkctl: process $p ($name): gone: it exited before it replied" "$tmp/err" ||
		fail "-n $name read self/end: $(cat "$tmp/err")"
done
[ "$(wc -l < "$tmp/err")" -eq 2 ] || fail "-n $name read self/end: $(cat "$tmp/err")"
echo "kkctl_messages: ok"
