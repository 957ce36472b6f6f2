#!/bin/sh
# SPDX-License-Identifier: MIT
# The endpoint's trust inside user namespaces (the peer's uid as the kernel
# maps it into the endpoint's namespace; the overflow uid is never trusted).
# The clients are control_raw, which checks nothing: what is tested is the
# endpoint's decision.  S and S2 are throwaway uids with no passwd entry.
#  1. a process running as its namespace's nobody (65534, mapped to root):
#     a host user the namespace does not map shows as 65534 too, and is
#     refused; so is every peer that shows as 65534 (its own user included);
#  2. `unshare -U -r` run by root (namespace root = host root): host root
#     controls it, S does not;
#  3. `unshare -U -r` run by S (namespace root = S): S controls it; host root,
#     unmapped there, is refused directly and controls it after entering the
#     namespace (nsenter -U: it becomes the namespace's root; kkctl works
#     there too); S2 is refused;
#  4. a namespace's root controls only processes of its namespace: S's
#     namespace root is refused by a host process of root's.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
for c in unshare nsenter setpriv; do
	command -v $c >/dev/null || { echo "skip: needs $c"; exit 77; }
done
unshare -U --map-user=65534 --map-group=65534 true 2>/dev/null ||
	{ echo "skip: no user namespaces, or unshare without --map-user"; exit 77; }
KK_CTL_LIB_NAME=userns
. "${KK_SRC:?}/test/control-lib.sh"
S=$((3990000 + $$ % 1000)) S2=$((3991000 + $$ % 1000))
# expect STATUS WHAT CMD...: the first line of control_raw's reply under CMD.
expect() {
	want=$1 what=$2; shift 2
	"$@" "$B/test/progs/control_raw" "$tpid" "read static_keys" > "$tmp/out" 2> "$tmp/err" ||
		fail "$what: control_raw: $(cat "$tmp/err")"
	got=$(head -n 1 "$tmp/out")
	[ "$got" = "$want" ] || fail "$what: status '$got', want $want: $(cat "$tmp/out")"
	if [ "$want" = -13 ]; then
		grep -q '^# name' "$tmp/out" && fail "$what: refused but got the file"
	fi
	return 0
}

# ---- 1. the namespace's nobody; an unmapped host user shows as the same uid
start unshare -U --map-user=65534 --map-group=65534
expect -13 "unmapped host uid $S on a namespace's nobody" as "$S"
expect -13 "host root, mapped to the overflow uid" env
"$B/test/progs/control_raw" "$tpid" "write panic" > "$tmp/out" 2>&1
[ "$(head -n 1 "$tmp/out")" = -13 ] || fail "write panic: $(cat "$tmp/out")"

# ---- 2. unshare -U -r by root: its root is host root
start unshare -U -r
expect 0 "host root on root's namespace" env
expect -13 "uid $S on root's namespace" as "$S"
t2=$tpid

# ---- 3. unshare -U -r by S: its root is S
start setpriv --reuid="$S" --regid="$S" --clear-groups unshare -U -r
expect 0 "uid $S on its own namespace" as "$S"
expect -13 "host root, unmapped in S's namespace" env
expect 0 "host root inside S's namespace" nsenter -t "$tpid" -U
nsenter -t "$tpid" -U "$B/kkctl" -p "$tpid" read static_keys > "$tmp/out" 2> "$tmp/err" ||
	fail "host root's kkctl inside S's namespace: $(cat "$tmp/err")"
grep -q '^# name enabled' "$tmp/out" || fail "kkctl inside S's namespace: $(cat "$tmp/out")"
expect -13 "uid $S2 on S's namespace" as "$S2"

# ---- 4. S's namespace root on root's processes
tpid=$t2
expect -13 "S's namespace root on root's namespace" as "$S" unshare -U -r
start env
expect -13 "S's namespace root on a host process of root's" as "$S" unshare -U -r
expect 0 "host root on its own process" env
echo "control_userns: ok"
