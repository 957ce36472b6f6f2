#!/bin/sh
# SPDX-License-Identifier: MIT
# `make install` into a staging directory, then build and run a program
# against the installed headers and library through pkg-config.
set -u
[ "${KK_TEST_LABEL:-default}" = default ] || exit 77
command -v pkg-config >/dev/null || { echo "no pkg-config"; exit 77; }
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

make -s -C "$SRC" B="$B" PREFIX=/opt/kk DESTDIR="$tmp/root" install >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; fail "make install"; }
for f in include/kernelkit/jump_label.h include/kernelkit/control.h lib/libkernelkit.a \
	 lib/libkernelkit.so bin/kkctl lib/pkgconfig/kernelkit.pc share/man/man1/kkctl.1 \
	 share/bash-completion/completions/kkctl \
	 share/gdb/auto-load/opt/kk/lib/libkernelkit.so.1.0.0-gdb.py; do
	[ -e "$tmp/root/opt/kk/$f" ] || fail "missing $f"
done
grep -q '^prefix=/opt/kk$' "$tmp/root/opt/kk/lib/pkgconfig/kernelkit.pc" || fail "pc prefix"

cat > "$tmp/prog.c" <<'PROG'
#include <kernelkit/jump_label.h>
DEFINE_STATIC_KEY_FALSE(k);
int main(void)
{
	int before = static_branch_unlikely(&k);
	if (static_branch_enable(&k))
		return 2;
	return before == 0 && static_branch_unlikely(&k) == 1 ? 0 : 1;
}
PROG
export PKG_CONFIG_PATH="$tmp/root/opt/kk/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
# shellcheck disable=SC2046
cc -o "$tmp/prog" "$tmp/prog.c" $(pkg-config --cflags --libs kernelkit) -pthread ||
	fail "building against the installed library"
KK_CONTROL=0 LD_LIBRARY_PATH="$tmp/root/opt/kk/lib" "$tmp/prog" || fail "installed program exit $?"

# The gdb helper sits where gdb's auto-load looks for the library's script:
# <scripts-directory>/<real path of the library>-gdb.py, i.e. for the library
# in /opt/kk/lib, share/gdb/auto-load/opt/kk/lib/libkernelkit.so.1.0.0-gdb.py (the
# loop above).  gdb must take that name for the library's: staged under
# DESTDIR, the library's path is $tmp/root/opt/kk/lib, so a scripts directory
# that holds the helper under that path stands in for share/gdb/auto-load.
if command -v gdb >/dev/null 2>&1; then
	mkdir -p "$tmp/al$tmp/root/opt/kk/lib"
	cp "$tmp/root/opt/kk/share/gdb/auto-load/opt/kk/lib/libkernelkit.so.1.0.0-gdb.py" \
		"$tmp/al$tmp/root/opt/kk/lib/"
	gdb -nx -batch -iex "set debuginfod enabled off" \
		-iex "set auto-load scripts-directory $tmp/al" -iex "add-auto-load-safe-path $tmp/al" \
		-ex "info auto-load python-scripts" -ex "help kk-status" \
		"$tmp/root/opt/kk/lib/libkernelkit.so" >"$tmp/gdb.log" 2>&1
	grep -q "^Yes .*libkernelkit.so.1.0.0-gdb.py" "$tmp/gdb.log" && grep -q "^kk-status:" "$tmp/gdb.log" ||
		{ cat "$tmp/gdb.log"; fail "gdb does not auto-load the installed helper"; }
	rm -rf "$tmp/al"
fi

make -s -C "$SRC" B="$B" PREFIX=/opt/kk DESTDIR="$tmp/root" uninstall >"$tmp/log" 2>&1 ||
	{ cat "$tmp/log"; fail "make uninstall"; }
left=$(find "$tmp/root" -type f)
[ -z "$left" ] || fail "uninstall left: $left"
echo "install: ok"
