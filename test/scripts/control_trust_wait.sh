#!/bin/sh
# SPDX-License-Identifier: MIT
# A read that waits is judged again when it answers (kernelkit issue 37,
# held-out round).  A trace_pipe read with nothing to show waits up to 250 ms
# for a record, and trust was checked only before it: uid U's read, accepted
# while its own program was dumpable, returned the secret the program
# recorded after prctl(PR_SET_DUMPABLE, 0), that is after U lost the right
# to read it.  Here U's request is held until the endpoint waits in it
# (its kk-control thread in a futex wait), then the program clears its
# dumpable flag and records the secret: U gets the one-line refusal, and no
# record.  A write is judged before it runs only: it was trusted when it
# changed something, and its answer says what it did.
set -u
KK_TRUST_LIB_NAME=trust-wait
. "${KK_SRC:?}/test/control-trust-lib.sh"
secret=s3cr3t-of-root
case $(uname -m) in
x86_64) futex=202 ;;
aarch64) futex=98 ;;
*) echo "skip: the futex system call's number on $(uname -m) is not known here"; exit 77 ;;
esac

start_env="KK_DYNDBG=+T"
start $as_u
cmd ids
[ "$ans" = "ok $U $U $U $U $U $U 1" ] || fail "ids, dumpable: $ans"
ctl=$(for t in /proc/$pid/task/*; do [ "$(cat "$t/comm")" = kk-control ] && basename "$t"; done)
[ -n "$ctl" ] || fail "no kk-control thread in process $pid"

# The endpoint waits 250 ms at most: on a loaded machine it may have given
# up (an empty answer) before the flag was cleared; then again, the secret
# drained by root first.  At most 5 tries.
try=0
while :; do
	try=$((try + 1))
	[ $try -le 5 ] || fail "5 tries, and the endpoint's wait ended before the flag was cleared each time"
	cmd "dumpable 1"
	"$KKCTL" -p "$pid" read dynamic_debug/trace_pipe > /dev/null 2>&1
	hold "$U" "$U" "read dynamic_debug/trace_pipe"
	echo go >&5
	exec 5>&-
	cat <&6 > "$tmp/reply" &
	catpid=$!
	# The endpoint checked the request and waits for a record.
	i=0
	until [ "$(cut -d' ' -f1 "/proc/$pid/task/$ctl/syscall" 2>/dev/null)" = $futex ]; do
		i=$((i + 1))
		[ $i -le 500 ] || fail "the endpoint never waited in U's trace_pipe read"
		sleep 0.01
	done
	cmd "dumpable 0"
	cmd secret
	wait "$catpid"
	exec 6<&-
	wait "$cpid"
	pids=${pids%" $cpid"}
	grep -q "$secret" "$tmp/reply" &&
		fail "U's waiting read returned the secret recorded after the flag was cleared: $(cat "$tmp/reply")"
	[ "$(cat "$tmp/reply")" = 0 ] || break
	echo "try $try: the endpoint's wait ended first"
done
[ "$(head -n 1 "$tmp/reply")" = -13 ] || fail "U's waiting read: $(cat "$tmp/reply")"
[ "$(wc -l < "$tmp/reply")" -eq 2 ] || fail "U's refusal is not one line: $(cat "$tmp/reply")"
echo "U's read: $(sed -n 2p "$tmp/reply")"
"$KKCTL" -p "$pid" read dynamic_debug/trace > "$tmp/out" 2> "$tmp/kerr" ||
	fail "root's read of the trace: $(cat "$tmp/kerr")"
grep -q "the secret is $secret" "$tmp/out" || fail "root's read has no secret: $(cat "$tmp/out")"
finish
echo "control_trust_wait: ok"
