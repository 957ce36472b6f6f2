# SPDX-License-Identifier: MIT
# Waiting helpers of the kkctl record scripts, sourced once $K (kkctl) and
# fail() exist.
# until_ok WHAT CMD...: until CMD succeeds, at most 30 s (a hang guard: each
# try waits for the event).
until_ok() {
	what=$1
	shift
	i=0
	until "$@"; do
		i=$((i + 1))
		[ $i -le 600 ] || fail "$what: not within 30 s"
		sleep 0.05
	done
}
served() { grep -q " @kernelkit/$1\$" /proc/net/unix; }
session_of() { "$K" -p "$1" read dynamic_debug/session 2>&1; }
has_session() { session_of "$1" | grep -q '^session '; }
no_session() { session_of "$1" | grep -qx 'no session'; }
# site_off P: record_flood's flood_tick has no flag set in process P.
site_off() { "$K" -p "$1" read dynamic_debug/control | grep flood_tick | grep -q ' =_ '; }
# ended_clean RC SITES: kkctl record exited with RC 0 and said one line
# ($tmp/r.err), which puts back SITES sites (a number, or a grep pattern)
# and leaves none as others set them; no lease ran out; no process in
# $procs (record_flood) has a session open or flood_tick on.
ended_clean() {
	[ "$1" -eq 0 ] || fail "kkctl record: status $1"
	grep -q 'no session' "$tmp/r.err" && fail "a session's lease ran out while kkctl lived"
	grep -q "; sites put back $2, left as others set them 0\$" "$tmp/r.err" ||
		fail "kkctl did not put back the sites (a lease ran out?)"
	[ "$(wc -l < "$tmp/r.err")" -eq 1 ] || fail "kkctl record said more than its summary"
	for p in $procs; do
		no_session "$p" || fail "process $p: a session is still open: $(session_of "$p")"
		site_off "$p" || fail "process $p: flood_tick is still switched on"
	done
}
