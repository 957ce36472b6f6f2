# SPDX-License-Identifier: MIT
# Shared by the scripts that count what registering a program's sites costs
# under callgrind (instruction counts do not depend on the load):
# startup_register_insns.sh and startup_register_inline_insns.sh.  Set
# KK_REG_NAME (the name of $tmp), then source it.  Skips (exit 77, with the
# reason) where callgrind cannot run the pass's build; sets B, src, $flags
# (the pass's build flags), a $tmp removed at exit, and
# reg_insns DIR: builds DIR/*.c into DIR/prog and prints the instructions
# that kk_jump_label_add_object and kk_dyndbg_add_object execute, with all
# they call (KK_CONTROL=0); prog_insns DIR FUNC...: the same for the
# functions named (built already), one line for each process (a fork child's
# too), the first process's first.
B=${KK_BUILD:?}
case "${KK_TEST_LABEL:-default}" in
fallback) flags="-DKK_NO_JUMP_LABEL" ;;
default) flags="" ;;
*) echo "skip: callgrind does not run a ${KK_TEST_LABEL} build"; exit 77 ;;
esac
command -v valgrind >/dev/null 2>&1 || { echo "skip: no valgrind"; exit 77; }
[ -f "$B/libkernelkit.so" ] || { echo "skip: not built"; exit 77; }
src=$(pwd)
tmp=$(mktemp -d "/tmp/kk-${KK_REG_NAME:-reg}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

prog_insns() {
	d=$1
	shift
	env -i KK_CONTROL=0 valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" \
		--collect-atstart=no $(printf ' --toggle-collect=%s' "$@") "$d/prog" 2>"$d/vg" ||
		{ cat "$d/vg" >&2; return 1; }
	awk -F'==' 'NR == 1 { main = $2 } /Collected : / { n = $NF; sub(/.*: */, "", n)
		if ($2 == main) print n; else kids = kids n "\n" }
		END { printf "%s", kids }' "$d/vg"
}
reg_insns() {
	${CC:-cc} -O2 -D_GNU_SOURCE $flags -I"$src/include" -o "$1/prog" "$1"/*.c \
		-L"$B" -lkernelkit -Wl,-rpath,"$B" -pthread || { echo "build failed" >&2; return 1; }
	prog_insns "$1" kk_dyndbg_add_object kk_jump_label_add_object
}
