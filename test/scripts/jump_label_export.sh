#!/bin/sh
# SPDX-License-Identifier: MIT
# A key the program exported (kk_static_key_export()) is switched from
# outside by `kkctl write static_keys 'NAME on|off'`, with the trust rule of
# every control file (docs/control.md, "Whom the endpoint serves"); a key it
# did not export stays read-only.  jump_label_export_prog runs as a
# throwaway uid U and answers each line on its stdin with the branches its
# sites take ("feature=0 private=0"):
#  - the listing marks feature rw, private_key r-;
#  - U's kkctl writes 'feature on': the program's branch is taken;
#  - a write of private_key is refused in one line, private stays off;
#  - a write with a bad line (or a key not exported) changes no key;
#  - another uid, through control_raw (no client-side check), is refused by
#    the endpoint itself, and the key stays as it was; its kkctl too;
#  - root switches it back, with a write of several lines.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root to run the program as another uid"; exit 77; }
command -v setpriv > /dev/null || { echo "skip: needs setpriv"; exit 77; }
B=${KK_BUILD:?}
K=$B/kkctl
PROG=$B/test/progs/jump_label_export_prog
RAW=$B/test/progs/control_raw
[ -x "$PROG" ] && [ -x "$RAW" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
U=$((3994000 + $$ % 1000)) U2=$((3995000 + $$ % 1000))
tmp=$(mktemp -d /tmp/kk-jl-export.XXXXXX)
chmod 755 "$tmp"
pid=
cleanup() {
	[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }

mkfifo "$tmp/in" "$tmp/out"
chmod 666 "$tmp/in" "$tmp/out"
as "$U" timeout 120 "$PROG" < "$tmp/in" > "$tmp/out" 2> "$tmp/err" &
exec 3> "$tmp/in" 4< "$tmp/out"
read -r pid <&4 || fail "the program did not start: $(cat "$tmp/err")"
# branches: what the program's sites take now
branches() { echo check >&3; IFS= read -r ans <&4 || fail "the program died: $(cat "$tmp/err")"; }
want() { branches; [ "$ans" = "$1" ] || fail "$2: the program says '$ans', want '$1'"; }
# the endpoint starts with the export; wait for it to listen (bounded)
i=0
until grep -q " @kernelkit/$pid\$" /proc/net/unix; do
	i=$((i + 1))
	[ $i -le 500 ] || fail "no @kernelkit/$pid"
	sleep 0.01
done

as "$U" "$K" -p "$pid" read static_keys > "$tmp/list" 2> "$tmp/kerr" || fail "read: $(cat "$tmp/kerr")"
grep -q '^# name enabled count sites module mode$' "$tmp/list" || fail "listing header: $(cat "$tmp/list")"
grep -q '^feature 0 0 .* rw$' "$tmp/list" || fail "feature not listed rw: $(cat "$tmp/list")"
if [ "${KK_TEST_LABEL:-default}" != fallback ]; then
	grep -q '^private_key 0 0 .* r-$' "$tmp/list" || fail "private_key not listed r-: $(cat "$tmp/list")"
fi
want "feature=0 private=0" "at start"

as "$U" "$K" -p "$pid" write static_keys 'feature on' > "$tmp/kout" 2> "$tmp/kerr" ||
	fail "U's write of feature on: $(cat "$tmp/kerr")"
want "feature=1 private=0" "after 'feature on'"

# not exported: refused, one line, nothing changed
as "$U" "$K" -p "$pid" write static_keys 'private_key on' > "$tmp/kout" 2> "$tmp/kerr" &&
	fail "a write of a key not exported succeeded: $(cat "$tmp/kout")"
[ "$(wc -l < "$tmp/kerr")" -eq 1 ] || fail "not one line: $(cat "$tmp/kerr")"
why="private_key.*read-only"
# (the fallback build has no sites: a key the program never touched is unknown)
[ "${KK_TEST_LABEL:-default}" = fallback ] && why="private_key.*read-only|no key 'private_key'"
grep -Eq "$why" "$tmp/kerr" || fail "the refusal does not say why: $(cat "$tmp/kerr")"
want "feature=1 private=0" "after a refused 'private_key on'"

# a bad line changes no key, whichever line it is
for text in "$(printf 'feature off\nfeature maybe')" "$(printf 'feature off\nprivate_key on')" \
	    "$(printf 'feature off\nno_such_key off')"; do
	as "$U" "$K" -p "$pid" write static_keys "$text" > "$tmp/kout" 2> "$tmp/kerr" &&
		fail "a write with a bad line succeeded: $text"
	[ "$(wc -l < "$tmp/kerr")" -eq 1 ] || fail "not one line: $(cat "$tmp/kerr")"
	grep -q "line 2" "$tmp/kerr" || fail "the bad line is not named: $(cat "$tmp/kerr")"
	want "feature=1 private=0" "after the refused write '$text'"
done

# another uid: the endpoint itself refuses it (control_raw checks nothing)
as "$U2" "$RAW" "$pid" "$(printf 'write static_keys\nfeature off')" > "$tmp/raw" 2> "$tmp/kerr" ||
	fail "control_raw: $(cat "$tmp/kerr")"
[ "$(head -n 1 "$tmp/raw")" = -13 ] || fail "uid $U2 was not refused: $(cat "$tmp/raw")"
grep -q "peer is neither uid $U nor root" "$tmp/raw" || fail "not the endpoint's refusal: $(cat "$tmp/raw")"
want "feature=1 private=0" "after uid $U2's refused write"
# and kkctl run by that uid refuses before it sends anything
as "$U2" "$K" -p "$pid" write static_keys 'feature off' > "$tmp/kout" 2> "$tmp/kerr" &&
	fail "uid $U2's kkctl write succeeded"
want "feature=1 private=0" "after uid $U2's kkctl"

# root may, and several lines go together
"$K" -p "$pid" write static_keys "$(printf '# back\nfeature off\n')" > "$tmp/kout" 2> "$tmp/kerr" ||
	fail "root's write: $(cat "$tmp/kerr")"
want "feature=0 private=0" "after root's 'feature off'"
exec 3>&-
wait
echo "jump_label_export: ok"
