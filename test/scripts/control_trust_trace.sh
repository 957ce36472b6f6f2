#!/bin/sh
# SPDX-License-Identifier: MIT
# What a process recorded while privileged is not readable by a uid that may
# not ptrace it (kernelkit issue 37, finding 6).  control_trust starts as root
# with KK_DYNDBG='+T', records a secret into its trace ring, and drops to a
# throwaway uid U for good (setgroups, setresgid, setresuid): the kernel makes
# it non-dumpable, and refuses U its /proc/PID/environ.
#  - U's kkctl read of dynamic_debug/trace (and of trace_pipe, trace_pipe_json,
#    trace_pipe_raw, and U's raw
#    request) is refused in one line and gets no record (before: the secret);
#  - root still reads the secret (and from trace_pipe_raw);
#  - once the program says so itself, prctl(PR_SET_DUMPABLE, 1) (U may then
#    ptrace it and read its memory anyway), U reads the trace.
set -u
KK_TRUST_LIB_NAME=trust-trace
. "${KK_SRC:?}/test/control-trust-lib.sh"
secret=s3cr3t-of-root

start_env="KK_DYNDBG=+T"
start
cmd secret
cmd "drop $U"
cmd ids
[ "$ans" = "ok $U $U $U $U $U $U 0" ] || fail "ids after the drop: $ans"
as "$U" cat "/proc/$pid/environ" > /dev/null 2>&1 &&
	echo "note: the kernel let uid $U read /proc/$pid/environ (fs.suid_dumpable is not 0?)"

refused_reads
as "$U" "$RAW" "$pid" "read dynamic_debug/trace" > "$tmp/out"
[ "$(head -n 1 "$tmp/out")" = -13 ] || fail "U's raw read of the trace: $(cat "$tmp/out")"
grep -q "$secret" "$tmp/out" && fail "U's raw read got the secret"

"$KKCTL" -p "$pid" read dynamic_debug/trace > "$tmp/out" 2> "$tmp/kerr" ||
	fail "root's read of the trace: $(cat "$tmp/kerr")"
grep -q "the secret is $secret" "$tmp/out" || fail "root's read has no secret: $(cat "$tmp/out")"
"$RAW" "$pid" "read dynamic_debug/trace_pipe_raw" > "$tmp/out"
grep -aq "$secret" "$tmp/out" || fail "root's read of trace_pipe_raw has no secret"

cmd "dumpable 1"
as "$U" "$KKCTL" -p "$pid" read dynamic_debug/trace > "$tmp/out" 2> "$tmp/kerr" ||
	fail "U after prctl(PR_SET_DUMPABLE, 1): $(cat "$tmp/kerr")"
grep -q "the secret is $secret" "$tmp/out" || fail "U after PR_SET_DUMPABLE 1: $(cat "$tmp/out")"
finish
echo "control_trust_trace: ok"
