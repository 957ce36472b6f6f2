#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 41 item 4: kkctl's selection reads each process's /proc files once,
# only those a selector needs, and a target is served as soon as it is
# selected.  Counted in kkctl's own system calls (strace), which do not
# depend on the load:
# - a process that serves no endpoint has its stat and namespace links
#   looked at, not its status;
# - a target's /proc/PID/status is read once: after connecting, by the
#   endpoint owner's check, which must be fresh (-n and --tree need no uid;
#   --all and --json read it once more, in the selection); before, 5 times;
# - -n reads no cmdline of a process whose comm has the name;
# - with --jobs 1 (one thread: strace's log is in the order of the calls)
#   the first target's request is sent before the last target is read:
#   the selection feeds the serving, it does not finish first.
# The replies keep their order (pid order) and their "==> PID NAME <==".
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
command -v strace > /dev/null || { echo "SKIP: no strace"; exit 77; }
tmp=$(mktemp -d /tmp/kk-selpipe.XXXXXX)
pids=
fail() {
	echo "FAIL: $*"
	for p in $pids; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	exit 1
}
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
for i in 1 2 3; do
	mkfifo "$tmp/f.$i"
	env $control_env "$B/test/progs/jump_label_prog" > "$tmp/f.$i" &
	pids="$pids $!"
	read -r line < "$tmp/f.$i" || fail "jump_label_prog did not start"
done
sleep 600 &	# serves nothing: the selection only looks at it
idle=$!
pids="$pids $idle"
sorted=$(for p in $pids; do [ "$p" != "$idle" ] && echo "$p"; done | sort -n)
first=$(echo "$sorted" | head -n 1)
last=$(echo "$sorted" | tail -n 1)

# (LeakSanitizer cannot run under ptrace: the other kkctl tests check leaks)
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	strace -f -qq -o "$tmp/trace" -e trace=openat,connect \
	"$KKCTL" --jobs 1 --tree $$ -n jump_label_prog files > "$tmp/out" 2> "$tmp/err" ||
	{ grep -q "^strace: .*ptrace\|PTRACE_TRACEME\|PTRACE_SEIZE" "$tmp/err" &&
		{ echo "SKIP: strace cannot trace here: $(head -n 1 "$tmp/err")"; rm -rf "$tmp"; kill $pids; exit 77; }
	  fail "kkctl under strace: $(cat "$tmp/err")"; }

# the replies, in pid order, each with its line
[ "$(grep '^==> ' "$tmp/out" | cut -d' ' -f2)" = "$sorted" ] ||
	fail "replies not in pid order: $(grep '^==> ' "$tmp/out") (want $sorted)"

# status: none for the process that serves nothing, once for a target
n=$(grep -c "\"/proc/$idle/status\"" "$tmp/trace")
[ "$n" -eq 0 ] || fail "/proc/$idle/status (serves nothing) read $n times"
for p in $sorted; do
	n=$(grep -c "\"/proc/$p/status\"" "$tmp/trace")
	[ "$n" -le 1 ] || fail "/proc/$p/status read $n times (once: the owner check)"
	n=$(grep -c "\"/proc/$p/cmdline\"" "$tmp/trace")
	[ "$n" -eq 0 ] || fail "/proc/$p/cmdline read though its comm matched -n"
done

# the first request before the last target is read
c=$(grep -n "kernelkit/$first\"" "$tmp/trace" | head -n 1 | cut -d: -f1)
r=$(grep -n "\"/proc/$last/comm\"" "$tmp/trace" | head -n 1 | cut -d: -f1)
[ -n "$c" ] && [ -n "$r" ] || fail "no connect to $first or no read of /proc/$last/comm: $(cat "$tmp/trace")"
[ "$c" -lt "$r" ] || fail "process $first was sent its request (line $c) only after process $last was selected (line $r): selection first, serving after"

for p in $pids; do kill "$p" 2>/dev/null; done
rm -rf "$tmp"
echo "PASS"
