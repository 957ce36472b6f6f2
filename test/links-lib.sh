# SPDX-License-Identifier: MIT
# Sourced by test/scripts/links_*.sh: build test/links/links_prog.c with one
# unusual link mode at test time, with the compiler the suite runs with, and
# run it (exit 0 only if static keys, pr_debug, debug objects, WARN and panic
# all behaved).  Each build is run twice: plain, and with settings that make
# the library's constructors do their most (KK_PANIC_*, KK_DEBUG_OBJECTS_*):
# nothing that can abort may run in a constructor.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
CC=${CC:-cc}
label=${KK_TEST_LABEL:-default}
tmp=$(mktemp -d /tmp/kk-links.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
LINKS_CFLAGS="-O2 -g -Wall -Wextra -Werror -I$SRC/include -pthread"
SANFLAGS=
case $label in
fallback) LINKS_CFLAGS="$LINKS_CFLAGS -DKK_NO_JUMP_LABEL" ;;
asan*) SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" ;;
esac

fail() { echo "FAIL: $*"; exit 1; }
skip() { echo "SKIP: $*"; exit 77; }

command -v "$CC" >/dev/null 2>&1 || skip "no compiler $CC"

# A static link of ASan is not supported by gcc or clang.
links_no_static_san() {
	case $label in
	asan*) skip "static linking is not supported with ASan+UBSan (libasan needs the dynamic loader)" ;;
	esac
}

# Skip only when the tool is genuinely missing: a trivial program must build.
links_need() {	# what flags...
	what=$1; shift
	printf 'int main(void) { return 0; }\n' > "$tmp/probe.c"
	"$CC" "$@" -o "$tmp/probe" "$tmp/probe.c" >"$tmp/probe.log" 2>&1 ||
		{ cat "$tmp/probe.log"; skip "$CC cannot build $what"; }
	"$tmp/probe" || skip "$CC built a $what program that does not run"
}

links_build() {	# name flags-and-libs...
	name=$1; shift
	echo "+ $CC $LINKS_CFLAGS $SANFLAGS -o $name links_prog.c $*"
	# shellcheck disable=SC2086
	"$CC" $LINKS_CFLAGS $SANFLAGS -o "$tmp/$name" "$SRC/test/links/links_prog.c" "$@" \
		>"$tmp/$name.log" 2>&1 || { cat "$tmp/$name.log"; fail "building $name"; }
	grep -v "statically linked applications requires at runtime" "$tmp/$name.log" || true
}

links_run() {	# name
	name=$1
	out=$(KK_CONTROL=0 "$tmp/$name" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q "links: ok" ||
		{ echo "$out" | tail -40; fail "$name exited $rc"; }
	out=$(KK_CONTROL=0 KK_PANIC_TIMEOUT=1 KK_PANIC_ON_OOPS=1 KK_PANIC_BLINK_MS=100 \
		KK_DEBUG_OBJECTS_BACKTRACE=1 KK_DEBUG_OBJECTS_POLICY=ewma "$tmp/$name" 2>&1)
	rc=$?
	[ $rc -eq 0 ] && echo "$out" | grep -q "links: ok" ||
		{ echo "$out" | tail -40; fail "$name with KK_PANIC_*/KK_DEBUG_OBJECTS_* exited $rc"; }
	echo "ok: $name"
}
