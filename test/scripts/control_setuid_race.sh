#!/bin/sh
# SPDX-License-Identifier: MIT
# The process's ids change while the endpoint makes its socket, between its
# listen() and its note of the ids (test/progs/control_setuid_race.c puts the
# change there; a worker dropping privileges right after fork lands there by
# chance: mp_server.sh failed so once under ASan).  The endpoint must still
# end up with a socket of the new owner: kkctl, as root, then reads the
# process's dynamic_debug/control.  Before the fix the endpoint noted the new
# ids for the old socket, never saw a change, and kkctl refused for ever: "its
# socket belongs to uid 0, process N runs as uid U".  kkctl is tried again
# until it succeeds (at most 5 s): a bounded wait for a condition.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
B=${KK_BUILD:?}
PROG=$B/test/progs/control_setuid_race
[ -x "$PROG" ] && [ -x "$B/kkctl" ] || { echo "not built"; exit 77; }
U=$((3993000 + $$ % 1000))
tmp=$(mktemp -d /tmp/kk-setuid-race.XXXXXX)
chmod 755 "$tmp"
pid=
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
ctl_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && ctl_env=KK_CONTROL=1

mkfifo "$tmp/in" "$tmp/out"
env $ctl_env KK_RACE_UID=$U "$PROG" < "$tmp/in" > "$tmp/out" &
exec 3> "$tmp/in" 4< "$tmp/out"
read -r pid <&4 || fail "the program did not start"
i=0
until grep -q "^Uid:	$U	" "/proc/$pid/status" 2>/dev/null; do
	i=$((i + 1))
	[ $i -le 500 ] || fail "the program never ran as uid $U"
	sleep 0.01
done
i=0
until "$B/kkctl" -p "$pid" read dynamic_debug/control > "$tmp/reply" 2> "$tmp/err"; do
	i=$((i + 1))
	[ $i -le 500 ] || fail "kkctl never reached the process: $(cat "$tmp/err")"
	sleep 0.01
done
grep -q 'race_site' "$tmp/reply" || fail "the listing has no race_site: $(head -c 300 "$tmp/reply")"
echo "control_setuid_race: ok (a socket of uid $U after $i refusals)"
