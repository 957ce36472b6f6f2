#!/bin/sh
# SPDX-License-Identifier: MIT
# Objects are rebuilt when the flags change (issue 13: "after make demo, the
# gcc -Werror pass of make check rebuilt no library object").  In a scratch
# build directory, one library object and kkctl:
#  - built once, the same flags leave them up to date (make -q) and rewrite
#    neither them nor the flags stamp;
#  - other EXTRA_CFLAGS, CFLAGS, CPPFLAGS, LDFLAGS, SAN or CC make them out of
#    date, and `make -n`/`make -q` with other flags change nothing;
#  - a build with other EXTRA_CFLAGS recompiles both with the new flags.
set -u
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-flags.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Nothing of a surrounding make (make check) reaches the makes below.
unset MAKEFLAGS MFLAGS MAKELEVEL
b=$tmp/b
obj=$b/obj/src/control_path.o
kkmake() { make -C "$SRC" --no-print-directory B="$b" "$@"; }

kkmake "$obj" "$b/kkctl" >"$tmp/1.log" 2>&1 || { cat "$tmp/1.log"; fail "first build"; }
[ -f "$obj" ] && [ -x "$b/kkctl" ] || fail "nothing built"
kkmake -q "$obj" "$b/kkctl" || fail "the same flags: not up to date"
kkmake -q EXTRA_CFLAGS=-DKK_FLAGS_PROBE "$obj" && fail "other EXTRA_CFLAGS: the object is up to date"
cp "$b/.flags" "$tmp/flags.1" || fail "no flags stamp in $b"
touch -d '2000-01-01' "$b/.flags"
kkmake "$obj" "$b/kkctl" >"$tmp/2.log" 2>&1 || { cat "$tmp/2.log"; fail "second build"; }
grep -q -e '-c -o .*control_path.o' -e '-o .*/kkctl ' "$tmp/2.log" && { cat "$tmp/2.log"; fail "the same flags rebuilt"; }
[ -z "$(find "$b/.flags" -newermt '2000-01-02')" ] || fail "the same flags rewrote the stamp"
kkmake -q "$obj" "$b/kkctl" || fail "not up to date after a build with the same flags"
echo "same flags, nothing rebuilt: ok"

for v in EXTRA_CFLAGS=-DKK_FLAGS_PROBE CFLAGS=-O1 CPPFLAGS=-DKK_FLAGS_PROBE LDFLAGS=-Wl,-O1 \
	 SAN=-fsanitize=undefined CC=kk-no-such-cc; do
	kkmake -q "$v" "$obj" && fail "$v: the object is up to date"
	kkmake -q "$v" "$b/kkctl" && fail "$v: kkctl is up to date"
	kkmake -n "$v" "$obj" >/dev/null 2>&1
	cmp -s "$b/.flags" "$tmp/flags.1" || fail "make -q/-n $v rewrote the stamp"
done
echo "other flags, out of date (make -q), make -n writes nothing: ok"

kkmake EXTRA_CFLAGS=-DKK_FLAGS_PROBE "$obj" "$b/kkctl" >"$tmp/3.log" 2>&1 || { cat "$tmp/3.log"; fail "build with other flags"; }
grep -q -e '-DKK_FLAGS_PROBE.*-c -o .*control_path.o' "$tmp/3.log" || { cat "$tmp/3.log"; fail "object not rebuilt"; }
grep -q -e '-DKK_FLAGS_PROBE.*-o .*/kkctl ' "$tmp/3.log" || { cat "$tmp/3.log"; fail "kkctl not rebuilt"; }
kkmake -q EXTRA_CFLAGS=-DKK_FLAGS_PROBE "$obj" "$b/kkctl" || fail "not up to date after the rebuild"
kkmake -q "$obj" && fail "the first flags again: up to date"
echo "make_flags_rebuild: ok"
