#!/bin/sh
# SPDX-License-Identifier: MIT
# dynamic_debug/session (issue 39) is served as any control file: only to
# whom may ptrace the process (docs/control.md, "Whom the endpoint serves").
# control_trust runs as root; a throwaway uid U:
#  - cannot begin a session: one line, the endpoint's refusal, and nothing
#    changes (no session, trust_a's flags as they were);
#  - cannot renew, end or read root's session, even with its id: the session
#    stays open, its site still switched on;
# and root then ends it, which puts the site back.
set -u
KK_TRUST_LIB_NAME=trust-session
. "${KK_SRC:?}/test/control-trust-lib.sh"
nl='
'
# u_refused REQUEST: U's kkctl refuses to send it (the process is root's),
# in one line; and sent as U by a bare client (control_raw), the endpoint
# refuses it: status -13, one line, "peer is neither uid 0 nor root"
u_refused() {
	verb=${1%% *} rest=${1#* }
	file=${rest%%"$nl"*}
	body=
	[ "$file" = "$rest" ] || body=${rest#*"$nl"}
	if [ "$verb" = write ]; then
		as "$U" "$KKCTL" -p "$pid" write "$file" "$body" > "$tmp/out" 2> "$tmp/kerr"
	else
		as "$U" "$KKCTL" -p "$pid" read "$file" > "$tmp/out" 2> "$tmp/kerr"
	fi
	rc=$?
	[ $rc -eq 1 ] || fail "U's kkctl $verb: exit $rc, want 1: $(cat "$tmp/out" "$tmp/kerr")"
	[ -s "$tmp/out" ] && fail "U's kkctl $verb printed: $(cat "$tmp/out")"
	[ "$(wc -l < "$tmp/kerr")" -eq 1 ] || fail "U's kkctl $verb: not one line: $(cat "$tmp/kerr")"
	as "$U" "$RAW" "$pid" "$1" > "$tmp/out" 2>&1 || fail "U's raw $verb: $(cat "$tmp/out")"
	[ "$(head -n 1 "$tmp/out")" = -13 ] || fail "U's raw '$1': $(cat "$tmp/out")"
	[ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "U's raw '$1': not one line: $(cat "$tmp/out")"
	grep -q "^peer is neither uid 0 nor root$" "$tmp/out" || fail "U's raw '$1': $(cat "$tmp/out")"
}
session() {
	"$KKCTL" -p "$pid" read dynamic_debug/session 2>&1 || fail "root's read of the session"
}

start
[ "$(flags trust_a)" = "=_" ] || fail "trust_a starts $(flags trust_a)"
u_refused "write dynamic_debug/session${nl}begin 60000${nl}func trust_a +T"
[ "$(flags trust_a)" = "=_" ] || fail "U's refused begin changed trust_a: $(flags trust_a)"
[ "$(session)" = "no session" ] || fail "U's refused begin opened a session: $(session)"
echo "U's begin: kkctl: $(cat "$tmp/kerr"); the endpoint: $(tail -n 1 "$tmp/out")"

reply=$("$KKCTL" -p "$pid" write dynamic_debug/session "begin 60000${nl}func trust_a +T" 2>&1) ||
	fail "root's begin: $reply"
id=$(printf '%s\n' "$reply" | sed -n 's/^session \([0-9a-f]*\):.*/\1/p')
[ -n "$id" ] || fail "root's begin replied '$reply'"
[ "$(flags trust_a)" = "=T" ] || fail "root's begin: trust_a is $(flags trust_a)"
u_refused "write dynamic_debug/session${nl}end $id"
u_refused "write dynamic_debug/session${nl}renew $id"
u_refused "read dynamic_debug/session"
session | grep -q "^session $id lease_ms 60000 " || fail "after U's end: $(session)"
[ "$(flags trust_a)" = "=T" ] || fail "U's refused end changed trust_a: $(flags trust_a)"

reply=$("$KKCTL" -p "$pid" write dynamic_debug/session "end $id" 2>&1) || fail "root's end: $reply"
[ "$reply" = "session $id ended: restored 1, left 0" ] || fail "root's end replied '$reply'"
[ "$(flags trust_a)" = "=_" ] || fail "root's end: trust_a is $(flags trust_a)"
finish
echo "control_trust_session: ok"
