#!/bin/sh
# SPDX-License-Identifier: MIT
# Issue 22: the classic POSIX daemon (every thread blocks every signal, main
# handles SIGTERM and SIGHUP with sigwait()) died with SIGTRAP (exit 133) on
# the first `kkctl write`: its workers ran a site while it held int3, and a
# blocked SIGTRAP kills.  test/progs/sigwait_daemon, whose workers run
# `func hot` is switched 1000 times through kkctl ('+p' then '-p', 500
# each); every write must succeed, the sites must end switched off, and the
# daemon must exit 0 on SIGTERM.
set -u
KK_CTL_LIB_NAME=sigwait
. "${KK_SRC:?}/test/control-lib.sh"
KKCTL=$B/kkctl
N=${KK_SIGWAIT_SWITCHES:-1000}
start_sigwait_daemon

i=0
while [ "$i" -lt "$N" ]; do
	case $((i % 2)) in 0) q='func hot +p' ;; *) q='func hot -p' ;; esac
	"$KKCTL" -p "$dpid" write dynamic_debug/control "$q" > "$tmp/w" 2>&1 ||
		fail "write $((i + 1)) of $N ('$q') failed: $(cat "$tmp/w"); daemon: $(kill -0 "$dpid" 2>&1 || echo gone)"
	i=$((i + 1))
done
"$KKCTL" -p "$dpid" read dynamic_debug/control > "$tmp/control" || fail "read control"
hot=$(grep -c '\[sigwait_daemon\]hot =_' "$tmp/control")
[ "$hot" -eq 3 ] || fail "want 3 sites of hot switched off, the listing has: $(grep hot "$tmp/control")"
stop_sigwait_daemon
read -r line <&3
[ "$rc" -eq 0 ] || fail "the daemon exited $rc after $N switches"
echo "$line"
echo "$N switches of 3 sites under 2 workers that block every signal"
echo "sigwait_daemon: ok"
