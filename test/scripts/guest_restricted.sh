#!/bin/sh
# SPDX-License-Identifier: MIT
# A restricted process keeps working: no descriptors to spare (RLIMIT_NOFILE 3),
# no /proc (a private mount namespace with an empty /proc).  Every facility must
# still do its job, and kernelkit says at most once what it had to give up.
set -u
B=${KK_BUILD:?}
prog=$B/test/progs/guest_restricted
tmp=$(mktemp -d /tmp/kk-restricted.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# (Under ASan the program switches LeakSanitizer off itself: see its source.)

run() {	# name command...
	name=$1; shift
	"$@" >"$tmp/$name.out" 2>"$tmp/$name.err"; rc=$?
	echo "== $name: exit $rc"; cat "$tmp/$name.out"; sed 's/^/   stderr: /' "$tmp/$name.err"
	[ $rc -eq 0 ] && grep -qx ok "$tmp/$name.out" || fail "$name: the program's checks failed"
	dup=$(grep '^kernelkit:' "$tmp/$name.err" | sort | uniq -d)
	[ -z "$dup" ] || fail "$name: said more than once: $dup"
}

run plain "$prog"
run nofile "$prog" nofile
said() {	# name pattern: what was given up is said, once
	# (the fallback build patches no code, so it gives up nothing)
	[ "${KK_TEST_LABEL:-default}" = fallback ] && return
	[ "$(grep -c "^kernelkit: .*$2" "$tmp/$1.err")" -eq 1 ] || fail "$1: does not say once: $2"
}
said nofile "/proc/self/mem"
if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
	run noproc unshare -m sh -c 'mount -t tmpfs none /proc && exec "$0"' "$prog"
	said noproc "/proc/self/mem"
	run noproc_nofile unshare -m sh -c 'mount -t tmpfs none /proc && exec "$0" nofile' "$prog"
else
	echo "no /proc case skipped: needs root and unshare -m"
fi
echo "guest_restricted: ok"
