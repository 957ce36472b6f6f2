#!/bin/sh
# SPDX-License-Identifier: MIT
# The journal sink against a real systemd-journald: the test starts its own
# in a private mount namespace (a tmpfs on /run, so the host's journal is
# never touched), sends messages with KK_DYNDBG_SINK=journal and with
# kk_dyndbg_set_sink(), reads them back with `journalctl -o json` and checks
# every field: one line, a multi-line message (the binary-safe field form),
# 70000 bytes, and 1 MiB (past any datagram: the sealed memfd).  Then, with
# journald gone, the messages go to stderr with one warning.
# Where no journald can run (not installed, not root, or it will not start),
# the test prints a "SKIP:" line naming the real-journald part (a skipped part,
# counted) and checks the same entries with test/progs/journal_fake,
# which parses the wire format strictly as the protocol specifies (memfd
# seals included).  KK_JOURNAL_FAKE=1 forces that mode.
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/dynamic_debug_journal
FAKE=$B/test/progs/journal_fake
JOURNALD=
for j in /lib/systemd/systemd-journald /usr/lib/systemd/systemd-journald; do
	[ -x "$j" ] && { JOURNALD=$j; break; }
done
[ -x "$PROG" ] && [ -x "$FAKE" ] || { echo "not built"; exit 77; }
command -v jq > /dev/null || { echo "SKIP: jq is needed to read journalctl -o json"; exit 77; }

if [ "${KK_JOURNAL_NS:-}" != 1 ]; then
	why=
	if [ -z "$JOURNALD" ] || ! command -v journalctl > /dev/null; then
		why="systemd-journald or journalctl is not installed"
	elif [ "$(id -u)" != 0 ]; then
		why="not root: cannot start a private journald"
	fi
	if [ -z "$why" ] && unshare -m true 2> /dev/null; then
		KK_JOURNAL_NS=1 exec unshare -m sh "$0" "$@"
	fi
	[ -n "$why" ] || why="unshare -m is refused (no private mount namespace)"
	# a fake journal needs only a private /run: a user namespace will do
	if [ "$(id -u)" = 0 ] && unshare -m true 2> /dev/null; then
		KK_JOURNAL_NS=1 KK_JOURNAL_FAKE=1 KK_JOURNAL_WHY=$why exec unshare -m sh "$0" "$@"
	elif unshare -rm true 2> /dev/null; then
		KK_JOURNAL_NS=1 KK_JOURNAL_FAKE=1 KK_JOURNAL_WHY=$why exec unshare -rm sh "$0" "$@"
	fi
	echo "SKIP: no journald can run here ($why), and no private mount namespace for a fake one"
	exit 77
fi
fake=${KK_JOURNAL_FAKE:-0}

tmp=$(mktemp -d /tmp/kk-journal.XXXXXX)
jpid=
fail() {
	echo "FAIL: $*"
	[ -n "$jpid" ] && kill "$jpid" 2> /dev/null
	[ -f "$tmp/journald.log" ] && sed 's/^/journald: /' "$tmp/journald.log" | tail -5
	rm -rf "$tmp"
	exit 1
}

# Our own /run (and /var/log/journal, if there is one): journald writes its
# sockets to /run/systemd/journal and its files to /run/log/journal.
mount -t tmpfs -o mode=755 kk-journal-run /run || fail "mount tmpfs /run"
[ -d /var/log/journal ] && { mount -t tmpfs kk-journal-var /var/log/journal || fail "mount /var/log/journal"; }
mkdir -p /run/systemd/journal /run/log

# wait_socket: until the journal (real or fake) has bound its socket;
# datagrams sent from then on queue until it reads them.  1 if it exited.
wait_socket() {
	i=0
	while [ ! -S /run/systemd/journal/socket ]; do
		kill -0 "$jpid" 2> /dev/null || { wait "$jpid"; jpid=; return 1; }
		i=$((i + 1))
		[ $i -lt 300 ] || fail "no journal socket after 30 s"
		sleep 0.1
	done
}

if [ "$fake" != 1 ]; then
	"$JOURNALD" > "$tmp/journald.log" 2>&1 &
	jpid=$!
	if wait_socket; then
		echo "$JOURNALD ($(journalctl --version | head -1)), pid $jpid, in a private mount namespace"
	else
		fake=1 KK_JOURNAL_WHY="systemd-journald exited: $(tail -1 "$tmp/journald.log")"
	fi
fi
if [ "$fake" = 1 ]; then
	# What the fake cannot show is a skipped part, said so (issue 38): the
	# wire format it parses strictly still runs below.
	echo "SKIP: a real systemd-journald not tested (${KK_JOURNAL_WHY:-KK_JOURNAL_FAKE=1}):" \
		"its acceptance of the entries and journalctl's reading of them;" \
		"the wire format is checked against test/progs/journal_fake instead"
	"$FAKE" /run/systemd/journal/socket > "$tmp/fake.json" 2> "$tmp/journald.log" &
	jpid=$!
	wait_socket || fail "journal_fake exited: $(cat "$tmp/journald.log")"
fi

# entries TAG: the JSON entries of TAG's messages, once all N have arrived
entries() {
	i=0
	while :; do
		if [ "$fake" = 1 ]; then
			kill -0 "$jpid" 2> /dev/null || fail "journal_fake: $(cat "$tmp/journald.log")"
			jq -c 'select(.KK_MODULE == "kkjournal")' "$tmp/fake.json" > "$tmp/all.json" ||
				fail "journal_fake wrote bad JSON"
		else
			journalctl --sync > /dev/null 2>&1
			journalctl -D /run/log/journal -a -o json KK_MODULE=kkjournal > "$tmp/all.json" \
				2> "$tmp/jctl.err" || fail "journalctl: $(cat "$tmp/jctl.err")"
		fi
		jq -c --arg tag "$1" 'select((.MESSAGE | if type == "array" then implode else . end) | startswith($tag + " "))' \
			"$tmp/all.json" > "$tmp/$1.json" || fail "jq could not read journalctl's output"
		[ "$(wc -l < "$tmp/$1.json")" -ge "$2" ] && return
		i=$((i + 1))
		[ $i -lt 100 ] || fail "$1: $(wc -l < "$tmp/$1.json") of $2 entries in the journal"
		sleep 0.1
	done
}

# check TAG KIND MESSAGE_JQ: the one entry of KIND has every field right
check() {
	tag=$1 kind=$2
	n=$(jq -c --arg m "$tag $kind" 'select((.MESSAGE | if type == "array" then implode else . end) | startswith($m))' \
		"$tmp/$tag.json" | tee "$tmp/entry" | wc -l)
	[ "$n" -eq 1 ] || fail "$tag $kind: $n entries, want 1"
	msg=$(jq -r --arg tag "$tag" "(.MESSAGE | if type == \"array\" then implode else . end) == ($3)" "$tmp/entry")
	[ "$msg" = true ] || fail "$tag $kind: MESSAGE is $(jq -c '.MESSAGE' "$tmp/entry" | cut -c1-200)"
	for kv in PRIORITY=7 KK_MODULE=kkjournal SYSLOG_IDENTIFIER=dynamic_debug_journal _TRANSPORT=journal \
		"$(sed -n 's/^all //p' "$tmp/$tag.expect")" \
		$(sed -n "s/^$kind //p" "$tmp/$tag.expect"); do
		k=${kv%%=*} v=${kv#*=}
		got=$(jq -r --arg k "$k" '.[$k] // "(none)"' "$tmp/entry")
		[ "$got" = "$v" ] || fail "$tag $kind: $k=$got, want $v"
	done
	echo "ok: $tag $kind: $(jq -r '[to_entries[] | select(.key | test("^(PRIORITY|CODE_.*|KK_MODULE|TID|SYSLOG_IDENTIFIER)$")) | "\(.key)=\(.value)"] | join(" ")' "$tmp/entry")"
}

big_jq() { echo "\$tag + \" $1 \" + ([range(0; $2)] | map(97 + . % 26) | implode)"; }

# run TAG [api]: the program's messages, nothing on stderr
run() {
	KK_DYNDBG='module kkjournal +p' KK_DYNDBG_SINK=${KK_SINK:-journal} "$PROG" "$@" \
		> "$tmp/$1.expect" 2> "$tmp/$1.stderr" || fail "dynamic_debug_journal $*: exit $?: $(cat "$tmp/$1.stderr")"
}

tag=kkj$$env
run $tag
[ -s "$tmp/$tag.stderr" ] && fail "stderr with the journal up: $(head -c 300 "$tmp/$tag.stderr")"
entries $tag 4
check $tag one '$tag + " one line"'
check $tag multi '$tag + " multi\nsecond line\n\tthird=3"'
check $tag big "$(big_jq big 70000)"
check $tag huge "$(big_jq huge 1048576)"

# The program puts a pipe on the library's socket number: a new socket, the
# pipe untouched (dynamic_debug_journal checks that), the entry in the journal.
tag=kkj$$reuse
run $tag reuse
[ -s "$tmp/$tag.stderr" ] && fail "stderr with the journal up: $(head -c 300 "$tmp/$tag.stderr")"
entries $tag 5
check $tag one '$tag + " one line"'
check $tag reused '$tag + " reused"'

tag=kkj$$api
KK_SINK=stderr run $tag api
[ -s "$tmp/$tag.stderr" ] && fail "stderr with the journal up: $(head -c 300 "$tmp/$tag.stderr")"
entries $tag 4
check $tag one '$tag + " one line"'
check $tag huge "$(big_jq huge 1048576)"

# No journal (journald gone, its socket refuses): stderr, one warning.
kill "$jpid"; wait "$jpid" 2> /dev/null; jpid=
tag=kkj$$gone
run $tag
w=$(grep -c 'kernelkit: dynamic debug: the journal at /run/systemd/journal/socket refuses messages' "$tmp/$tag.stderr")
[ "$w" -eq 1 ] || fail "no journal: $w warnings, want 1: $(head -c 300 "$tmp/$tag.stderr")"
m=$(grep -c "^$tag \(one\|multi\|big\|huge\)" "$tmp/$tag.stderr")
[ "$m" -eq 4 ] || fail "no journal: $m of 4 messages on stderr"
echo "ok: no journal: the 4 messages on stderr, one warning"
rm -rf "$tmp"
echo PASS
