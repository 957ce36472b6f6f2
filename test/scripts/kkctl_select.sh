#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl's discovery and output: -n NAME (like pgrep -x), --all, several -p,
# per-process reports and exit status, --json (ls and replies; hostile
# strings escaped), --version, unknown commands and options, escaping of a
# hostile reply, and a process killed with SIGKILL gone from ls.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
p1= p2= ev=
tmp=$(mktemp -d /tmp/kk-select.XXXXXX)
fail() {
	echo "FAIL: $*"
	for p in $p1 $p2 $ev; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	exit 1
}
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
start() {	# start VAR: a jump_label_prog, its pid in VAR once it serves
	mkfifo "$tmp/f.$1"
	env $control_env "$B/test/progs/jump_label_prog" > "$tmp/f.$1" &
	eval "$1=\$!"
	read -r line < "$tmp/f.$1" || fail "jump_label_prog did not start"
}
start p1
start p2

# ---- --version, usage errors
"$KKCTL" --version | grep -Eq '^kkctl \(kernelkit\) [0-9]+\.[0-9]+' || fail "--version: $("$KKCTL" --version)"
"$KKCTL" -p "$p1" raed static_keys 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown command: exit $rc"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "unknown command: not one line: $(cat "$tmp/err")"
grep -q "^kkctl: unknown command 'raed' (commands: ls, files, read, write, record); try 'kkctl --help'\$" \
	"$tmp/err" || fail "unknown command: $(cat "$tmp/err")"
"$KKCTL" --frobnicate ls 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "unknown option: exit $rc"
grep -q "try 'kkctl --help'" "$tmp/err" || fail "unknown option: $(cat "$tmp/err")"
"$KKCTL" read static_keys 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] || fail "no target: exit $rc"
grep -q "needs a target: -p PID, -n NAME, --tree PID, -u UNIT or --all" "$tmp/err" || fail "no target: $(cat "$tmp/err")"

# ---- several targets: a report per process, exit 1 if any failed
"$KKCTL" -p "$p1" -p "$p2" read static_keys > "$tmp/out" 2> "$tmp/err" || fail "two pids: $(cat "$tmp/err")"
grep -q "^==> $p1 jump_label_prog <==\$" "$tmp/out" || fail "no header for $p1: $(cat "$tmp/out")"
grep -q "^==> $p2 jump_label_prog <==\$" "$tmp/out" || fail "no header for $p2"
[ "$(grep -c '^# name enabled' "$tmp/out")" -eq 2 ] || fail "two listings: $(cat "$tmp/out")"
"$KKCTL" -p "$p1" -p 999999 read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "one target failed: exit $rc"
grep -q "^==> $p1 jump_label_prog <==\$" "$tmp/out" || fail "the good target's report is missing"
grep -q "^kkctl: process 999999: no such process\$" "$tmp/err" ||
	fail "the bad target's report: $(cat "$tmp/err")"

# ---- -n NAME: both jump_label_targets, and nothing else (within this script's tree:
# other tests' jump_label_targets, of other uids, would be reported as unreachable)
"$KKCTL" --tree $$ -n jump_label_prog files > "$tmp/out" 2> "$tmp/err" || fail "-n: $(cat "$tmp/err")"
grep -q "^==> $p1 jump_label_prog <==\$" "$tmp/out" && grep -q "^==> $p2 jump_label_prog <==\$" "$tmp/out" ||
	fail "-n misses one: $(cat "$tmp/out")"
grep '^==> ' "$tmp/out" | grep -v ' jump_label_prog <==$' && fail "-n selects others"
"$KKCTL" -n no_such_program_kk read static_keys 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "-n without a match: exit $rc"
grep -q "no process with a control endpoint has that name" "$tmp/err" || fail "-n message: $(cat "$tmp/err")"

# ---- --all: at least ours (other processes of this user may serve too)
"$KKCTL" --all files > "$tmp/out" 2> /dev/null
grep -q "^==> $p1 jump_label_prog <==\$" "$tmp/out" && grep -q "^==> $p2 jump_label_prog <==\$" "$tmp/out" ||
	fail "--all misses ours: $(cat "$tmp/out")"

# ---- --json
"$KKCTL" --json ls > "$tmp/out" || fail "--json ls"
grep -q "^{\"pid\":$p1,\"name\":\"jump_label_prog\",\"uid\":$(id -u),\"ok\":true}\$" "$tmp/out" || fail "--json ls: $(cat "$tmp/out")"
"$KKCTL" --json -p "$p1" -p 999999 read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "--json with a failure: exit $rc"
[ -s "$tmp/err" ] && fail "--json: errors belong in the objects: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/out")" -eq 2 ] || fail "--json: one line per process: $(cat "$tmp/out")"
grep -q "^{\"pid\":$p1,\"name\":\"jump_label_prog\",\"uid\":$(id -u),\"ok\":true,\"reply\":\"# name enabled" \
	"$tmp/out" || fail "--json ok: $(cat "$tmp/out")"
grep -q '^{"pid":999999,"name":"?","uid":-1,"ok":false,"error":"no such process"}$' \
	"$tmp/out" || fail "--json error: $(cat "$tmp/out")"
if command -v python3 > /dev/null; then
	python3 -c 'import json,sys
for l in open(sys.argv[1]): json.loads(l)' "$tmp/out" || fail "--json is not JSON: $(cat "$tmp/out")"
else
	echo "SKIP: --json lines not parsed as JSON: no python3"
fi

# ---- a hostile reply: escaped as text and as JSON
mkfifo "$tmp/evil"
"$B/test/progs/control_evil" > "$tmp/evil" &
ev=$!
read -r line < "$tmp/evil" || fail "control_evil did not start"
"$KKCTL" -p "$ev" read x > "$tmp/out" || fail "read from control_evil"
[ "$(cat "$tmp/out")" = "$(printf 'esc\\x1b]0;owned\\x07 clear\\x1b[2J del\\x7f cr\\x0d quote" backslash\\ tab\tend')" ] ||
	fail "text not escaped: $(od -c "$tmp/out" | head -5)"
"$KKCTL" --json -p "$ev" read x > "$tmp/out" || fail "--json read from control_evil"
grep -q '"reply":"esc\\u001b]0;owned\\u0007 clear\\u001b\[2J del\\u007f cr\\u000d quote\\" backslash\\\\ tab\\tend\\n"}$' \
	"$tmp/out" || fail "json not escaped: $(cat "$tmp/out")"
LC_ALL=C grep -q "$(printf '\033')" "$tmp/out" && fail "a raw ESC in --json output"
kill "$ev"; wait "$ev" 2>/dev/null; ev=

# ---- SIGKILL leaves nothing behind: ls no longer lists it
kill -9 "$p2"; wait "$p2" 2>/dev/null
"$KKCTL" ls > "$tmp/out" || fail "ls"
grep -q "^$p2 " "$tmp/out" && fail "ls lists a killed process: $(cat "$tmp/out")"
grep -q " @kernelkit/$p2\$" /proc/net/unix && fail "the killed process's name is still bound"
grep -q "^$p1 " "$tmp/out" || fail "ls lost $p1"
p2=
kill "$p1"; wait "$p1" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_select: ok"
