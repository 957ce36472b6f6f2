#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl across user namespaces (kernelkit issue 22, item 4).  S and S2 are
# throwaway uids with no passwd entry; S runs jump_label_prog in `unshare -U -r`
# (its own user namespace, whose root is S; the host's network namespace).
#  1. host root's kkctl reads and writes it, and --all reaches it, without
#     nsenter: kkctl connects from a child that entered the namespace as its
#     root (the endpoint sees its namespace's root, not the overflow uid);
#  2. the container's root (S, inside the namespace) reaches its process;
#  3. S2 is refused, and so is the root of S2's own `unshare -U -r`: kkctl
#     there sees the target as the overflow uid and refuses it itself;
#  4. kkctl running as the overflow uid (an unmapped `unshare -U`) sends
#     nothing to an endpoint that shows as the overflow uid (S2's fake one on
#     its own pid, which the old check passed: the same uid as ours);
#  5. a namespace that maps no root (--map-user=65534): host root cannot
#     become its root, is refused by the endpoint, and the one error line
#     says why it could not enter;
#  6. a host process of the real uid 65534: host root still reaches it (the
#     initial namespace maps every uid; there 65534 is nobody, not unmapped).
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
for c in unshare nsenter setpriv timeout; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
unshare -U --map-user=65534 --map-group=65534 true 2>/dev/null ||
	{ echo "skip: no user namespaces, or unshare without --map-user"; exit 77; }
KK_CTL_LIB_NAME=kkuserns
. "${KK_SRC:?}/test/control-lib.sh"
K=$B/kkctl
S=$((3992000 + $$ % 1000)) S2=$((3993000 + $$ % 1000))
# ok WHAT CMD...: kkctl (the rest of CMD) must succeed.
ok() {
	what=$1; shift
	"$@" > "$tmp/out" 2> "$tmp/err" || fail "$what: $(cat "$tmp/err")"
}
# refused WHAT CMD...: kkctl must exit 1 with one line on stderr, no reply.
refused() {
	what=$1; shift
	"$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -eq 1 ] || fail "$what: exit $rc, want 1: $(cat "$tmp/out" "$tmp/err")"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$what: not one line: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "$what: got a reply: $(cat "$tmp/out")"
	return 0
}

# ---- 1. host root on S's rootless container
start as "$S" unshare -U -r
c=$tpid
ok "host root reads S's namespace's process" "$K" -p "$c" read static_keys
grep -q "$key_line" "$tmp/out" || fail "host root's read: $(cat "$tmp/out")"
ok "host root writes it" "$K" -p "$c" write dynamic_debug/all_or_nothing 0
ok "host root reads back" "$K" -p "$c" read dynamic_debug/all_or_nothing
[ "$(cat "$tmp/out")" = 0 ] || fail "the write did not take: $(cat "$tmp/out")"
ok "host root's ls" "$K" ls
grep -q "^$c  *$S  *jump_label_prog\$" "$tmp/out" || fail "ls does not list $c: $(cat "$tmp/out")"
# (other processes on the machine may fail: only $c's own line counts)
"$K" --json --all read static_keys > "$tmp/out" 2> "$tmp/err"
grep -q "^{\"pid\":$c,\"name\":\"jump_label_prog\",\"uid\":$S,\"ok\":true,\"reply\":\"# name" "$tmp/out" ||
	fail "--all did not reach $c: $(cat "$tmp/out" "$tmp/err")"

# ---- 2. the container's root, inside its namespace
ok "the container's root" as "$S" nsenter -t "$c" -U --preserve-credentials "$K" -p "$c" read static_keys
grep -q "$key_line" "$tmp/out" || fail "the container's root's read: $(cat "$tmp/out")"

# ---- 3. another user, and another rootless namespace's root
refused "uid $S2 on S's namespace" as "$S2" "$K" -p "$c" read static_keys
refused "the root of S2's namespace" as "$S2" unshare -U -r "$K" -p "$c" read static_keys
grep -q "your user namespace does not map its uid (it shows as the overflow uid" "$tmp/err" ||
	fail "the root of S2's namespace: $(cat "$tmp/err")"
refused "the root of S2's namespace, --all" as "$S2" unshare -U -r "$K" --all read static_keys
ok "the root of S2's namespace, ls" as "$S2" unshare -U -r "$K" ls
grep -q "^$c " "$tmp/out" && fail "S2's namespace root lists $c: $(cat "$tmp/out")"

# ---- 4. kkctl as the overflow uid, on a fake endpoint that shows as it too
mkfifo "$tmp/fake"
chmod 666 "$tmp/fake"
as "$S2" sh -c 'echo $$; exec "$1" $$' sh "$B/test/progs/control_squat" > "$tmp/fake" &
pids="$pids $!"
exec 5< "$tmp/fake"
read -r fake <&5 && read -r ready <&5 || fail "the fake endpoint did not start"
[ "$ready" = ready ] || fail "the fake endpoint: $ready"
refused "kkctl as the overflow uid on S2's fake endpoint" \
	as "$S" unshare -U "$K" -p "$fake" write static_keys secret
grep -q "does not map its uid" "$tmp/err" || fail "the fake endpoint: $(cat "$tmp/err")"
read -r got <&5	# it reports its one client once that closes
exec 5<&-
[ "$got" = "received 0" ] || fail "kkctl sent to the fake endpoint: $got"

# ---- 5. a namespace with no root: one line says why kkctl could not enter
start unshare -U --map-user=65534 --map-group=65534
refused "host root on a namespace without root" "$K" -p "$tpid" read static_keys
grep -q "Permission denied.*(could not enter process $tpid's user namespace as its root: setresgid: Invalid argument)\$" \
	"$tmp/err" || fail "the reason: $(cat "$tmp/err")"

# ---- 6. the real uid 65534 on the host
start as 65534
ok "host root on a host process of uid 65534" "$K" -p "$tpid" read static_keys
echo "kkctl_userns: ok"
