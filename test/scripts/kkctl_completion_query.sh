#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion completes a dynamic_debug/control query (issue 40,
# item 6): its keywords, the values of file, func and module from the
# target's listing (kkctl -p PID read dynamic_debug/control), and the flags
# word; in a quoted query too.
set -u
command -v bash > /dev/null || { echo "skip: no bash"; exit 77; }
SRC=${KK_SRC:?}
KK_TARGET_NAME=complq
. "${KK_SRC:?}/test/target-lib.sh"
. "$SRC/test/completion-lib.sh"
# has WANT WORDS...: the candidates for WORDS include the line WANT
has() {
	want=$1; shift
	complete "$@" > "$tmp/c"
	grep -Fxq -- "$want" "$tmp/c" || fail "$* -> $(tr '\n' '|' < "$tmp/c"), want '$want'"
}
W="kkctl -p $pid write dynamic_debug/control"
has file $W f
has func $W f
has module $W m
has format $W fo
has line $W l
has 'file dynamic_debug_target.c' $W "'file dyn"
has 'func target_alpha' $W "'func target_a"
has 'func target_beta' $W "'func target_"
has 'module dynamic_debug_target' $W "'module dyn"
has 'func target_alpha +p' $W "'func target_alpha +"
has 'file dynamic_debug_target.c' $W '"file dyn'
# unquoted, as the first word
has 'file' $W 'fil'
# -n is a target too
has 'func target_beta' kkctl -n dynamic_debug_t write dynamic_debug/control "'func target_b"
# other files are not queries
complete kkctl -p "$pid" write dynamic_debug/trace_clock "'f" > "$tmp/c"
grep -q . "$tmp/c" && fail "trace_clock: $(cat "$tmp/c")"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_completion_query: ok"
