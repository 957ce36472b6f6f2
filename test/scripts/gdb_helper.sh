#!/bin/sh
# SPDX-License-Identifier: MIT
# The gdb helper (tools/gdb/libkernelkit.so-gdb.py), auto-loaded from the
# build directory as an installed copy would be ($KK_BUILD/libkernelkit.so.1.1.0-gdb.py
# next to the library, `add-auto-load-safe-path $KK_BUILD`).
#  1. test/progs/gdb_park_prog announces a signal with kk_gdb_stop_signal()
#     and sends it to two threads, as stop_machine does: without the helper
#     gdb stops on it; with the helper `run` alone finishes, exit 0.
#  2. kk-status at a stop lists the program's sites (test/progs/jump_label_gdb_break:
#     3 sites, no int3).
#  3. With the int3 protocol forced (KK_TEXT_SYNC=membarrier), every SIGTRAP
#     stop on a site is explained by the helper, and `signal SIGTRAP` (what it
#     tells you to type) resumes correctly: test/progs/jump_label_flip exits 0.
set -u
. "${KK_SRC:?}/test/gdb-lib.sh"
# gdb looks for <real path of the library>-gdb.py: the soname's link resolved.
real=$(readlink -f "$B/libkernelkit.so")
[ -f "$real-gdb.py" ] || fail "$real-gdb.py is not built"
AL="add-auto-load-safe-path $B"
printf 'run\nprintf "KK-EXIT %%d 0\\n", $_exitcode\n' > "$tmp/run.gdb"

# 1. The park signal, announced.
run_gdb 60 -x "$tmp/run.gdb" "$B/test/progs/gdb_park_prog" > "$tmp/nohelper.log" 2>&1
grep -q "received signal SIG" "$tmp/nohelper.log" ||
	{ cat "$tmp/nohelper.log"; fail "without the helper gdb should stop on the signal"; }
run_gdb 60 -iex "$AL" -x "$tmp/run.gdb" "$B/test/progs/gdb_park_prog" > "$tmp/park.log" 2>&1
grep -q "^KK-EXIT 0 " "$tmp/park.log" && ! grep -q "received signal" "$tmp/park.log" ||
	{ cat "$tmp/park.log"; fail "with the helper, the announced signal must not stop gdb"; }
echo "announced signal passed silently: ok"

# 2. kk-status.
if [ "${KK_TEST_LABEL:-default}" != fallback ]; then
	run_gdb 60 -iex "$AL" -ex "break bp_ready" -ex run -ex kk-status -ex kill \
		"$B/test/progs/jump_label_gdb_break" > "$tmp/status.log" 2>&1
	grep -q "^kernelkit: 3 static-key sites, 0 holding an int3 now" "$tmp/status.log" ||
		{ cat "$tmp/status.log"; fail "kk-status"; }
	echo "kk-status: ok"
fi

# 3. SIGTRAP stops on sites are explained, and `signal SIGTRAP` resumes them.
if [ "${KK_TEST_LABEL:-default}" != fallback ] && "$B/test/progs/jump_label_flip" --membarrier-ok; then
	{ echo run; continue_loop 20000 signal; } > "$tmp/sig.gdb"
	KK_TEXT_SYNC=membarrier run_gdb 300 -iex "$AL" -x "$tmp/sig.gdb" \
		--args "$B/test/progs/jump_label_flip" 1 200 > "$tmp/trap.log" 2>&1
	check_exit "$tmp/trap.log" "jump_label_flip 1 200, int3 forced, signal SIGTRAP"
	stops=$(grep -c "received signal SIGTRAP" "$tmp/trap.log")
	told=$(grep -c "^kernelkit: SIGTRAP at static-key site" "$tmp/trap.log")
	echo "$stops SIGTRAP stops, $told explained"
	[ "$stops" -eq "$told" ] || { grep -A4 "received signal SIGTRAP" "$tmp/trap.log" | head -40
		fail "a SIGTRAP stop was not explained"; }
fi
echo "gdb_helper: ok"
