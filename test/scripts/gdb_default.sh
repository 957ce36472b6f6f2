#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 10, "gdb, default settings": gdb stopped on the patching trap and a
# plain `continue` then killed the program (SIGILL/SIGSEGV).  Issue 22: a
# flip then still stopped gdb once per thread on the park signal (SIG60),
# so that `run` plus 200 `continue`s did not reach the end of 200 flips.
# Real gdb, batch mode, no init files, default signal settings, no helper:
# test/progs/jump_label_flip (512 sites, 200 flips, every third a batch of all keys;
# 1 reader thread, then 4) must exit 0 with `run` alone: no stop at all (the
# loop of `continue`s after it must not be needed once).
#
# Then with the gdb helper (tools/gdb/libkernelkit.so-gdb.py) auto-loaded the
# way an installed copy is: the build puts it next to the library as
# $KK_BUILD/libkernelkit.so.1.1.0-gdb.py, and `add-auto-load-safe-path $KK_BUILD`
# lets gdb load it.  Then `run` alone must finish too.
set -u
. "${KK_SRC:?}/test/gdb-lib.sh"
PROG=$B/test/progs/jump_label_flip
[ -x "$PROG" ] || { echo "not built"; exit 77; }

{ echo run; continue_loop 20000; } > "$tmp/continue.gdb"
for args in "1 200" "4 200"; do
	# shellcheck disable=SC2086
	run_gdb 300 -x "$tmp/continue.gdb" --args "$PROG" $args > "$tmp/default.log" 2>&1
	check_exit "$tmp/default.log" "jump_label_flip $args: default settings, run + continue"
	n=$(grep '^KK-EXIT' "$tmp/default.log" | cut -d' ' -f3)
	echo "jump_label_flip $args: default settings: $n continues"
	[ "$n" = 0 ] || { grep -m 3 "received signal" "$tmp/default.log"; fail "jump_label_flip $args: gdb stopped $n times"; }
done

# gdb looks for <real path of the library>-gdb.py: the soname's link resolved.
real=$(readlink -f "$B/libkernelkit.so")
[ -f "$real-gdb.py" ] || fail "$real-gdb.py is not built"
printf 'run\nprintf "KK-EXIT %%d 0\\n", $_exitcode\n' > "$tmp/run.gdb"
run_gdb 300 -iex "add-auto-load-safe-path $B" -x "$tmp/run.gdb" \
	--args "$PROG" 4 200 > "$tmp/helper.log" 2>&1
grep -q "libkernelkit.so.*-gdb.py" "$tmp/helper.log" && { cat "$tmp/helper.log"; fail "auto-load refused"; }
check_exit "$tmp/helper.log" "helper auto-loaded, run alone"
echo "gdb_default: ok"
