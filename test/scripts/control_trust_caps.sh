#!/bin/sh
# SPDX-License-Identifier: MIT
# A process that holds capabilities is not served to a uid that holds none
# of them (kernelkit issue 37, held-out round).  The kernel refuses such a uid
# its ptrace, /proc/PID/mem and /proc/PID/environ even when every id matches
# and the process is dumpable: the tracee's permitted capabilities must be
# the tracer's too.  control_trust runs as a throwaway uid U with
# CAP_DAC_READ_SEARCH ambient (a service started with AmbientCapabilities=,
# or setpriv's --ambient-caps: its ids are all U, and it stays dumpable),
# records a secret with KK_DYNDBG='+T'.  Before, U's kkctl read the secret
# from dynamic_debug/trace and switched its sites, though the kernel refused
# U its /proc/PID/environ.  Now:
#  - U's read of the trace (and trace_pipe) is refused in one line, no record;
#  - U's write of dynamic_debug/control is refused and changes nothing;
#  - root still reads the secret.
set -u
KK_TRUST_LIB_NAME=trust-caps
. "${KK_SRC:?}/test/control-trust-lib.sh"
secret=s3cr3t-of-root
caps="--inh-caps=+dac_read_search --ambient-caps=+dac_read_search"
# shellcheck disable=SC2086
$as_u $caps true 2>/dev/null || { echo "skip: setpriv cannot raise an ambient capability here"; exit 77; }

start_env="KK_DYNDBG=+T"
# shellcheck disable=SC2086
start $as_u $caps
cmd secret
cmd ids
[ "$ans" = "ok $U $U $U $U $U $U 1" ] || fail "ids, dumpable: $ans (want all $U, dumpable)"
prm=$(awk '$1 == "CapPrm:" { print $2 }' "/proc/$pid/status")
[ "$prm" = 0000000000000004 ] || fail "the program's permitted capabilities: $prm"
if as "$U" cat "/proc/$pid/environ" > /dev/null 2>&1; then
	echo "skip: the kernel let uid $U read /proc/$pid/environ (the premise does not hold)"
	exit 77
fi

refused_reads
grep -q "capabilit" "$tmp/kerr" || fail "the refusal does not name the capabilities: $(cat "$tmp/kerr")"

before=$(flags trust_a)
echo "func trust_a +p" | as "$U" "$KKCTL" -p "$pid" write dynamic_debug/control > "$tmp/out" 2>&1 &&
	fail "U's write of dynamic_debug/control succeeded: $(cat "$tmp/out")"
[ "$(flags trust_a)" = "$before" ] || fail "U's refused write changed trust_a: $before -> $(flags trust_a)"

"$KKCTL" -p "$pid" read dynamic_debug/trace > "$tmp/out" 2> "$tmp/kerr" ||
	fail "root's read of the trace: $(cat "$tmp/kerr")"
grep -q "the secret is $secret" "$tmp/out" || fail "root's read has no secret: $(cat "$tmp/out")"
finish
echo "control_trust_caps: ok"
