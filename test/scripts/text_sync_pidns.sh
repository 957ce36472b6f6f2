#!/bin/sh
# SPDX-License-Identifier: MIT
# A pid namespace whose /proc was not mounted again (`unshare -pf` without
# --mount-proc; a runtime that bind-mounts the host's /proc): /proc counts
# the process's threads by the outer numbers, gettid() and tgkill() by the
# inner ones.  The library listed /proc/self/task and signalled what it
# found: a signal round reached no thread ("round 0 did not reach thread
# 6"), stop_machine froze none, and a panic stopped none (every case below
# failed on the old library).  Now the numbers are translated
# (src/common/tasks.c).  Run as root, and as root of a user namespace
# (`unshare -U -r`, as a rootless container).
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
command -v unshare >/dev/null || { echo "skip: needs unshare"; exit 77; }
B=${KK_BUILD:?}
fail=0
# LeakSanitizer cannot work in this shape: at exit it lists
# /proc/<its inner pid>/task, which here names an outer process or none
# ("Can't open /proc/9/task for reading", a fatal error, exit 1: CI stop 33).
# The same programs run under LSan outside the namespace.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

# The shape, checked: pid 1 inside, /proc/self names another number.
for ns in "unshare -pf" "unshare -U -r -pf"; do
	$ns true 2>/dev/null || { echo "skip: $ns: cannot make the namespaces"; exit 77; }
	got=$($ns sh -c 'echo "$$ $(readlink /proc/self)"' 2>&1)
	case $got in
	"1 1" | "1 ") echo "FAIL: $ns: /proc counts in the new namespace ($got)"; exit 1 ;;
	"1 "*) ;;
	*) echo "FAIL: $ns: not pid 1 inside ($got)"; exit 1 ;;
	esac
done

run() {
	what=$1
	shift
	out=$(timeout 300 "$@" 2>&1)
	rc=$?
	# A Criterion filter that matches no case runs nothing, and exits 0.
	if [ $rc -eq 0 ] && echo "$out" | grep -q 'Synthesis: Tested: 0 '; then
		echo "FAIL: $what: no test case ran (does the filter name one?)"
		fail=1
	elif [ $rc -eq 0 ]; then
		echo "ok: $what"
	else
		echo "FAIL: $what (rc $rc)"
		echo "$out" | grep -v '^\[RUN\|^\[PASS' | tail -15
		fail=1
	fi
}

for ns in "unshare -pf" "unshare -U -r -pf"; do
	for t in signal_round_reaches_every_thread stop_machine_freezes_every_other_thread \
		lister_works_out_of_descriptors; do
		run "$ns: text_sync $t" $ns "$B/test/unit/text_sync" --filter "text_sync/$t"
	done
	# (panic_threads' other cases read /proc by a child's pid themselves)
	run "$ns: panic_threads out_of_descriptors_without_preparation_still_stops_threads" \
		$ns "$B/test/unit/panic_threads" \
		--filter 'panic_threads/out_of_descriptors_without_preparation_still_stops_threads'
	run "$ns: threads_stop" $ns "$B/test/unit/threads_stop"
	# The program as the namespace's init: /proc/1 is the outer init.
	for m in stop seccomp; do
		run "$ns: threads_prog $m as pid 1" $ns env KK_CONTROL=0 "$B/test/progs/threads_prog" $m
	done
done
exit $fail
