#!/bin/sh
# SPDX-License-Identifier: MIT
# Instructions a site that registering a program's dynamic-debug sites costs
# at start-up (issue 41): a program of N pr_debug sites over U units
# (bench/gen-dd-units.sh), run under callgrind, counting only what
# kk_jump_label_add_object and kk_dyndbg_add_object execute (and all they
# call).  Instruction counts do not depend on the machine's load.
#   scripts/register-insns.sh [BUILD [N:U ...]]
# (default: build, 100:10 1000:100 16154:1000 1000:1)
set -eu
B=$(cd "${1:-build}" && pwd)
[ $# -gt 0 ] && shift
[ $# -gt 0 ] || set -- 100:10 1000:100 16154:1000 1000:1
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d /tmp/kk-reginsns.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
for c in "$@"; do
	n=${c%%:*} u=${c#*:} d=$tmp/p$n-$u
	sh "$src/bench/gen-dd-units.sh" "$n" "$u" "$d"
	${CC:-cc} -O2 -D_GNU_SOURCE -I"$src/include" -o "$d/prog" "$d"/*.c \
		-L"$B" -lkernelkit -Wl,-rpath,"$B" -pthread
	env -i KK_CONTROL=0 valgrind --tool=callgrind --callgrind-out-file="$d/cg" \
		--collect-atstart=no --toggle-collect=kk_dyndbg_add_object \
		--toggle-collect=kk_jump_label_add_object "$d/prog" 2>"$d/vg"
	i=$(sed -n 's/.*Collected : *\([0-9]*\).*/\1/p' "$d/vg")
	echo "sites $n units $u: $i instructions, $((i / n)) a site"
done
