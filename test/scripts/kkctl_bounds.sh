#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl bounds every target: one deadline for a whole reply and a cap on its
# size.  Two endpoints that pass kkctl's checks and never finish their reply
# (test/progs/control_endless.c: one drips a byte every 0.5 s, inside any
# per-receive timeout; one floods) get one line each and exit status 1, alone
# and among others (--all, -n), while a normal process is still served; kkctl's
# largest resident set stays under the cap plus a slack.  Bounds from the
# environment, then from options (which win).  The only times are failure
# detectors (timeout 600: "does not hang").
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
ok= drip= flood=
tmp=$(mktemp -d /tmp/kk-bounds.XXXXXX)
fail() {
	echo "FAIL: $*"
	for p in $ok $drip $flood; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	exit 1
}
start() {	# start VAR PROG ARGS...: PROG's pid in VAR once it serves
	v=$1; shift
	mkfifo "$tmp/f.$v"
	"$@" > "$tmp/f.$v" &
	eval "$v=\$!"
	read -r line < "$tmp/f.$v" || fail "$1 did not start"
}
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
# The fallback build has no sites, so an untouched key is not listed: its
# reply is the header alone.
key_line='^target_key '
[ "${KK_TEST_LABEL:-default}" = fallback ] && key_line='^# name enabled count sites module mode$'
start ok env $control_env "$B/test/progs/jump_label_prog"
start drip "$B/test/progs/control_endless" drip 500
start flood "$B/test/progs/control_endless" flood

# run [VAR=VALUE...] -- KKCTL-ARGS...: kkctl's status in $rc, its output in
# $tmp/out and $tmp/err, its largest resident set (KiB) in $rss.  Outside a
# sanitizer build (whose shadow memory needs the address space), the address
# space is limited, so that a kkctl that does not cap a reply fails this test
# and not the machine.  Under ASan, realloc() copies and free() quarantines:
# without a quarantine the peak is the old buffer and the new one, so the
# allowance is twice the cap there, plus more slack (shadow memory).
san=false
case ${KK_TEST_LABEL:-default} in *san*) san=true ;; esac
run() {
	vars=
	while [ "$1" != -- ]; do vars="$vars $1"; shift; done
	shift
	rm -f "$tmp/rss"
	(
		$san || ulimit -v 1048576
		$san && export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
		exec env $vars "$B/test/progs/maxrss" "$tmp/rss" timeout 600 "$KKCTL" "$@"
	) > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc -ne 124 ] || fail "kkctl $*: still running after 600 s"
	rss=$(cat "$tmp/rss" 2>/dev/null) || fail "kkctl $*: no resident set size"
}
# below KIB WHAT: the resident set stays under KIB plus 32 MiB of slack
below() {
	lim=$(($1 + 32768))
	$san && lim=$((2 * $1 + 65536))
	[ "$rss" -lt $lim ] || fail "$2: kkctl grew to $rss KiB (cap $1 KiB, limit $lim KiB)"
}
line() {	# line TEXT: stderr is exactly this one line
	[ "$(cat "$tmp/err")" = "$1" ] || fail "expected \"$1\", got: $(cat "$tmp/err")"
}

# ---- alone: the dripping one is cut at the deadline, the flood at the cap
run KKCTL_TIMEOUT=1 -- -p "$drip" read static_keys
[ $rc -eq 1 ] || fail "drip: exit $rc: $(cat "$tmp/err")"
line "kkctl: process $drip (control_endless): no complete reply within 1 s"
run KKCTL_MAX_REPLY=1M -- -p "$flood" read static_keys
[ $rc -eq 1 ] || fail "flood: exit $rc: $(cat "$tmp/err")"
line "kkctl: process $flood (control_endless): reply larger than 1 MiB"
below 1024 "flood, 1 MiB cap"
[ ! -s "$tmp/out" ] || fail "flood: something printed: $(head -c 200 "$tmp/out")"
# The default cap (a long deadline: the cap must be what stops it).
run KKCTL_TIMEOUT=600 -- -p "$flood" read static_keys
[ $rc -eq 1 ] || fail "flood, default cap: exit $rc: $(cat "$tmp/err")"
line "kkctl: process $flood (control_endless): reply larger than 64 MiB"
below 65536 "flood, default cap"
echo "alone: ok (flood with the default cap: $rss KiB)"

# ---- among others: --all finishes, reports each, serves the normal one
check_many() {	# check_many WHAT
	[ $rc -eq 1 ] || fail "$1: exit $rc: $(cat "$tmp/err")"
	grep -qx "kkctl: process $drip (control_endless): no complete reply within 1 s" "$tmp/err" ||
		fail "$1: no line for the drip: $(cat "$tmp/err")"
	grep -qx "kkctl: process $flood (control_endless): reply larger than 1 MiB" "$tmp/err" ||
		fail "$1: no line for the flood: $(cat "$tmp/err")"
	sed -n "/^==> $ok jump_label_prog <==\$/,/^==> /p" "$tmp/out" | grep -q "$key_line" ||
		fail "$1: the normal process's reply is missing: $(head -c 500 "$tmp/out")"
	below 1024 "$1"
}
run KKCTL_TIMEOUT=1 KKCTL_MAX_REPLY=1M -- --all read static_keys
check_many --all
# Options win over the environment (with KKCTL_TIMEOUT=3600 alone this hangs).
run KKCTL_TIMEOUT=3600 KKCTL_MAX_REPLY=1G -- --timeout 1 --max-reply 1024K \
	-n control_endless -n jump_label_prog read static_keys
check_many "-n, options"
run -- -t 1 --max-reply 1M --json -p "$drip" -p "$flood" -p "$ok" read static_keys
[ $rc -eq 1 ] || fail "--json: exit $rc"
grep -q "^{\"pid\":$drip,.*\"ok\":false,\"error\":\"no complete reply within 1 s\"}\$" "$tmp/out" ||
	fail "--json drip: $(cat "$tmp/out")"
grep -q "^{\"pid\":$flood,.*\"ok\":false,\"error\":\"reply larger than 1 MiB\"}\$" "$tmp/out" ||
	fail "--json flood: $(cat "$tmp/out")"
grep -q "^{\"pid\":$ok,.*\"ok\":true," "$tmp/out" || fail "--json normal: $(cat "$tmp/out")"
echo "among others: ok"

# ---- bad bounds: usage errors, one line each
for bad in "-t 0" "-t x" "--timeout 1e9" "--max-reply 0" "--max-reply 3Q" "--max-reply -1"; do
	run -- $bad -p "$ok" read static_keys
	[ $rc -eq 2 ] || fail "$bad: exit $rc"
	[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "$bad: not one line: $(cat "$tmp/err")"
done
run KKCTL_TIMEOUT=soon -- -p "$ok" read static_keys
[ $rc -eq 2 ] || fail "KKCTL_TIMEOUT=soon: exit $rc"
line "kkctl: bad KKCTL_TIMEOUT=soon: a number of seconds, more than 0 and at most 86400"
run -- --max-reply 3Q -p "$ok" read static_keys
line "kkctl: bad --max-reply 3Q: a size in bytes (suffix K, M or G), from 1 byte to 1 GiB"
echo "bad bounds: ok"

for p in $ok $drip $flood; do kill "$p"; done
wait 2>/dev/null
rm -rf "$tmp"
echo "kkctl_bounds: ok"
