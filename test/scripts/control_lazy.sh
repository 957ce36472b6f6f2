#!/bin/sh
# SPDX-License-Identifier: MIT
# The control endpoint starts only when there is something to control: not in
# a hello world that merely links kernelkit (the library's own control files
# do not count), but for a control file of the program's own, an object with
# sites, kk_control_start(), or KK_CONTROL=1.  KK_CONTROL=0 keeps it off
# unless the program asks by name; an unknown value is refused with a warning.
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/control_hello
LIB=$B/test/lib/libdynamic_debug_mod.so
[ -x "$PROG" ] && [ -f "$LIB" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-lazy.XXXXXX)
fail() { echo "FAIL: $*"; rm -rf "$tmp"; exit 1; }

# expect WANT [ENV=VAL...] -- ARGS...
expect() {
	want=$1; shift
	envs=
	while [ "$1" != -- ]; do envs="$envs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	got=$(env $envs "$PROG" "$@" 2> "$tmp/err") || fail "control_hello $*: exit $?: $(cat "$tmp/err")"
	[ "$got" = "$want" ] || fail "${envs:+$envs }control_hello $*: $got, want $want"
}

expect "tasks=1 endpoint=0" --
[ -s "$tmp/err" ] && fail "a hello world wrote to stderr: $(cat "$tmp/err")"
expect "tasks=2 endpoint=1" KK_CONTROL=1 --
expect "tasks=2 endpoint=1" KK_CONTROL=yes --
expect "tasks=1 endpoint=0" KK_CONTROL=0 --
expect "tasks=2 endpoint=1" -- file
expect "tasks=1 endpoint=0" KK_CONTROL=0 -- file
expect "tasks=1 endpoint=0" KK_CONTROL=off -- file
expect "tasks=2 endpoint=1" -- start
expect "tasks=2 endpoint=1" KK_CONTROL=0 -- start
expect "tasks=2 endpoint=1" -- dlopen "$LIB"
expect "tasks=1 endpoint=0" KK_CONTROL=0 -- dlopen "$LIB"
# an unknown value: one warning, and the default (lazy) rule
expect "tasks=1 endpoint=0" KK_CONTROL=maybe --
grep -q "ignoring KK_CONTROL=maybe" "$tmp/err" || fail "no warning for KK_CONTROL=maybe: $(cat "$tmp/err")"
[ "$(wc -l < "$tmp/err")" -eq 1 ] || fail "more than one line for KK_CONTROL=maybe: $(cat "$tmp/err")"
expect "tasks=2 endpoint=1" KK_CONTROL=maybe -- file

rm -rf "$tmp"
echo "control_lazy: ok"
