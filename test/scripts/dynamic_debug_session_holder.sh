#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/session's holder (docs/dynamic_debug.md, "The rule of the
# lease"): `begin LEASE_MS held` makes the writer the holder when this
# process sees its pid; the session ends as soon as the holder is gone.
#  - held by a one-shot `kkctl write`: gone when kkctl has exited (the next
#    read finds no session, the site is back), not a lease later;
#  - without `held`: the time lease alone (the session outlives the write);
#  - `begin 1000 bogus`: refused in one line, nothing changed;
#  - a process in a pid namespace of its own (unshare -p), which cannot see
#    kkctl's pid: `held` gives the time lease (LEASE_MS, no holder), silently;
#  - a renewal queued on the socket while the process was stopped past its
#    lease counts (the endpoint serves the backlog before judging the lease).
# Every check reads the state right after the change: no timing.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkholder
unshare -p -f true 2>/dev/null || { echo "skip: unshare -p refused here (a pid namespace is needed)"; exit 77; }

# A writer that waits on its stdin (a fifo kept open on fd $3) for "go".
spawn() {
	mkfifo "$tmp/in$2"
	$1 env $control_env "$PROG" 1 1000 < "$tmp/in$2" > /dev/null 2>&1 &
	pids="$pids $!"
	eval "exec $(($2 + 2))> \"\$tmp/in$2\""
}
spawn "" 1
p=$!
until_ok "endpoint of $p" served "$p"

# 1. held by a kkctl that is gone
out=$(session_begin "$p" 'begin 1000 held')
case $out in "session "*": matched 1 changed 1") ;; *) fail "begin held: $out" ;; esac
s=$(session_of "$p")
[ "$s" = "no session" ] || fail "the holder (kkctl write) exited, its session did not end: $s"
site_off "$p" || fail "flood_tick still on after its holder exited"

# 2. no holder: the time lease alone
out=$(session_begin "$p" 'begin 60000')
case $out in "session "*": matched 1 changed 1") ;; *) fail "begin: $out" ;; esac
s=$(session_of "$p")
case $s in
"session "*" lease_ms 60000 "*" sites 1") ;;
*) fail "a session without holder: $s" ;;
esac
session_end "$p"
site_off "$p" || fail "flood_tick still on after end"

# 3. a bad word after the lease: refused, nothing changed
out=$(session_begin "$p" 'begin 1000 bogus') && fail "begin 1000 bogus was taken: $out"
[ "$(printf '%s\n' "$out" | wc -l)" -eq 1 ] || fail "more than one line: $out"
case $out in *"expected 'held' or nothing"*) ;; *) fail "begin 1000 bogus: $out" ;; esac
[ "$(session_of "$p")" = "no session" ] || fail "a refused begin left a session"
site_off "$p" || fail "a refused begin switched flood_tick on"

# 5 (first: the writer is ours). A renewal that waited in the backlog past
# the lease's end counts: the writer is stopped (every thread), a `renew` is
# queued on its socket (ss shows the pending connection), the lease's 4000
# ms pass while it is stopped; continued, the endpoint serves the renewal
# before it judges the lease.  (Before: the lease fired first, and the
# renew got "no session".)
queued() { [ "$(ss -xlH src "@kernelkit/$1" 2>/dev/null | awk '{print $3}')" = 1 ]; }
# (a try counts only if the writer was stopped well inside the lease: on a
# loaded machine the lease may run out before the stop; then try again)
try=0
while :; do
	try=$((try + 1))
	[ $try -le 5 ] || { echo "skip: could not stop the writer within 3 s of a begin, 5 times (load)"; exit 77; }
	t0=$(date +%s%N)
	out=$(session_begin "$p" 'begin 4000')
	id=$(printf '%s\n' "$out" | sed -n 's/^session \([0-9a-f]\{16\}\): matched.*/\1/p')
	[ -n "$id" ] || fail "begin 4000: $out"
	kill -STOP "$p"
	until_ok "writer stopped" all_stopped "$p"
	[ $(($(date +%s%N) - t0)) -lt 3000000000 ] && break
	kill -CONT "$p"
	"$K" -p "$p" write dynamic_debug/session "end $id" > /dev/null 2>&1
done
"$K" -p "$p" write dynamic_debug/session "renew $id" > "$tmp/renew.out" 2>&1 &
r=$!
pids="$pids $r"
until_ok "the renew queued on the stopped writer's socket" queued "$p"
t0=$(date +%s%N)	# (the fault: stopped past its 4000 ms lease)
while [ $(($(date +%s%N) - t0)) -lt 4500000000 ]; do sleep 0.1; done
kill -CONT "$p"
wait "$r" || fail "a renewal queued while the lease ran out did not count: $(cat "$tmp/renew.out")"
case $(session_of "$p") in "session $id "*) ;; *) fail "session $id ended after its renewal: $(session_of "$p")" ;; esac
session_end "$p"

# 4. a process that cannot see kkctl's pid: the time lease, no holder
spawn "unshare -p -f --kill-child" 2
u=$!
c=
i=0
until [ -n "$c" ]; do	# (unshare's child: the writer)
	c=$(pgrep -P "$u" record_flood)
	i=$((i + 1))
	[ $i -le 600 ] || fail "no writer under unshare"
	[ -n "$c" ] || sleep 0.05
done
i=0
until "$K" -p "$c" read dynamic_debug/session > /dev/null 2>&1; do
	i=$((i + 1))
	[ $i -le 600 ] || fail "the writer in its pid namespace does not answer"
	sleep 0.05
done
# (60000: had it watched kkctl, the session would be gone with it)
out=$(session_begin "$c" 'begin 60000 held')
case $out in "session "*": matched 1 changed 1") ;; *) fail "begin held, in a pid namespace: $out" ;; esac
s=$(session_of "$c")
case $s in
"session "*" lease_ms 60000 "*" sites 1") ;;	# (no " holder PID": kkctl is not visible there)
*) fail "held, by a pid not visible: want the time lease alone, got: $s" ;;
esac
session_end "$c"
site_off "$c" || fail "flood_tick still on in the pid namespace after end"
echo "dynamic_debug_session_holder: ok"
