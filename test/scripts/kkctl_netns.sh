#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl and containers (kernelkit issue 25, items 1-2), with real namespaces.
# A and B are root containers (`unshare -u -n -p -f --mount-proc`, as docker,
# podman and Kubernetes pods run), up at the same time; R is a rootless one
# (the throwaway uid S running `unshare -U -r -u -n -p -f --mount-proc`); H is
# a process on the host.  Each container's program is pid 1 there and serves
# @kernelkit/1 in its own network namespace.
#  1. host root's ls, --json ls, -p HOSTPID, -n, --all, --tree and -M reach
#     A, B and R by their host pids, and name the pid inside and the container;
#     a write reaches the container it was meant for and no other;
#  2. inside A (nsenter -n -p -m), kkctl reaches A's process by its pid there,
#     and nothing else: not H, not B;
#  3. R's root (S inside R's user and network namespaces, which still sees
#     the host's pids) reaches none of H, A, B: it may not enter their
#     network namespaces, and the names in its own are R's;
#  4. S on the host reaches its own rootless container (its user namespace
#     owns the network namespace: kkctl enters the user namespace first) and
#     not A; another throwaway uid S2 reaches none of them.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
for c in unshare nsenter setpriv timeout; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
unshare -u -n -p -f --mount-proc true 2>/dev/null ||
	{ echo "skip: cannot make network, pid and mount namespaces"; exit 77; }
KK_CTL_LIB_NAME=kknetns
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
S=$((3994000 + $$ % 1000)) S2=$((3995000 + $$ % 1000))
as "$S" unshare -U -r -u -n -p -f --mount-proc true 2>/dev/null ||
	{ echo "skip: an unprivileged user cannot make a user namespace"; exit 77; }
# The processes inside the containers are killed first, so that each unshare
# reaps its child and exits (pid 1 here reaps no orphan).
inner= outer=
trap 'for p in $inner; do kill -9 "$p" 2>/dev/null; done
for p in $outer; do wait "$p" 2>/dev/null; done; cleanup' EXIT
# A name no other test's process has, for -n: the program run through a link.
name=kkns$$
ln -s "$B/test/progs/jump_label_prog" "$tmp/$name"

# ok WHAT CMD...: must succeed.  refused WHAT CMD...: must exit 1, no reply.
ok() {
	what=$1; shift
	"$@" > "$tmp/out" 2> "$tmp/err" || fail "$what: exit $?: $(cat "$tmp/out" "$tmp/err")"
}
refused() {
	what=$1; shift
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -eq 1 ] || fail "$what: exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	[ -s "$tmp/out" ] && fail "$what: got a reply: $(cat "$tmp/out")"
	return 0
}

# container HOSTNAME CMD...: run $name as pid 1 of a container made by CMD
# (an unshare that forks, here with -u -n -p -f --mount-proc); sets $cpid to
# its host pid once its endpoint listens (it prints its pid after that).
container() {
	host=$1; shift
	n=$((n + 1))
	mkfifo "$tmp/p$n"
	chmod 666 "$tmp/p$n"
	"$@" sh -c 'hostname "$1" && exec env $2 "$3"' sh "$host" "$control_env" "$tmp/$name" \
		> "$tmp/p$n" 2> "$tmp/e$n" &
	u=$!
	outer="$outer $u"
	read -r inside < "$tmp/p$n" || fail "$host: did not start: $(cat "$tmp/e$n")"
	[ "$inside" = 1 ] || fail "$host: pid $inside inside, want 1"
	# its host pid: down the first children from $u (a subshell, setpriv,
	# unshare) to the first process with a pid in a namespace of its own
	cpid=$u
	while set -- $(grep '^NSpid:' "/proc/$cpid/status") && [ $# -eq 2 ]; do
		set -- $(cat "/proc/$cpid/task/$cpid/children")
		[ $# -ge 1 ] || fail "$host: no process inside (from $u)"
		cpid=$1
	done
	inner="$inner $cpid"	# (the processes between exit with it)
}
container kk-a-$$ unshare -u -n -p -f --mount-proc
a=$cpid
container kk-b-$$ unshare -u -n -p -f --mount-proc
b=$cpid
container kk-r-$$ as "$S" unshare -U -r -u -n -p -f --mount-proc
r=$cpid
n=$((n + 1))
mkfifo "$tmp/p$n"
env $control_env "$tmp/$name" > "$tmp/p$n" &
h=$!
pids="$pids $h"
read -r got < "$tmp/p$n" && [ "$got" = "$h" ] || fail "the host's process did not start"
for p in $a $b $r; do
	grep -q " @kernelkit/$p\$" /proc/net/unix && fail "process $p serves in the host's network namespace"
done

# ---- 1. host root
ok "host root's ls" "$K" ls
grep -q "^$a  *0  *$name  \[container kk-a-$$, pid 1 inside, cgroup .*, net:\[[0-9]*\]\]\$" "$tmp/out" &&
grep -q "^$b  *0  *$name  \[container kk-b-$$, pid 1 inside, " "$tmp/out" &&
grep -q "^$r  *$S  *$name  \[container kk-r-$$, pid 1 inside, " "$tmp/out" &&
grep -q "^$h  *0  *$name\$" "$tmp/out" || fail "ls: $(cat "$tmp/out")"
ok "host root's --json ls" "$K" --json ls
for c in "$a 0 a" "$b 0 b" "$r $S r"; do
	set -- $c
	grep -q "^{\"pid\":$1,\"name\":\"$name\",\"uid\":$2,\"pid_inside\":1,\"container\":{\"hostname\":\"kk-$3-$$\",\"cgroup\":\"[^\"]*\",\"netns\":[0-9]*},\"ok\":true}\$" \
		"$tmp/out" || fail "--json ls, $3: $(cat "$tmp/out")"
done
grep -q "^{\"pid\":$h,\"name\":\"$name\",\"uid\":0,\"ok\":true}\$" "$tmp/out" ||
	fail "--json ls, the host's: $(cat "$tmp/out")"
for p in $a $b $r $h; do
	ok "host root reads $p" "$K" -p "$p" read static_keys
	grep -q "$key_line" "$tmp/out" || fail "read $p: $(cat "$tmp/out")"
done
# (all_or_nothing starts at 1)
ok "host root writes B" "$K" -p "$b" write dynamic_debug/all_or_nothing 0
for c in "$a 1" "$b 0" "$r 1" "$h 1"; do
	set -- $c
	ok "read back $1" "$K" -p "$1" read dynamic_debug/all_or_nothing
	[ "$(cat "$tmp/out")" = "$2" ] || fail "process $1 holds $(cat "$tmp/out"), want $2"
done
ok "host root's -n" "$K" -n "$name" write dynamic_debug/all_or_nothing 0
[ "$(grep -c "^==> [0-9]* $name <==\$" "$tmp/out")" -eq 4 ] || fail "-n: $(cat "$tmp/out")"
ok "host root's --json -n" "$K" --json -n "$name" read dynamic_debug/all_or_nothing
[ "$(grep -c "\"name\":\"$name\".*\"ok\":true,\"reply\":\"0\\\\n\"}\$" "$tmp/out")" -eq 4 ] ||
	fail "--json -n: $(cat "$tmp/out")"
grep -q "^{\"pid\":$r,\"name\":\"$name\",\"uid\":$S,\"pid_inside\":1,\"container\":{\"hostname\":\"kk-r-$$\"," \
	"$tmp/out" || fail "--json -n, R: $(cat "$tmp/out")"
"$K" --json --all read static_keys > "$tmp/out" 2> "$tmp/err"	# (others' may fail)
for p in $a $b $r $h; do
	grep -q "^{\"pid\":$p,\"name\":\"$name\",.*\"ok\":true,\"reply\":\"# name" "$tmp/out" ||
		fail "--all did not reach $p: $(cat "$tmp/out" "$tmp/err")"
done
ok "host root's --tree" "$K" --tree "$(cut -d' ' -f4 "/proc/$a/stat")" read static_keys
grep -q "$key_line" "$tmp/out" && ! grep -q "^==>" "$tmp/out" || fail "--tree: $(cat "$tmp/out")"
ok "-M names B" "$K" --json -M kk-b-$$ read dynamic_debug/all_or_nothing
[ "$(wc -l < "$tmp/out")" -eq 1 ] && grep -q "^{\"pid\":$b," "$tmp/out" || fail "-M: $(cat "$tmp/out")"
ok "-M with -p, the pid inside" "$K" -M kk-r-$$ -p 1 write dynamic_debug/all_or_nothing 1
ok "-M wrote R" "$K" -p "$r" read dynamic_debug/all_or_nothing
[ "$(cat "$tmp/out")" = 1 ] || fail "-M -p 1 did not write R: $(cat "$tmp/out")"
refused "-M with a name no container has" "$K" -M kk-none-$$ read static_keys

# ---- 2. inside A: its own process by its pid there, nothing else
inA() { nsenter -t "$a" -n -p -m -u "$@"; }
ok "A's root reads pid 1" inA "$K" -p 1 read static_keys
grep -q "$key_line" "$tmp/out" || fail "A's -p 1: $(cat "$tmp/out")"
ok "A's root's ls" inA "$K" ls
[ "$(grep -c . "$tmp/out")" -eq 2 ] && grep -q "^1  *0  *$name\$" "$tmp/out" ||
	fail "A's ls: $(cat "$tmp/out")"
ok "A's root's --all" inA "$K" --json --all read static_keys
[ "$(wc -l < "$tmp/out")" -eq 1 ] && grep -q "^{\"pid\":1,\"name\":\"$name\",\"uid\":0,\"ok\":true," \
	"$tmp/out" || fail "A's --all: $(cat "$tmp/out")"
refused "A's root on the host's process" inA "$K" -p "$h" read static_keys
refused "A's root on B's host pid" inA "$K" -p "$b" read static_keys

# ---- 3. R's root, which sees the host's pids
inR() { as "$S" nsenter -t "$r" -U -n --preserve-credentials "$@"; }
ok "R's root reaches R" inR "$K" -p "$r" read static_keys
for p in $h $a $b; do
	refused "R's root on $p" inR "$K" -p "$p" write dynamic_debug/all_or_nothing 1
done
ok "R's root's ls" inR "$K" ls
for p in $h $a $b; do
	grep -q "^$p " "$tmp/out" && fail "R's root lists $p: $(cat "$tmp/out")"
done
inR "$K" --json -n "$name" read static_keys > "$tmp/out" 2> "$tmp/err"
grep -q "\"ok\":true" "$tmp/out" && ! grep "\"ok\":true" "$tmp/out" | grep -vq "^{\"pid\":$r," ||
	fail "R's root's -n: $(cat "$tmp/out") (stderr: $(cat "$tmp/err"))"
for p in $h $a $b; do
	ok "still 0 in $p" "$K" -p "$p" read dynamic_debug/all_or_nothing
	[ "$(cat "$tmp/out")" = 0 ] || fail "R's root wrote $p"
done

# ---- 4. S, and S2, on the host
ok "S reaches its rootless container" as "$S" "$K" -p "$r" read static_keys
ok "S's ls" as "$S" "$K" ls
grep -q "^$r  *$S  *$name  \[container kk-r-$$, pid 1 inside, " "$tmp/out" || fail "S's ls: $(cat "$tmp/out")"
refused "S on A" as "$S" "$K" -p "$a" read static_keys
refused "S2 on R" as "$S2" "$K" -p "$r" read static_keys
refused "S2's -n" as "$S2" "$K" -n "$name" read static_keys
echo "kkctl_netns: ok"
