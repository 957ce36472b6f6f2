#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/session where pidfd_open() is refused (docs/dynamic_debug.md,
# "The rule of the lease"): a seccomp filter that fails it with EPERM, and
# one that fails it with ENOSYS as a kernel before 5.3 does, installed by
# test/progs/dynamic_debug_nopidfd before it execs record_flood (so before
# the library is loaded).  `begin LEASE_MS held` cannot watch its holder
# there, and keeps the plain time lease, silently:
#  - `begin 60000 held` by a one-shot kkctl write: once kkctl has exited the
#    session is still open (with a pidfd it would have ended with kkctl),
#    with lease_ms 60000 and no holder; `end` puts the site back;
#  - `begin 1000 held`, its holder gone: the lease ends the session and the
#    site is back (a bounded wait for the event, no timing);
#  - the process says nothing on stderr.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kknopidfd
WRAP=$B/test/progs/dynamic_debug_nopidfd
[ -x "$WRAP" ] || { echo "not built"; exit 77; }

comm=$(basename "$PROG" | cut -c1-15)
n=0
for err in EPERM ENOSYS; do
	n=$((n + 1))
	mkfifo "$tmp/in$n"
	env $control_env "$WRAP" "$err" "$PROG" 1 10 < "$tmp/in$n" > "$tmp/out$n" 2> "$tmp/err$n" &
	p=$!
	pids="$pids $p"
	exec 3> "$tmp/in$n"	# (its stdin stays open; the next one closes it: it exits)
	# The wrapper links the library too, so its own endpoint answers as $p
	# until it execs: wait for the program's name as well.
	until_ok "$err: the endpoint of $p after its exec, or its exit" \
		eval '{ [ "$(cat /proc/$p/comm 2>/dev/null)" = "$comm" ] && served "$p"; } || gone "$p"'
	if ! served "$p"; then
		wait "$p"
		rc=$?
		[ $rc -eq 77 ] && { cat "$tmp/out$n"; exit 77; }
		fail "$err: record_flood under the filter exited ($rc): $(cat "$tmp/err$n")"
	fi

	out=$(session_begin "$p" 'begin 60000 held')
	case $out in "session "*": matched 1 changed 1") ;; *) fail "$err: begin 60000 held: $out" ;; esac
	s=$(session_of "$p")
	case $s in
	"session "*" lease_ms 60000 "*" sites 1") ;;	# (no " holder PID")
	*) fail "$err: pidfd_open refused: want the time lease alone (60000 ms, no holder), got: $s" ;;
	esac
	session_end "$p"
	site_off "$p" || fail "$err: flood_tick still on after end"

	out=$(session_begin "$p" 'begin 1000 held')
	case $out in "session "*": matched 1 changed 1") ;; *) fail "$err: begin 1000 held: $out" ;; esac
	until_ok "$err: the session's end by its 1000 ms lease" no_session "$p"
	site_off "$p" || fail "$err: flood_tick still on after the lease ended"
	[ -s "$tmp/err$n" ] && fail "$err: the process said: $(cat "$tmp/err$n")"
done
echo "dynamic_debug_session_nopidfd: ok"
