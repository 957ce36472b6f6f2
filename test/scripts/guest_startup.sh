#!/bin/sh
# SPDX-License-Identifier: MIT
# What linking kernelkit costs a process at start-up, in system calls: the
# hello world of kk-bench guest (build/guest/hello-{kk,plain}) is traced with
# and without the library.  Loading the library's file (open, map, protect)
# is any shared library's cost and is left out; what remains must be the two
# calls that cannot wait: getcwd (dynamic debug's source root is the
# directory the program started in) and rt_sigprocmask (the signal mask a
# panic re-exec restores).  No futex (pthread_once), no allocation, no file,
# no thread.  Run in an empty environment, as most processes are (a KK_*
# setting may cost more: it is read at load).
set -u
B=${KK_BUILD:?}
[ "${KK_TEST_LABEL:-}" = "asan+ubsan" ] && { echo "skip: the sanitizer's own start-up"; exit 77; }
command -v strace >/dev/null 2>&1 || { echo "skip: no strace"; exit 77; }
tmp=$(mktemp -d /tmp/kk-startup.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

trace() {	# name program
	env -i strace -qq -o "$tmp/$1.trace" "$2" >/dev/null 2>"$tmp/$1.err" ||
		fail "$1: $(cat "$tmp/$1.err")"
	# one syscall name a line, without the loading of objects
	sed -n 's/^\([a-z_0-9]*\)(.*/\1/p' "$tmp/$1.trace" |
		grep -Ev '^(openat|open|access|read|pread64|newfstatat|fstat|stat|mmap|mprotect|munmap|close)$' |
		sort >"$tmp/$1.calls"
}
trace plain "$B/guest/hello-plain"
trace kk "$B/guest/hello-kk"
# the calls hello-kk makes beyond hello-plain's (a multiset difference)
extra=$(comm -13 "$tmp/plain.calls" "$tmp/kk.calls" | tr '\n' ' ')
echo "system calls beyond a plain hello world: ${extra:-none}"
for c in $extra; do
	case $c in
	getcwd|rt_sigprocmask) ;;
	*) sed 's/^/   /' "$tmp/kk.trace"; fail "$c at start-up" ;;
	esac
done
echo "guest_startup: ok"
