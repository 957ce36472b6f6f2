#!/bin/bash
# SPDX-License-Identifier: MIT
# Valkey adopted through its trace header alone, and switched under load.
#   examples/adopt/valkey/check.sh VALKEY_SRC [ROUNDS]     (as root, from the repo)
# VALKEY_SRC: a Valkey checkout with src/trace/ (its LTTng tracepoints).
# 1. Builds valkey-server and valkey-benchmark with kk_valkey_trace.h
#    force-included (each tracepoint becomes a pr_debug site of module
#    "valkey"; nothing of Valkey is edited) against this tree's build/.
# 2. In a network namespace of its own (lo only), starts the server, loads
#    it with valkey-benchmark, and ROUNDS (20) times switches the module +T,
#    reads dynamic_debug/trace, and switches it -T, with kkctl.
# 3. Then, on a fresh server under the same load, +p and -p: the positive
#    control (+p prints the events on stderr).
# Passes when: no event line reached the server's stderr during the +T/-T
# rounds (T records, never prints), the trace reads got records, every write
# succeeded, both processes lived, and +p printed.  Issue 37, finding 11.
set -u
[ $# -ge 1 ] || { echo "usage: $0 VALKEY_SRC [ROUNDS]" >&2; exit 2; }
VK=$(cd "$1" && pwd) ROUNDS=${2:-20}
KK=$(pwd) HDR=$(pwd)/examples/adopt/valkey/kk_valkey_trace.h
KKCTL=$KK/build/kkctl PORT=6390
EVENT='valkey_[a-z]+:[a-z_]+: \{'

if [ -z "${KK_VALKEY_INNER:-}" ]; then
	[ -x "$KKCTL" ] && [ -e "$KK/build/libkernelkit.so" ] || { echo "make lib tools first" >&2; exit 2; }
	[ -d "$VK/src/trace" ] || { echo "$VK: no src/trace/ (a Valkey with tracepoints)" >&2; exit 2; }
	# --no-as-needed: Valkey puts SERVER_LDFLAGS before its objects.
	make -C "$VK/src" -j2 BUILD_TLS=no MALLOC=libc OPTIMIZATION=-O2 \
		SERVER_CFLAGS="-include $HDR -I$KK/include" \
		SERVER_LDFLAGS="-L$KK/build -Wl,-rpath,$KK/build -Wl,--no-as-needed -lkernelkit -Wl,--as-needed" \
		valkey-server valkey-benchmark modules/lua/libvalkeylua.so > /tmp/kk-valkey-build.log 2>&1 ||
		{ echo "building Valkey failed: /tmp/kk-valkey-build.log" >&2; exit 1; }
	exec env KK_VALKEY_INNER=1 unshare -n "$0" "$@"
fi

ip link set lo up
tmp=$(mktemp -d /tmp/kk-valkey.XXXXXX)
srv= bench=
trap 'kill $bench $srv 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# start: the server and its load; waits until kkctl reaches it and the
# benchmark has connected.
start() {
	"$VK/src/valkey-server" --port $PORT --bind 127.0.0.1 --save '' --appendonly no \
		> "$tmp/out" 2> "$tmp/err" &
	srv=$!
	for i in $(seq 300); do
		"$KKCTL" -p $srv files > /dev/null 2>&1 && (echo > /dev/tcp/127.0.0.1/$PORT) 2> /dev/null && break
		[ $i -lt 300 ] || fail "the server never came up"
		sleep 0.1
	done
	"$VK/src/valkey-benchmark" -h 127.0.0.1 -p $PORT -n 100000000 -c 50 -P 16 -t set,get -q \
		> "$tmp/bench" 2>&1 &
	bench=$!
	for i in $(seq 300); do
		[ "$(ss -Htn state established "( sport = :$PORT )" | wc -l)" -ge 50 ] && break
		[ $i -lt 300 ] || fail "the benchmark never connected its 50 clients"
		sleep 0.1
	done
}
stop() {
	kill -0 $bench 2> /dev/null || fail "valkey-benchmark died: $(tail -3 "$tmp/bench")"
	kill -0 $srv 2> /dev/null || fail "the server died: $(tail -3 "$tmp/err")"
	kill $bench; wait $bench 2> /dev/null
	kill $srv; wait $srv 2> /dev/null
	bench= srv=
}
ctl() { "$KKCTL" -p $srv "$@" 2>> "$tmp/kkctl.err" || fail "kkctl $*: $(tail -1 "$tmp/kkctl.err")"; }

start
sites=$(ctl read dynamic_debug/control | grep -c '\[valkey\]')
[ "$sites" -gt 0 ] || fail "no valkey sites listed: was the header included?"
recs=0
for r in $(seq "$ROUNDS"); do
	ctl write dynamic_debug/control 'module valkey +T' > /dev/null
	n=$(ctl read dynamic_debug/trace | grep -Ec "$EVENT")
	recs=$((recs + n))
	ctl write dynamic_debug/control 'module valkey -T' > /dev/null
done
stop
printed=$(grep -Ec "$EVENT" "$tmp/err" "$tmp/out" | awk -F: '{ s += $NF } END { print s + 0 }')
echo "+T/-T: $ROUNDS rounds on $sites sites under load: $recs records read, $printed event lines printed"
[ "$recs" -gt 0 ] || fail "the trace reads got no record: the load never reached a site"
[ "$printed" -eq 0 ] || fail "$printed event lines printed while only T was switched"

start
ctl write dynamic_debug/control 'module valkey +p' > /dev/null
for i in $(seq 300); do
	[ "$(grep -Ec "$EVENT" "$tmp/err")" -gt 0 ] && break
	[ $i -lt 300 ] || fail "+p printed nothing in 30 s"
	sleep 0.1
done
ctl write dynamic_debug/control 'module valkey -p' > /dev/null
stop
echo "+p: $(grep -Ec "$EVENT" "$tmp/err") event lines (positive control)"
echo "PASS"
