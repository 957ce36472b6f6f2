#!/bin/sh
# SPDX-License-Identifier: MIT
# Trust is decided at each request against the process's ids of that moment,
# not only at accept() (kernelkit issue 37, finding 5).  The endpoint serves a
# peer that is root, or whose uid and gid are every uid and gid of the
# process (real, effective, saved) while the process is dumpable: who may
# ptrace it (docs/control.md, "Whom the endpoint serves").  Each client is
# control_raw -w as a throwaway uid U: it connects, the endpoint accepts it,
# the process changes, and only then is the request sent.
#  1. a root process seteuid(U)s, U connects, the process seteuid(0)s, U
#     writes 'func trust_secret +p': refused (-13, one line), the site is
#     untouched (before: "matched 1 changed 1"); a fresh connection of U's is
#     refused too;
#  2. a process of U's (all ids U, dumpable): U connects and is accepted,
#     the process calls prctl(PR_SET_DUMPABLE, 0), U's request is refused and
#     changes nothing; root's still runs; after prctl(PR_SET_DUMPABLE, 1) U's
#     requests run again;
#  3. a peer of uid U but another gid is refused by a process of U:U;
#  4. a process whose real and effective ids are U but whose saved uid (or
#     saved gid) is still root's, dumpable again, refuses U in the "ids" line
#     (U may not ptrace it: it can become root again); once it sets the saved
#     id to U too, U's write runs.
# The endpoint gives a client 2 s from accept() to the end of its request; a
# try whose client got no reply at all was cut off by that deadline (a very
# loaded machine) and is tried again, 3 times; then the script skips.
set -u
KK_TRUST_LIB_NAME=trust-req
. "${KK_SRC:?}/test/control-trust-lib.sh"
write_secret='write dynamic_debug/control
func trust_secret +p'

# refused WHAT: the reply is the refusal, one line, and trust_secret is untouched
refused() {
	[ "$status" = -13 ] || fail "$1: status '$status', want -13: $(cat "$tmp/reply")"
	[ "$(wc -l < "$tmp/reply")" -eq 2 ] || fail "$1: not one line: $(cat "$tmp/reply")"
	[ "$(flags trust_secret)" = =_ ] || fail "$1: trust_secret is $(flags trust_secret)"
}

# ---- 1. accepted while the process ran as U, sent once it is root again
try_mixed() {
	start
	old=$(listener)
	cmd "seteuid $U"
	new_listener "$old"
	hold "$U" "$U" "$write_secret"
	old=$(listener)
	cmd "seteuid 0"
	new_listener "$old"
	release
	[ -n "$status" ] || { finish; return 1; }
	refused "1, U's request sent after seteuid(0)"
	"$RAW" "$pid" "$write_secret" > /dev/null		# (as root: would pass)
	[ "$(flags trust_secret)" = =p ] || fail "1: root's write did not run"
	as "$U" "$RAW" "$pid" "read static_keys" > "$tmp/reply"
	status=$(head -n 1 "$tmp/reply")
	[ "$status" = -13 ] || fail "1: a fresh connection of U's: $(cat "$tmp/reply")"
	finish
}

# ---- 2. accepted while the process was dumpable, sent once it is not
try_dumpable() {
	start $as_u
	[ "$ans" = "ok $U $U $U $U $U $U 1" ] || fail "2: ids $ans"
	as "$U" "$KKCTL" -p "$pid" read dynamic_debug/control > /dev/null 2> "$tmp/ctlerr" ||
		fail "2: U's kkctl on U's dumpable process: $(cat "$tmp/ctlerr")"
	hold "$U" "$U" "$write_secret"
	cmd "dumpable 0"
	release
	[ -n "$status" ] || { finish; return 1; }
	refused "2, U's request sent after prctl(PR_SET_DUMPABLE, 0)"
	as "$U" "$RAW" "$pid" "$write_secret" > "$tmp/reply"
	status=$(head -n 1 "$tmp/reply")
	refused "2, a fresh connection of U's to the non-dumpable process"
	cmd "dumpable 1"
	as "$U" "$RAW" "$pid" "$write_secret" > "$tmp/reply"
	[ "$(head -n 1 "$tmp/reply")" = 0 ] || fail "2: U after prctl(PR_SET_DUMPABLE, 1): $(cat "$tmp/reply")"
	[ "$(flags trust_secret)" = =p ] || fail "2: U's write after PR_SET_DUMPABLE 1 did not run"
	finish
}

for what in try_mixed try_dumpable; do
	n=0
	until $what; do
		n=$((n + 1))
		[ $n -lt 3 ] || { echo "skip: $what: 3 tries cut off by the 2 s deadline"; exit 77; }
	done
done

# ---- 3. uid U, but not gid U
start $as_u
as "$U" "$G2" "$RAW" "$pid" "$write_secret" > "$tmp/reply"
status=$(head -n 1 "$tmp/reply")
refused "3, uid $U gid $G2 on a process of $U:$U"
finish
# ---- 4. real and effective ids U, a saved one root's
# saved WHICH GIDS UIDS: the process (root at first) takes those ids, becomes
# dumpable again, and U is refused for the ids; then the saved id U, and U runs.
saved() {
	start
	old=$(listener)
	cmd "setresgid $2"
	new_listener "$old"
	old=$(listener)
	cmd "setresuid $3"
	new_listener "$old"
	cmd "dumpable 1"
	cmd ids
	[ "$ans" = "ok $4 1" ] || fail "4, saved $1 root: ids $ans"
	as "$U" "$RAW" "$pid" "$write_secret" > "$tmp/reply"
	status=$(head -n 1 "$tmp/reply")
	refused "4, saved $1 root's"
	grep -q "are not all the peer's" "$tmp/reply" || fail "4, saved $1: not the ids' refusal: $(cat "$tmp/reply")"
	cmd "setres$1 $U $U $U"
	cmd "dumpable 1"
	as "$U" "$RAW" "$pid" "$write_secret" > "$tmp/reply"
	[ "$(head -n 1 "$tmp/reply")" = 0 ] || fail "4: U once the saved $1 is U: $(cat "$tmp/reply")"
	[ "$(flags trust_secret)" = =p ] || fail "4: U's write once the saved $1 is U did not run"
	finish
}
saved uid "$U $U $U" "$U $U 0" "$U $U 0 $U $U $U"
saved gid "$U $U 0" "$U $U $U" "$U $U $U $U $U 0"
echo "control_trust_request: ok"
