#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record puts a process's first records on disk after ONE read of it,
# and reads it from the thread that began its session (issue 39: from the
# command to the first event on disk).  Asserted by the order of kkctl's
# system calls (strace -f), not by time.
#  - The first read's records are written at once: a read that brought
#    events has sent every record older than its last event, and a record
#    stamped before the read began (less the merge's 2 ms slack) cannot come
#    later, so records older than both bounds are written after that read.
#    (kkctl held every record within 2 ms of the read's last event: a burst
#    already in the ring waited for a second read, and that one, finding
#    nothing, for the endpoint's 250 ms wait for a record.)
#  - No thread is made between the `begin` and the first read of a
#    process: the thread that began the session reads it (kkctl joined a
#    begin thread, opened the file, then made the reader thread: two
#    wake-ups on a loaded machine, milliseconds each).
# For both paths: --format jsonl (the merge) and --format ctf (raw frames).
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kkrfirst
command -v strace > /dev/null || { echo "strace not installed"; exit 77; }
strace -f -o /dev/null true 2> /dev/null || { echo "strace cannot trace here"; exit 77; }
N=50

# A burst of N records already in the ring: the site is on (+T) from the
# start, and the thread has written them before kkctl runs.
flood_start KK_DYNDBG='func flood_tick +T' -- 1 $N
p=$flood

# first_write FORMAT OUT: one kkctl record --count 1 under strace; checks
# the order of its requests and writes.
first_write() {
	flood_go
	# the merge's slack (2 ms) is time the rule is about: a record
	# stamped less than 2 ms before a read may still come after it
	sleep 0.01
	# (LeakSanitizer cannot run under ptrace: the asan+ubsan pass)
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout -s KILL 60 strace -f -qq -s 64 -e trace=openat,sendto,write,writev,clone,clone3 \
		-o "$tmp/st.$1" "$K" -p "$p" record --format "$1" --count 1 -o "$2" \
		'func flood_tick +T' 2> "$tmp/r.err" || { cat "$tmp/r.err"; fail "$1: kkctl record failed"; }
	cat "$tmp/r.err"
	# reads of the process before the first write into the output: its
	# file (jsonl) or a stream file of its directory (ctf)
	awk -v out="$2" '
		/^[0-9]+ +sendto\(.*"read dynamic_debug\/trace_pipe/ { reads++ }
		/^[0-9]+ +openat\(/ && match($0, /= [0-9]+$/) {
			f = substr($0, RSTART + 2)
			if (index($0, "\"" out "\"") || $0 ~ /"pid[0-9]+-tid[0-9]+/)
				fd[f] = 1
		}
		/^[0-9]+ +(write|writev)\([0-9]+,/ {
			n = $2; sub(/^(write|writev)\(/, "", n); sub(/,.*/, "", n)
			if ((n in fd) && !done) { print reads + 0; done = 1 }
		}
		END { if (!done) print "none" }' "$tmp/st.$1" > "$tmp/reads.$1"
	r=$(cat "$tmp/reads.$1")
	echo "$1: reads of the process before the first record on disk: $r"
	[ "$r" = 1 ] || fail "$1: the first record went to disk after $r reads (want 1)"
	# between the begin's request and the first read's, in the thread that
	# sent the begin: no thread made, the same thread reads
	awk '
		/sendto\(.*"begin [0-9]/ { tid = $1; began = 1; next }
		began && /^[0-9]+ +clone3?\(/ { made++ }
		began && /sendto\(.*"read dynamic_debug\/trace_pipe/ {
			print (($1 == tid) ? "same" : "other") " " made + 0; exit }' \
		"$tmp/st.$1" > "$tmp/thr.$1"
	t=$(cat "$tmp/thr.$1")
	echo "$1: first read by the begin's thread, threads made between: $t"
	[ "$t" = "same 0" ] || fail "$1: begin and the first read: '$t' (want 'same 0')"
}

first_write jsonl "$tmp/r.jsonl"
grep -q '"type":"event"' "$tmp/r.jsonl" || fail "jsonl: no event in the file"
first_write ctf "$tmp/r.ctf"
echo "ok"
exit 0
