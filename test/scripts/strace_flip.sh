#!/bin/sh
# SPDX-License-Identifier: MIT
# strace is a tracer: TracerPid is set.  Issue 22: under a tracer batches are
# written by page swaps, so no thread ever takes a SIGTRAP or the park
# signal (the old code stopped the machine with the park signal for every
# batch, which strace shows).  Real `strace -f` over test/progs/jump_label_flip (512
# sites, 4 reader threads checking every branch): the program exits 0, and
# the trace shows no signal at all.
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/jump_label_flip
command -v strace >/dev/null 2>&1 || { echo "skip: no strace"; exit 77; }
[ "${KK_TEST_LABEL:-default}" = fallback ] && { echo "skip: no sites under KK_NO_JUMP_LABEL"; exit 77; }
[ -x "$PROG" ] || { echo "not built"; exit 77; }
# LeakSanitizer cannot run under ptrace (the ASan build): leaks are checked
# by the runs without a tracer.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d /tmp/kk-strace.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
if ! strace -o /dev/null /bin/true 2>/dev/null; then
	echo "skip: strace cannot trace here (ptrace denied?)"
	exit 77
fi
timeout -k 10 300 strace -f -qq -e trace=none -e signal=all -o "$tmp/trace" "$PROG" 4 100 \
	> "$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
[ "$rc" -eq 0 ] || { echo "FAIL: jump_label_flip under strace -f exited $rc"; exit 1; }
if grep -q "SIGTRAP" "$tmp/trace"; then
	echo "FAIL: a thread took a SIGTRAP under strace (the int3 protocol ran under a tracer):"
	grep -m 5 SIGTRAP "$tmp/trace"
	exit 1
fi
if grep -q -- "--- SIG" "$tmp/trace"; then
	echo "FAIL: a thread got a signal under strace -f (a stop or a trap under a tracer):"
	grep -m 5 -- "--- SIG" "$tmp/trace"
	exit 1
fi
echo "strace_flip: ok"
