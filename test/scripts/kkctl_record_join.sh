#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record holds the session of a fork child it joins (docs/control.md,
# "New processes"; docs/dynamic_debug.md, fork): a worker that record_trio
# forks during the recording inherits the master's session (the same id, a
# fresh lease, no holder); kkctl picks it up and joins it with `renew ID
# held`, which makes kkctl its holder:
#  - the child's session shows ` holder KKCTL_PID`, with the master's id;
#  - kkctl killed with SIGKILL: the child's session is gone at the next read
#    (with its holder, not a lease later), and its site is back.
# The join is what is tested when kkctl picks the child up within the
# inherited lease (1000 ms).  On a machine so loaded that it does not, the
# lease has ended that session and kkctl begins one of its own there: the
# join is then a SKIP line, and the rest still holds.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkjoin record_trio
Q='func trio_tick +T'
trio_start
trio_ask pids
set -- $ans
master=$2
for p in "$2" "$3" "$4"; do until_ok "endpoint of $p" served "$p"; done
held_by() { session_of "$1" | grep -q "^session .* holder $2\$"; }

"$K" --tree "$master" record --format jsonl -o "$tmp/r.jsonl" "$Q" 2> "$tmp/r.err" &
rec=$!
pids="$pids $rec"
until_ok "the master's session, held by kkctl" held_by "$master" "$rec"
id=$(session_of "$master" | cut -d' ' -f2)
trio_ask spawn
w=${ans#ok }
until_ok "the forked worker's session, held by kkctl" held_by "$w" "$rec"
case $(session_of "$w") in
"session $id "*) ;;
*) echo "SKIP: the join: kkctl picked the forked worker up after its inherited lease ran out (load)" ;;
esac

kill -KILL "$rec"
wait "$rec" 2>/dev/null
s=$(session_of "$w")
[ "$s" = "no session" ] || fail "the forked worker: kkctl is gone, its session is not: $s"
"$K" -p "$w" read dynamic_debug/control | grep trio_tick | grep -q ' =_ ' ||
	fail "the forked worker's site is still on after kkctl's SIGKILL"
echo "kkctl_record_join: ok"
