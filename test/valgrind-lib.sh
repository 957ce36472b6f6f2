# SPDX-License-Identifier: MIT
# Shared by test/scripts/valgrind_*.sh: sourced, not run.  Sets B, SRC, tmp,
# SUPP and vg_run, or exits 77 when valgrind is missing or the build is one
# valgrind cannot run (ASan) or where nothing is patched (KK_NO_JUMP_LABEL).
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
command -v valgrind >/dev/null 2>&1 || { echo "skip: no valgrind"; exit 77; }
case ${KK_TEST_LABEL:-default} in
asan+ubsan) echo "skip: valgrind does not run ASan binaries"; exit 77 ;;
fallback) echo "skip: KK_NO_JUMP_LABEL patches no code"; exit 77 ;;
esac
tmp=$(mktemp -d /tmp/kk-vg.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
SUPP=$SRC/test/valgrind
bad=

# vg_run NAME TOOL ARGS... -- PROGRAM ARGS...: run under valgrind (error exit
# status 99), at most 300 s; on failure print the log's tail and remember NAME.
vg_run() {
	name=$1; tool=$2; shift 2
	log=$tmp/$(echo "$name" | tr ' /' '__').log
	timeout -k 10 300 valgrind -q --tool="$tool" --error-exitcode=99 \
		--suppressions="$SUPP/$tool.supp" "$@" > "$log" 2>&1
	rc=$?
	# A Criterion filter that matches no case runs nothing, and exits 0.
	if [ $rc -eq 0 ] && grep -q 'Synthesis: Tested: 0 ' "$log"; then
		echo "---- $name: no test case ran (does the filter name one?) ----"
		bad="$bad
$name (no test case ran)"
	elif [ $rc -ne 0 ]; then
		echo "---- $name: exit $rc (99: valgrind found errors), last 40 lines ----"
		# (renamed so that scripts/run-tests.sh does not count it as a Criterion run)
		tail -n 40 "$log" | sed "s/Synthesis: /Synthesis (under valgrind): /"
		bad="$bad
$name (exit $rc)"
	else
		echo "$name: ok"
	fi
}
