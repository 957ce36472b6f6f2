#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record --format jsonl, text and perfetto read a local process's
# dynamic_debug/trace_pipe_raw and decode it into the records the JSON path
# parses (tools/kkctl/record_rawdec.c; docs/tracing.md, "The raw stream").
# The same workload (test/progs/record_raw: two threads, every packed shape:
# ints of every width, %hhd, %c, %p, doubles, a long double, a NULL string,
# %m, %%, a '*' width and precision, a record cut short by %ls) is recorded
# in each format on both paths, json (KKCTL_RECORD_RAW=0) and raw (default),
# and the files must be the same once times are removed and the lines
# sorted (the two threads' order across each other is the run's):
#   - 32 events each, 32 in kkctl's summary;
#   - the one difference the raw stream makes: a '*' width is not sent, so
#     on the raw path "width=%*d" is not padded (the json path's is: which
#     also shows that the raw path was taken); it is removed before the
#     comparison.
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrdec record_raw
fail() {
	echo "FAIL: $*"
	exit 1
}

mkfifo "$tmp/in" "$tmp/out"
env $control_env "$PROG" 2 4 < "$tmp/in" > "$tmp/out" 2> "$tmp/prog.err" &
p=$!
pids="$pids $p"
exec 3> "$tmp/in" 4< "$tmp/out"
IFS= read -r ans <&4 && [ "$ans" = ready ] || fail "record_raw did not start: $ans"
until_ok "record_raw's endpoint" served "$p"

# record FORMAT RAW: one round into $tmp/FORMAT.RAW, ended by SIGINT once it is written
record() {
	KKCTL_RECORD_RAW=$2 "$K" -p "$p" record --format "$1" -o "$tmp/$1.$2" 'module record_raw +T' \
		2> "$tmp/$1.$2.err" &
	rec=$!
	pids="$pids $rec"
	until_ok "$1.$2: the session" has_session "$p"
	until_ok "$1.$2: recording (its output made)" test -e "$tmp/$1.$2"
	echo go >&3
	IFS= read -r ans <&4 && [ "$ans" = done ] || fail "no 'done' from record_raw: $ans"
	kill -INT "$rec"
	until_ok "$1.$2: kkctl record's end" gone "$rec"
	wait "$rec" || fail "$1.$2: kkctl record: status $? $(cat "$tmp/$1.$2.err")"
	grep -q "^kkctl: 32 records from 1 process to .*; lost 0;" "$tmp/$1.$2.err" ||
		fail "$1.$2: kkctl said: $(cat "$tmp/$1.$2.err")"
	until_ok "$1.$2: the session's end" no_session "$p"
}
# plain FILE: without times (jsonl "ts" and "mono", perfetto "ts", text's
# [seconds]), the star's padding and perfetto's commas between events (the
# last event has none: which one it is is the run's), sorted
plain() {
	sed -e 's/"ts":[0-9.]*,//; s/,"ts":[0-9.]*}/}/; s/"mono":[0-9]*,//; s/}},$/}}/' \
	    -e 's/^\([^[]*\)\[ *[0-9]*\.[0-9]*\] /\1/' -e 's/width= *\([0-9]\)/width=\1/' "$1" | sort
}

for f in jsonl text perfetto; do
	record "$f" 0
	record "$f" 1
	n=$(grep -c 'strings t=' "$tmp/$f.1")
	[ "$n" -eq 8 ] || fail "$f: want 8 strings records, got $n: $(head -3 "$tmp/$f.1")"
	grep -q 'width=     [0-3] ' "$tmp/$f.0" || fail "$f, json: no padded width: $(grep -m1 'strings t=' "$tmp/$f.0")"
	grep -q 'width=     [0-3] ' "$tmp/$f.1" &&
		fail "$f, raw: the width is padded (the json path was taken?): $(grep -m1 'strings t=' "$tmp/$f.1")"
	plain "$tmp/$f.0" > "$tmp/$f.0.n"
	plain "$tmp/$f.1" > "$tmp/$f.1.n"
	cmp -s "$tmp/$f.0.n" "$tmp/$f.1.n" ||
		fail "$f: json and raw differ: $(diff "$tmp/$f.0.n" "$tmp/$f.1.n" | head -10)"
done
echo quit >&3
[ -s "$tmp/prog.err" ] && fail "record_raw said: $(cat "$tmp/prog.err")"
echo "kkctl_record_rawdec: ok"
