#!/bin/sh
# SPDX-License-Identifier: MIT
# The Debian packages (issue 13): from a scratch copy of the tree (tracked and
# new files, no build/), `dpkg-buildpackage -b -us -uc` builds libkernelkit1,
# libkernelkit-dev and kernelkit-tools (debian/rules builds only the library,
# the preload library and kkctl); lintian reports no error; each package holds
# its files and the right dependencies; the packages, unpacked with dpkg -x
# into a scratch root (never installed on this system), give a pkg-config
# consumer that needs libkernelkit.so.1 and runs, and a kkctl that runs.
# Skipped (77) without dpkg-buildpackage, debhelper, lintian or pkg-config
# (mk/debian-packages.txt lists them; `make deps` installs them).
set -u
[ "${KK_TEST_LABEL:-default}" = default ] || { echo "skip: runs in the default build only"; exit 77; }
for t in dpkg-buildpackage dpkg-deb dh lintian pkg-config; do
	command -v "$t" >/dev/null 2>&1 ||
		{ echo "skip: no $t (install dpkg-dev, debhelper, lintian, pkgconf: make deps)"; exit 77; }
done
SRC=${KK_SRC:?}
CC=${CC:-cc}
tmp=$(mktemp -d /tmp/kk-deb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# Nothing of a surrounding make (make check) reaches the package build.
unset MAKEFLAGS MFLAGS MAKELEVEL

version=$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version) || fail "debian/changelog"
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
arch=$(dpkg-architecture -qDEB_HOST_ARCH)

# dpkg-buildpackage writes its results next to the tree: a copy in $tmp.
tree=$tmp/kernelkit-$version
mkdir -p "$tree"
if git -C "$SRC" rev-parse --git-dir >/dev/null 2>&1; then
	# Tracked and new files as they are in the work tree (deleted ones left out).
	(cd "$SRC" && git ls-files --cached --others --exclude-standard | grep -v '^build/' |
		while read -r f; do [ ! -f "$f" ] || echo "$f"; done | tar -cf - -T -) |
		tar -xf - -C "$tree" || fail "copying the tree"
else
	(cd "$SRC" && tar -cf - --exclude=./build --exclude=./.git .) | tar -xf - -C "$tree" || fail "copying the tree"
fi
[ -x "$tree/debian/rules" ] || fail "no debian/rules in the copy"

start=$(date +%s)
(cd "$tree" && dpkg-buildpackage -b -us -uc -j2) >"$tmp/build.log" 2>&1 ||
	{ tail -n 60 "$tmp/build.log"; fail "dpkg-buildpackage"; }
echo "dpkg-buildpackage: ok ($(( $(date +%s) - start )) s)"
changes=$tmp/kernelkit_${version}_$arch.changes
[ -f "$changes" ] || fail "no $changes"
grep -q -e 'kk-bench' -e 'bench-mods' -e 'dynamic_debug-mods' -e '-lurcu' -e '-lcriterion' "$tmp/build.log" &&
	fail "the package build built more than the library, the preload library and kkctl"

lintian --fail-on error "$changes" >"$tmp/lintian.log" 2>&1
rc=$?
grep -v '^running with root privileges' "$tmp/lintian.log"
[ "$rc" -eq 0 ] || fail "lintian reports errors (exit $rc)"
echo "lintian: no error ($(grep -c '^W:' "$tmp/lintian.log") warnings)"

deb() { echo "$tmp/${1}_${version}_$arch.deb"; }
for p in libkernelkit1 libkernelkit-dev kernelkit-tools; do
	[ -f "$(deb $p)" ] || fail "no package $p"
	dpkg-deb -c "$(deb $p)" | awk '{ print $6 }' | sed 's|^\./|/|' > "$tmp/$p.files"
done
has() {	# package path...
	p=$1; shift
	for f; do grep -qx "$f" "$tmp/$p.files" || fail "$p does not hold $f"; done
}
hasnt() {
	p=$1; shift
	for f; do ! grep -qx "$f" "$tmp/$p.files" || fail "$p holds $f"; done
}
L=/usr/lib/$ma
has libkernelkit1 "$L/libkernelkit.so.1" "$L/libkernelkit.so.1.1.0" "$L/kernelkit/libkernelkit-odebug.so" \
	"/usr/share/gdb/auto-load$L/libkernelkit.so.1.1.0-gdb.py"
hasnt libkernelkit1 "$L/libkernelkit.so" "$L/libkernelkit.a"
has libkernelkit-dev "$L/libkernelkit.so" "$L/libkernelkit.a" "$L/pkgconfig/kernelkit.pc" \
	"$L/cmake/kernelkit/kernelkitConfig.cmake" "$L/cmake/kernelkit/kernelkitConfigVersion.cmake" \
	/usr/include/kernelkit/jump_label.h /usr/include/kernelkit/kernelkit.h
has kernelkit-tools /usr/bin/kkctl /usr/share/man/man1/kkctl.1.gz /usr/share/bash-completion/completions/kkctl
for p in "$SRC"/man/man3/*.3 "$SRC"/man/man7/*.7 "$SRC"/man/*.3 "$SRC"/man/*.7; do
	[ -e "$p" ] || continue
	n=${p##*.}
	has libkernelkit-dev "/usr/share/man/man$n/${p##*/}.gz"
done
dpkg-deb -I "$(deb libkernelkit1)" shlibs | grep -qx "libkernelkit 1 libkernelkit1 (>= $version)" ||
	fail "libkernelkit1's shlibs: $(dpkg-deb -I "$(deb libkernelkit1)" shlibs)"
dpkg-deb -f "$(deb libkernelkit-dev)" Depends | grep -q "libkernelkit1 (= $version)" ||
	fail "libkernelkit-dev does not depend on libkernelkit1 (= $version)"
dpkg-deb -I "$(deb libkernelkit1)" symbols | grep -q "^ static_key_enable@KERNELKIT_1 " ||
	fail "libkernelkit1 has no symbols file with the KERNELKIT_1 exports"
echo "package contents: ok"

root=$tmp/root
for p in libkernelkit1 libkernelkit-dev kernelkit-tools; do
	dpkg-deb -x "$(deb $p)" "$root" || fail "dpkg -x $p"
done
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
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$L/pkgconfig PKG_CONFIG_PATH= \
	pkg-config --cflags --libs kernelkit) || fail "pkg-config does not find kernelkit in the packages"
case $flags in *"-I$root/usr/include"*"-L$root$L"*|*"-L$root$L"*"-I$root/usr/include"*) ;;
	*) fail "pkg-config flags: $flags" ;; esac
# shellcheck disable=SC2086
"$CC" -o "$tmp/prog" "$tmp/prog.c" $flags -pthread || fail "building against the packages"
readelf -d "$tmp/prog" | grep -q 'NEEDED.*\[libkernelkit\.so\.1\]' || fail "the program does not need libkernelkit.so.1"
KK_CONTROL=0 LD_LIBRARY_PATH=$root$L "$tmp/prog" || fail "the program built against the packages: exit $?"
KK_CONTROL=0 LD_LIBRARY_PATH=$root$L LD_PRELOAD=$root$L/kernelkit/libkernelkit-odebug.so /bin/true ||
	fail "the packaged preload library"
out=$("$root/usr/bin/kkctl" --version) || fail "the packaged kkctl --version"
case $out in *"$version"*) ;; *) fail "kkctl --version says '$out', not $version" ;; esac
echo "consumer through pkg-config, kkctl $out: ok"
echo "debian_package: ok"
