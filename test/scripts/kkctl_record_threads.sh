#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record --threads TID|NAME,... keeps the records of those threads
# alone, on every path and in every format, and takes its entries as
# dynamic_debug/trace_threads does (docs/tracing.md): all digits a thread id
# as the process sees it, anything else a name of at most 15 bytes matched
# as a glob.  test/progs/record_raw's two workers, the second named
# "wk-two":
#   - by id (the first worker) and by glob ('wk-*': the second), in ctf
#     (the raw path, and the json path with KKCTL_RECORD_RAW=0), jsonl and
#     perfetto: only that thread's records (before, ctf's raw path wrote
#     every thread's, and a name was compared whole, not as a glob);
#   - an entry list longer than record's arguments (the id 12th of 12):
#     every entry counts (before, the list was cut at the argument count);
#   - an entry that can name no thread (0, a number above INT_MAX, a name
#     of 16 bytes, only commas) is refused in one line, exit 2, and no
#     session begins.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup rthr record_raw
command -v babeltrace2 > /dev/null || { echo "skip: babeltrace2 is not installed (apt-get install babeltrace2)"; exit 77; }
rec=

prog_start raw -- 2 4
pid=$prog_pid
read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start: $ans"
until_ok "record_raw's endpoint" served "$pid"
echo "name 1 wk-two" >&3
read -r ans <&4 && [ "$ans" = named ] || fail "record_raw did not name its thread 1: $ans"
# its workers: the first still named record_raw (but the main thread), the second wk-two
tid_named() {
	for t in /proc/"$pid"/task/*; do
		[ "$(cat "$t/comm")" = "$1" ] && [ "${t##*/}" != "$pid" ] && echo "${t##*/}"
	done
}
w1=$(tid_named record_raw) w2=$(tid_named wk-two)
[ -n "$w1" ] && [ -n "$w2" ] && [ "$w1" = "${w1%% *}" ] || fail "workers: '$w1' and '$w2'"

# record NAME FORMAT RAW THREADS: one round recorded into $tmp/NAME, ended by SIGINT
record() {
	KKCTL_RECORD_RAW=$3 "$K" -p "$pid" record -o "$tmp/$1" --format "$2" --threads "$4" \
		'module record_raw +T' 2> "$tmp/$1.err" &
	rec=$!
	pids="$pids $rec"
	until_ok "$1: the session" has_session "$pid"
	until_ok "$1: recording (its output made)" test -e "$tmp/$1"
	echo go >&3
	read -r ans <&4 && [ "$ans" = done ] || fail "no 'done' from record_raw: $ans"
	kill -INT "$rec"
	wait_gone "$1: kkctl record" "$rec" 60
	wait "$rec" || fail "$1: kkctl record: status $? $(cat "$tmp/$1.err")"
	rec=
	until_ok "$1: the session's end" no_session "$pid"
}
# tids NAME FORMAT: the thread ids of NAME's events, sorted, once each
tids() {
	case $2 in
	ctf) babeltrace2 "$tmp/$1" 2> /dev/null | sed -n 's/.*vtid = \([0-9]*\).*/\1/p' ;;
	jsonl) grep '"type":"event"' "$tmp/$1" | sed 's/.*"tid":\([0-9]*\).*/\1/' ;;
	perfetto) grep '"ph":"i"' "$tmp/$1" | grep -v '"kernelkit"' | sed 's/.*"tid":\([0-9]*\).*/\1/' ;;
	esac | sort -u | tr '\n' ' '
}
# only NAME FORMAT RAW THREADS WANT: recorded, NAME has WANT's events alone
only() {
	record "$1" "$2" "$3" "$4"
	got=$(tids "$1" "$2")
	[ "$got" = "$5 " ] || fail "$1 (--format $2, --threads '$4'): events of threads '$got', want '$5 ' only"
}

for f in ctf jsonl perfetto; do
	only "$f-id" "$f" 1 "$w1" "$w1"
	only "$f-glob" "$f" 1 'wk-*' "$w2"
done
only ctf-json-id ctf 0 "$w1" "$w1"
only ctf-json-glob ctf 0 'wk-*' "$w2"
only jsonl-many jsonl 1 "1,2,3,4,5,6,7,8,9,10,11,$w1" "$w1"

for bad in 0 99999999999 aaaaaaaaaaaaaaaa ' , ,'; do
	"$K" -p "$pid" record -o "$tmp/bad" --format jsonl --threads "$bad" 'module record_raw +T' \
		> /dev/null 2> "$tmp/bad.err"
	st=$?
	[ $st -eq 2 ] || fail "--threads '$bad': status $st, want 2: $(cat "$tmp/bad.err")"
	[ "$(wc -l < "$tmp/bad.err")" -eq 1 ] || fail "--threads '$bad': not one line: $(cat "$tmp/bad.err")"
	no_session "$pid" || fail "--threads '$bad': a session began"
	[ -e "$tmp/bad" ] && fail "--threads '$bad': the output was made"
done
echo quit >&3
echo "kkctl_record_threads: ok (threads $w1 and $w2, 5 shapes x 2 selections, 4 refusals)"
