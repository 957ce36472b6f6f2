# SPDX-License-Identifier: MIT
# Shared by test/scripts/gdb_*.sh: sourced, not run.  Sets B, SRC, tmp and
# run_gdb (real gdb in batch mode, no init files, no debuginfod) or exits 77
# when gdb is missing or cannot trace here (ptrace denied).
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
command -v gdb >/dev/null 2>&1 || { echo "skip: no gdb"; exit 77; }
# LeakSanitizer cannot run under ptrace (it says so and exits 1): the ASan
# build's leak check is done by the runs without a debugger.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d /tmp/kk-gdb.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
# run_gdb SECONDS ARGS...: gdb in batch mode, killed after SECONDS, or after
# KK_GDB_GUARD (500) if that is longer.  The bound is a hang guard, not a
# time limit: on the shared 2-vCPU machine at a load average of 100, a run
# that takes 5 s when quiet took more than 200 s (gdb_helper.sh was killed at
# 60 s and failed), so no run gets less than the guard; and it stays under
# the harness's 600 s a program (scripts/run-one.sh), so that a hang is
# reported by the test, with its log.
run_gdb() {
	t=$1; shift
	[ "$t" -ge "${KK_GDB_GUARD:-500}" ] || t=${KK_GDB_GUARD:-500}
	timeout -k 10 "$t" gdb -nx -batch -iex "set debuginfod enabled off" \
		-iex "set confirm off" "$@"
}
if ! run_gdb 60 -ex run /bin/true 2>&1 | grep -q "exited normally"; then
	echo "skip: gdb cannot run a program here (ptrace denied?)"
	exit 77
fi
fail() { echo "FAIL: $*"; exit 1; }

# The gdb command file that continues until the program exits, at most
# $1 times; then prints "KK-EXIT <status> <continues>" (nothing if it died:
# `continue` on a dead program is an error that ends the batch).
# $2 = "signal": resume a SIGTRAP stop with `signal SIGTRAP` instead.
continue_loop() {
	echo "set \$kk_i = 0"
	echo "while \$_isvoid(\$_exitcode) && \$kk_i < $1"
	echo "  set \$kk_i = \$kk_i + 1"
	if [ "${2:-}" = signal ]; then
		echo "  if !\$_isvoid(\$_siginfo) && \$_siginfo.si_signo == 5"
		echo "    signal SIGTRAP"
		echo "  else"
		echo "    continue"
		echo "  end"
	else
		echo "  continue"
	fi
	echo "end"
	printf '%s\n' 'printf "KK-EXIT %d %d\n", $_exitcode, $kk_i'
}

# check_exit LOG NAME: the program exited 0 and printed its "ok" line.
check_exit() {
	if ! grep -q "^KK-EXIT 0 " "$1" || ! grep -q ": ok$" "$1"; then
		echo "---- $2: gdb log (last 30 lines) ----"
		grep -v '^\[New Thread\|^\[Thread .* exited\]' "$1" | tail -n 30
		fail "$2: the program did not exit 0 under gdb"
	fi
}
