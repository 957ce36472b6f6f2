#!/bin/sh
# SPDX-License-Identifier: MIT
# `make install` and `make uninstall` into a staging directory (issue 13).
#  1. install builds only the library, the preload library and kkctl: a dry
#     run names no benchmark, generated module or test (nothing that needs
#     liburcu, libck or criterion), and the real one, into a build directory
#     of its own, leaves nothing else there.
#  2. Twice, with PREFIX=/usr and LIBDIR /usr/lib, then a Debian-style
#     /usr/lib/<multiarch>: the versioned library with its soname links, the
#     preload library (no rpath into the build tree), headers, kkctl, the
#     pkg-config file with that libdir, every man page of man/, the bash
#     completion, the gdb helper under the library's real name, the docs,
#     whose links (scripts/doc-links.py) all name files installed beside them.
#  3. A program built through pkg-config against the staged tree
#     (PKG_CONFIG_SYSROOT_DIR) needs libkernelkit.so.1 and runs; the staged
#     kkctl and preload library run; gdb auto-loads the staged helper.
#  4. uninstall leaves no file and no link, and removes kernelkit's own
#     directories.
set -u
[ "${KK_TEST_LABEL:-default}" = default ] || { echo "skip: runs in the default build only"; exit 77; }
command -v pkg-config >/dev/null || { echo "skip: no pkg-config"; exit 77; }
command -v python3 >/dev/null || { echo "skip: no python3 (checks the installed docs' links)"; exit 77; }
SRC=${KK_SRC:?}
CC=${CC:-cc}
tmp=$(mktemp -d /tmp/kk-install.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Nothing of a surrounding make (make check) reaches the makes below.
unset MAKEFLAGS MFLAGS MAKELEVEL
# Its own build directory: the suite's may hold other flags (a flags change
# would rebuild the suite's library under the tests still to run).
b=$tmp/b
kkmake() { make -s -j2 -C "$SRC" B="$b" "$@"; }

# ---- 1. what install builds
kkmake -n install DESTDIR="$tmp/dry" PREFIX=/usr >"$tmp/dry.log" 2>&1 || { cat "$tmp/dry.log"; fail "make -n install"; }
if grep -E 'kk-bench|bench-mods|dynamic_debug-mods|/guest/|/test/|-lurcu|-lck|-lcriterion' "$tmp/dry.log"; then
	fail "make install builds more than the library, the preload library and kkctl"
fi
[ ! -e "$tmp/dry" ] || fail "make -n install wrote into DESTDIR"
echo "install builds the library, preload library and kkctl only: ok"

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

# ---- 2-4, for one LIBDIR
check_install() {	# libdir
	libdir=$1 root=$tmp/root
	args="DESTDIR=$root PREFIX=/usr LIBDIR=$libdir"
	# Someone else's files in the shared directories: uninstall leaves them.
	mkdir -p "$root$libdir" "$root/usr/share/man/man3"
	echo other > "$root$libdir/libother.so.0"
	echo other > "$root/usr/share/man/man3/other.3"
	# shellcheck disable=SC2086
	kkmake install $args >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make install $args"; }
	[ -z "$(ls "$b" | grep -v -x -e obj -e inst -e kkctl -e 'libkernelkit.*')" ] ||
		fail "install built more than it installs: $(ls "$b")"
	kkmake -q install-build || fail "install-build is not up to date after install"

	for f in include/kernelkit/jump_label.h include/kernelkit/kernelkit.h bin/kkctl \
		 share/bash-completion/completions/kkctl \
		 share/doc/kernelkit/README.md; do
		[ -f "$root/usr/$f" ] || fail "missing /usr/$f"
	done
	for f in libkernelkit.a libkernelkit.so.1.1.0 pkgconfig/kernelkit.pc kernelkit/libkernelkit-odebug.so; do
		[ -f "$root$libdir/$f" ] || fail "missing $libdir/$f"
	done

	[ "$(readlink "$root$libdir/libkernelkit.so.1")" = libkernelkit.so.1.1.0 ] ||
		fail "libkernelkit.so.1 does not link to libkernelkit.so.1.1.0"
	[ "$(readlink "$root$libdir/libkernelkit.so")" = libkernelkit.so.1 ] ||
		fail "libkernelkit.so does not link to libkernelkit.so.1"
	readelf -d "$root$libdir/libkernelkit.so.1.1.0" | grep -q 'SONAME.*\[libkernelkit\.so\.1\]' ||
		fail "soname is not libkernelkit.so.1"
	for p in "$SRC"/man/*.[1-8] "$SRC"/man/man*/*.[1-8]; do
		[ -e "$p" ] || continue
		n=${p##*.}
		[ -f "$root/usr/share/man/man$n/${p##*/}" ] || fail "man page ${p##*/} not installed in man$n"
	done
	[ -f "$root/usr/share/man/man1/kkctl.1" ] || fail "kkctl(1) not installed"
	# The installed docs' links name files installed beside them.
	python3 "$SRC/scripts/doc-links.py" "$root/usr/share/doc/kernelkit" >"$tmp/links" ||
		{ cat "$tmp/links"; fail "the installed docs have broken links"; }
	gdbpy=$root/usr/share/gdb/auto-load$libdir/libkernelkit.so.1.1.0-gdb.py
	[ -f "$gdbpy" ] || fail "gdb helper not at $gdbpy"
	pc=$root$libdir/pkgconfig/kernelkit.pc
	grep -q '^prefix=/usr$' "$pc" && grep -q "^libdir=\${prefix}${libdir#/usr}\$" "$pc" &&
		grep -q '^includedir=${prefix}/include$' "$pc" || { cat "$pc"; fail "pc file dirs"; }
	odb=$root$libdir/kernelkit/libkernelkit-odebug.so
	! readelf -d "$odb" | grep -q 'RPATH\|RUNPATH' || fail "the installed preload library has an rpath"
	readelf -d "$odb" | grep -q 'NEEDED.*\[libkernelkit\.so\.1\]' || fail "the preload library does not need libkernelkit.so.1"

	# shellcheck disable=SC2046
	PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$libdir/pkgconfig PKG_CONFIG_PATH= \
		sh -c '"$0" -o "$1/prog" "$1/prog.c" $(pkg-config --cflags --libs kernelkit) -pthread' "$CC" "$tmp" ||
		fail "building against the installed library through pkg-config"
	readelf -d "$tmp/prog" | grep -q 'NEEDED.*\[libkernelkit\.so\.1\]' || fail "the program does not need libkernelkit.so.1"
	KK_CONTROL=0 LD_LIBRARY_PATH="$root$libdir" "$tmp/prog" || fail "installed program exit $?"
	KK_CONTROL=0 LD_LIBRARY_PATH="$root$libdir" LD_PRELOAD="$odb" /bin/true || fail "the installed preload library"
	"$root/usr/bin/kkctl" --version >/dev/null || fail "installed kkctl --version"
	echo "make install LIBDIR=$libdir: ok"

	# gdb finds the helper where auto-load looks: <scripts-directory>/<real
	# path of the library>-gdb.py.  Staged under DESTDIR, the library's path
	# is $root$libdir, so a scripts directory holding the helper under that
	# path stands in for /usr/share/gdb/auto-load.
	if command -v gdb >/dev/null 2>&1; then
		mkdir -p "$tmp/al$root$libdir"
		cp "$gdbpy" "$tmp/al$root$libdir/"
		gdb -nx -batch -iex "set debuginfod enabled off" \
			-iex "set auto-load scripts-directory $tmp/al" -iex "add-auto-load-safe-path $tmp/al" \
			-ex "info auto-load python-scripts" -ex "help kk-status" \
			"$root$libdir/libkernelkit.so.1" >"$tmp/gdb.log" 2>&1
		grep -q "^Yes .*libkernelkit.so.1.1.0-gdb.py" "$tmp/gdb.log" && grep -q "^kk-status:" "$tmp/gdb.log" ||
			{ cat "$tmp/gdb.log"; fail "gdb does not auto-load the installed helper"; }
		rm -rf "$tmp/al"
	else
		echo "SKIP: gdb's auto-load of the installed helper (LIBDIR=$libdir) not checked: no gdb"
	fi

	# shellcheck disable=SC2086
	kkmake uninstall $args >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make uninstall"; }
	[ -f "$root$libdir/libother.so.0" ] && [ -f "$root/usr/share/man/man3/other.3" ] ||
		fail "uninstall removed files that install did not put there"
	rm "$root$libdir/libother.so.0" "$root/usr/share/man/man3/other.3"
	left=$(find "$root" -type f -o -type l)
	[ -z "$left" ] || fail "uninstall left: $left"
	for d in include/kernelkit share/doc/kernelkit; do
		[ ! -e "$root/usr/$d" ] || fail "uninstall left the directory /usr/$d"
	done
	[ ! -e "$root$libdir/kernelkit" ] || fail "uninstall left $libdir/kernelkit"
	[ -d "$root$libdir" ] || fail "uninstall removed the shared $libdir"
	echo "make uninstall LIBDIR=$libdir: ok"
	rm -rf "$root"
}

check_install /usr/lib
check_install "/usr/lib/$("$CC" -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)"

make -s -C "$SRC" help >"$tmp/help" || fail "make help"
for w in install uninstall install-build check PREFIX LIBDIR INCLUDEDIR MANDIR DESTDIR EXTRA_CFLAGS; do
	grep -qw -- "$w" "$tmp/help" || fail "make help does not mention $w"
done
echo "install_uninstall: ok"
