#!/bin/sh
# SPDX-License-Identifier: MIT
# A session's queries reach the objects that come after its begin
# (docs/dynamic_debug.md, "dynamic_debug/session"): a library dlopen'ed
# while a session is open gets the session's flags, and the session's end
# puts them back.  dynamic_debug_target loads libdynamic_debug_mod.so;
# `target/reload` dlcloses and dlopens it again (a new table).
#  1. begin 'module dynamic_debug_mod +T': the library's 3 plain sites;
#  2. reload: the new copy's sites are T too (before: off, and a kkctl
#     record of a process whose library came after the begin got nothing);
#  3. end: every site of the library is back to _, and the end counts the
#     new copy's sites as put back.
#  4. reload after the end: the sites stay off (a closed session adds nothing).
set -u
. "${KK_SRC:?}/test/record-lib.sh"
record_setup kksesslate dynamic_debug_target
LIB=$B/test/lib/libdynamic_debug_mod.so
[ -f "$LIB" ] || { echo "skip: $LIB not built"; exit 77; }
mkfifo "$tmp/out"
env $control_env "$PROG" "$LIB" > "$tmp/out" 2> "$tmp/err" &
pids="$pids $!"
read -r p < "$tmp/out" || fail "dynamic_debug_target did not start: $(cat "$tmp/err")"
until_ok "endpoint of $p" served "$p"
# plain_flags: the flags of the library's plain sites, one word per site
plain_flags() {
	"$K" -p "$p" read dynamic_debug/control |
		awk '/\[dynamic_debug_mod\]ddm_plain / { print $3 }' | sort | tr '\n' ' '
}
[ "$(plain_flags)" = "=_ =_ =_ " ] || fail "before the session: $(plain_flags)"

out=$("$K" -p "$p" write dynamic_debug/session "$(printf 'begin 60000\nfunc ddm_plain +T')" 2>&1)
case $out in "session "*": matched 3 changed 3") ;; *) fail "begin: $out" ;; esac
id=$(printf '%s\n' "$out" | sed -n 's/^session \([0-9a-f]\{16\}\):.*/\1/p')
[ "$(plain_flags)" = "=T =T =T " ] || fail "after the begin: $(plain_flags)"

"$K" -p "$p" write target/reload x > /dev/null 2>&1 || fail "reload failed"
[ "$(plain_flags)" = "=T =T =T " ] ||
	fail "a library loaded during the session did not get its queries: $(plain_flags)"

out=$("$K" -p "$p" write dynamic_debug/session "end $id" 2>&1) || fail "end: $out"
[ "$(plain_flags)" = "=_ =_ =_ " ] || fail "after the end: $(plain_flags) ($out)"

"$K" -p "$p" write target/reload x > /dev/null 2>&1 || fail "reload failed"
[ "$(plain_flags)" = "=_ =_ =_ " ] || fail "a reload after the end: $(plain_flags)"
echo "ok: a library loaded during a session got its queries, and the end put them back"
