#!/bin/sh
# SPDX-License-Identifier: MIT
# A consumer's build systems against the installed tree (issue 40, item 1),
# staged with DESTDIR in a Debian-style /usr/lib/<multiarch>, never the
# build directory:
#  1. CMake: find_package(kernelkit 0.1 CONFIG REQUIRED) gives
#     kernelkit::kernelkit (the program needs libkernelkit.so.1) and
#     kernelkit::kernelkit_static (it needs no libkernelkit), for a C program
#     and a C++ one (a template switching a key, a member function printing);
#     both run.  find_package(kernelkit 1.0) is refused by the version file.
#  2. Meson: dependency('kernelkit') and dependency('kernelkit', static: true)
#     through pkg-config, both run.
#  3. pkg-config --static links and runs (the shared link is checked by
#     install_uninstall.sh).
set -u
[ "${KK_TEST_LABEL:-default}" = default ] || { echo "skip: runs in the default build only"; exit 77; }
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-consumers.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
unset MAKEFLAGS MFLAGS MAKELEVEL
multi=$(${CC:-cc} -print-multiarch 2>/dev/null)
libdir=/usr/lib${multi:+/$multi}
root=$tmp/root
make -s -j2 -C "$SRC" B="$tmp/b" install DESTDIR="$root" PREFIX=/usr LIBDIR="$libdir" \
	>"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "make install"; }
rm -rf "$tmp/b"		# nothing of the build directory is left to find
export KK_CONTROL=0 LD_LIBRARY_PATH="$root$libdir"

mkdir "$tmp/src"
cat > "$tmp/src/prog.c" <<'EOF'
#include <kernelkit/jump_label.h>
#include <kernelkit/dynamic_debug.h>
DEFINE_STATIC_KEY_FALSE(k);
int main(void)
{
	int before = static_branch_unlikely(&k);

	pr_debug("consumer %d\n", before);
	if (static_branch_enable(&k))
		return 2;
	return before == 0 && static_branch_unlikely(&k) == 1 ? 0 : 1;
}
EOF
cat > "$tmp/src/prog.cc" <<'EOF'
#include <kernelkit/jump_label.h>
#include <kernelkit/dynamic_debug.h>
#include <string>
DEFINE_STATIC_KEY_FALSE(k);
template <typename T> struct Box {
	T v;
	void show() const { pr_debug("box %zu\n", sizeof(v)); }
};
template <typename T> static bool flip(T &b)
{
	b.show();
	return static_branch_enable(&k) == 0 && static_branch_unlikely(&k);
}
int main()
{
	Box<int> a{1};
	Box<std::string> s{"x"};
	auto f = [&] { return flip(a) && flip(s); };
	return f() ? 0 : 1;
}
EOF
runs() {	# what prog: runs and needs (or not) libkernelkit.so.1
	"$2" || fail "$1: exit $?"
	if [ "${3:-shared}" = static ]; then
		! readelf -d "$2" | grep -q 'NEEDED.*libkernelkit' || fail "$1 needs libkernelkit.so"
	else
		readelf -d "$2" | grep -q 'NEEDED.*\[libkernelkit\.so\.1\]' || fail "$1 does not need libkernelkit.so.1"
	fi
}

# ---- 1. CMake
if command -v cmake >/dev/null; then
	mkdir "$tmp/cm"
	cat > "$tmp/cm/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.13)
project(consumer C CXX)
find_package(kernelkit 0.1 CONFIG REQUIRED)
add_executable(c_shared $tmp/src/prog.c)
target_link_libraries(c_shared PRIVATE kernelkit::kernelkit)
add_executable(cc_shared $tmp/src/prog.cc)
target_link_libraries(cc_shared PRIVATE kernelkit::kernelkit)
add_executable(c_static $tmp/src/prog.c)
target_link_libraries(c_static PRIVATE kernelkit::kernelkit_static)
add_executable(cc_static $tmp/src/prog.cc)
target_link_libraries(cc_static PRIVATE kernelkit::kernelkit_static)
EOF
	cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$root/usr" \
		-DCMAKE_C_FLAGS="-Wall -Wextra -Werror -pedantic" \
		-DCMAKE_CXX_FLAGS="-Wall -Wextra -Werror -pedantic" >"$tmp/log" 2>&1 ||
		{ cat "$tmp/log"; fail "cmake: find_package(kernelkit CONFIG)"; }
	cmake --build "$tmp/cm/b" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "cmake --build"; }
	for p in c_shared cc_shared; do runs "CMake $p" "$tmp/cm/b/$p"; done
	for p in c_static cc_static; do runs "CMake $p" "$tmp/cm/b/$p" static; done
	mkdir "$tmp/cm2"
	printf 'cmake_minimum_required(VERSION 3.13)\nproject(v C)\nfind_package(kernelkit 1.0 CONFIG REQUIRED)\n' \
		> "$tmp/cm2/CMakeLists.txt"
	if cmake -S "$tmp/cm2" -B "$tmp/cm2/b" -DCMAKE_PREFIX_PATH="$root/usr" >"$tmp/log" 2>&1; then
		fail "find_package(kernelkit 1.0) took version 0.x"
	fi
	grep -q 'version: 0.1.0' "$tmp/log" || { cat "$tmp/log"; fail "no version refusal"; }
	echo "cmake: kernelkit::kernelkit and kernelkit::kernelkit_static, C and C++: ok"
else
	echo "SKIP: CMake consumer not checked: no cmake"
	skipped=1
fi

# ---- 2. Meson and 3. pkg-config --static
export PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$root$libdir/pkgconfig PKG_CONFIG_PATH=
if command -v meson >/dev/null && command -v ninja >/dev/null; then
	mkdir "$tmp/me"
	cp "$tmp/src/prog.c" "$tmp/src/prog.cc" "$tmp/me/"
	cat > "$tmp/me/meson.build" <<'EOF'
project('consumer', 'c', 'cpp', default_options: ['warning_level=3', 'werror=true'])
kk = dependency('kernelkit')
kks = dependency('kernelkit', static: true)
executable('c_shared', 'prog.c', dependencies: kk)
executable('cc_shared', 'prog.cc', dependencies: kk)
executable('c_static', 'prog.c', dependencies: kks)
EOF
	meson setup "$tmp/me/b" "$tmp/me" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "meson setup: dependency('kernelkit')"; }
	ninja -C "$tmp/me/b" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "ninja"; }
	for p in c_shared cc_shared; do runs "Meson $p" "$tmp/me/b/$p"; done
	runs "Meson c_static" "$tmp/me/b/c_static" static
	echo "meson: dependency('kernelkit'), also static: ok"
else
	echo "SKIP: Meson consumer not checked: no meson or ninja"
	skipped=1
fi
# shellcheck disable=SC2046
${CC:-cc} -o "$tmp/pc_static" "$tmp/src/prog.c" $(pkg-config --static --cflags kernelkit) \
	-Wl,-Bstatic $(pkg-config --static --libs-only-l kernelkit | sed 's/-lpthread//; s/-ldl//') \
	$(pkg-config --static --libs-only-L kernelkit) -Wl,-Bdynamic -pthread -ldl ||
	fail "pkg-config --static"
runs "pkg-config --static" "$tmp/pc_static" static
echo "pkg-config --static: ok"
[ -z "${skipped:-}" ] || exit 77
echo "consumers_installed: ok"
