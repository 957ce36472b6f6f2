# SPDX-License-Identifier: MIT
# Sourced by test/scripts/*_conformance_wrong.sh: a conformance module built
# with one wrong expectation must refuse to load, exit 1, and name the check
# that failed.  That shows each module can fail.
#
#   conf_setup NEEDED...       skip unless every NEEDED file is in $B; sets
#                              $tmp (removed at exit) and the label's flags
#   conf_build OUT MODULE -DWRONG [-lLIB]   build test/conformance/MODULE.c
#                              with runner.c into $tmp/OUT
#   conf_expect_fail WHAT WANT CMD...        run CMD: exit 1 naming WANT
#
# Modules are built for the default and fallback builds only: the sanitizer
# build's flags are not the ones a kernel test module is compiled with.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:-.}
CC=${CC:-cc}
ABS=$(cd "$B" && pwd)
conf_fail=0

conf_setup()
{
	for f in libkernelkit.so "$@"; do
		[ -e "$B/$f" ] || { echo "skip: not built ($f)"; exit 77; }
	done
	case "${KK_TEST_LABEL:-default}" in
	fallback) conf_flags="-DKK_NO_JUMP_LABEL" ;;
	default) conf_flags="" ;;
	*) echo "skip: builds its own programs without the ${KK_TEST_LABEL} flags"; exit 77 ;;
	esac
	tmp=$(mktemp -d /tmp/kk-confwrong.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
}

conf_build()
{
	out=$1 module=$2 wrong=$3
	shift 3
	# shellcheck disable=SC2086
	if ! $CC -std=gnu11 -D_GNU_SOURCE -DKBUILD_MODNAME="\"$module\"" "$wrong" $conf_flags \
		-I"$SRC/test/conformance/include" -I"$SRC/include" -O2 -pthread -o "$tmp/$out" \
		"$SRC/test/conformance/$module.c" "$SRC/test/conformance/runner.c" \
		-L"$ABS/test/conformance" -Wl,-rpath,"$ABS/test/conformance" "$@" \
		-L"$ABS" -lkernelkit -Wl,-rpath,"$ABS" -ldl > "$tmp/log" 2>&1; then
		cat "$tmp/log"
		echo "FAIL: $module with a wrong expectation did not build"
		conf_fail=1
		return 1
	fi
}

conf_expect_fail()
{
	what=$1 want=$2
	shift 2
	"$@" > "$tmp/out" 2>&1
	rc=$?
	cat "$tmp/out"
	if [ "$rc" -ne 1 ]; then
		echo "FAIL: $what: exited $rc, not 1"
		conf_fail=1
	elif ! grep -q "$want" "$tmp/out"; then
		echo "FAIL: $what: failed without naming the check ($want)"
		conf_fail=1
	fi
}
