#!/bin/bash
# SPDX-License-Identifier: MIT
# Valkey's serverLog adopted in its header (issue 40, item 5), counted.
#   examples/adopt/valkey/serverlog.sh VALKEY_SRC        (from the repo, after make lib tools)
# Copies VALKEY_SRC (left untouched) to a temporary tree and builds
# valkey-server there twice, with kk_valkey_trace.h force-included and
# server.h's serverLog replaced by one definition:
#   before: serverLog mapped onto pr_debug the only way today's header allowed:
#           the LL_DEBUG branch as a pr_debug, the others as before; every
#           call is a site, whatever its level.
#   after:  kk_valkey_serverLog (pr_debug_if): a site only where the level is
#           LL_DEBUG at compile time; the others as before, no site.
# Each server (and its Lua module, which logs too) runs (unix socket only, no
# TCP), and kkctl counts its sites.
# Passes when "after" lists exactly the serverLog calls whose level is the
# LL_DEBUG constant (file:line of the calls in the source that "before" shows
# were compiled in: some are under #ifdef) and no NOTICE line, "before" lists
# more, +p prints serverCron's LL_DEBUG line through kernelkit, and the NOTICE
# lines of the start-up still reach the log as before.
set -u
[ $# -ge 1 ] || { echo "usage: $0 VALKEY_SRC" >&2; exit 2; }
VK=$(cd "$1" && pwd) KK=$(pwd) HDR=$(pwd)/examples/adopt/valkey/kk_valkey_trace.h
KKCTL=$KK/build/kkctl
[ -x "$KKCTL" ] && [ -e "$KK/build/libkernelkit.so" ] || { echo "make lib tools first" >&2; exit 2; }
grep -q '^#define serverLog(level, \.\.\.)' "$VK/src/server.h" || { echo "$VK: no serverLog in src/server.h" >&2; exit 2; }
# KK_SERVERLOG_DIR: keep the trees there and reuse their builds (else a temporary directory,
# removed when the check passes and kept, with its logs, when it fails).
tmp=${KK_SERVERLOG_DIR:-$(mktemp -d /tmp/kk-serverlog.XXXXXX)} srv=
mkdir -p "$tmp"
trap 'kill $srv 2> /dev/null' EXIT
fail() { echo "FAIL: $* (logs in $tmp)"; exit 1; }

# The serverLog calls (dualChannelServerLog and replicaBioSaveServerLog expand to
# serverLog), and the file:line of those whose level is the constant LL_DEBUG.
CALL='([sS]erverLog|dualChannelServerLog|replicaBioSaveServerLog)\('
calls=$(cat "$VK"/src/*.c "$VK"/src/modules/lua/*.c | tr -d '\n' | grep -Eo "$CALL" | wc -l)
grep -nE "${CALL}LL_DEBUG," "$VK"/src/*.c "$VK"/src/modules/lua/*.c |
	sed -E 's|^.*/([^/:]+):([0-9]+):.*|\1:\2|' | sort -u > "$tmp/debug.locs"

# build NAME DEFINITION: valkey-server with serverLog defined as DEFINITION
build() {
	local dir=$tmp/$1
	[ -x "$dir/src/valkey-server" ] && [ -e "$dir/src/modules/lua/libvalkeylua.so" ] && return
	rm -rf "$dir"
	cp -a "$VK" "$dir"
	make -C "$dir/src" distclean > /dev/null 2>&1
	# server.h: the 5 lines of serverLog's definition become one
	sed -i '/^#define serverLog(level, \.\.\.)/,/} while (0)$/c\'"$2" "$dir/src/server.h"
	make -C "$dir/src" -j2 BUILD_TLS=no MALLOC=libc OPTIMIZATION=-O2 \
		SERVER_CFLAGS="-include $HDR -I$KK/include" \
		SERVER_LDFLAGS="-L$KK/build -Wl,-rpath,$KK/build -Wl,--no-as-needed -lkernelkit -Wl,--as-needed" \
		valkey-server modules/lua/libvalkeylua.so > "$tmp/$1.log" 2>&1 ||
		fail "building Valkey ($1) failed: $(tail -5 "$tmp/$1.log")"
}

# sites NAME: runs that server, prints "SITES NOTICE_SITES", leaves it running as $srv
run() {
	"$tmp/$1/src/valkey-server" --port 0 --unixsocket "$tmp/$1.sock" --save '' --appendonly no \
		> "$tmp/$1.out" 2> "$tmp/$1.err" &
	srv=$!
	for i in $(seq 300); do
		[ -S "$tmp/$1.sock" ] && "$KKCTL" -p $srv read dynamic_debug/control > "$tmp/$1.control" 2> /dev/null && break
		kill -0 $srv 2> /dev/null || fail "the $1 server died: $(tail -3 "$tmp/$1.out" "$tmp/$1.err")"
		[ $i -lt 300 ] || fail "the $1 server never came up: $(tail -3 "$tmp/$1.err")"
		sleep 0.1
	done
}
stop() { kill $srv; wait $srv 2> /dev/null; srv=; }
# serverLog sites: the file:line of the module's sites that are not tracepoints ("prov:event: {")
locs() { grep '\[valkey\]' "$tmp/$1.control" | grep -Ev '"valkey_[a-z]+:[a-z_]+: \{' | cut -d' ' -f1 | sort -u; }

build before '#define serverLog(level, ...) do { if ((level) == LL_DEBUG) pr_debug(__VA_ARGS__); else kk_valkey_serverLog_as_before(level, __VA_ARGS__); } while (0)'
build after '#define serverLog(level, ...) kk_valkey_serverLog(level, __VA_ARGS__)'

run before
locs before > "$tmp/before.locs"
stop
run after
locs after > "$tmp/after.locs"
notice=$(grep -c '"Server initialized' "$tmp/after.control")
# positive control: serverCron's LL_DEBUG line (every 5 s) printed once its site is on
"$KKCTL" -p $srv write dynamic_debug/control 'module valkey format "clients connected" +p' > "$tmp/write" 2>&1 ||
	fail "kkctl write: $(cat "$tmp/write")"
for i in $(seq 300); do
	grep -q 'Total: .* clients connected' "$tmp/after.err" && break
	[ $i -lt 300 ] || fail "+p: serverCron's LL_DEBUG line never printed in 30 s"
	sleep 0.1
done
stop
# the LL_DEBUG calls compiled in (before lists every compiled call; some are under #ifdef)
comm -12 "$tmp/debug.locs" "$tmp/before.locs" > "$tmp/want.locs"
before=$(wc -l < "$tmp/before.locs") after=$(wc -l < "$tmp/after.locs") want=$(wc -l < "$tmp/want.locs")
echo "serverLog calls in the source: $calls, with the constant level LL_DEBUG: $(wc -l < "$tmp/debug.locs") ($want compiled in)"
echo "serverLog sites listed: before $before, after $after"
extra=$(comm -23 "$tmp/after.locs" "$tmp/want.locs" | head -3)
missing=$(comm -13 "$tmp/after.locs" "$tmp/want.locs" | head -3)
[ -z "$extra" ] || fail "after: sites that are not LL_DEBUG calls: $extra"
[ -z "$missing" ] || fail "after: LL_DEBUG calls that are no site: $missing"
[ "$before" -gt "$after" ] || fail "before: $before sites, not more than after's $after"
[ "$notice" -eq 0 ] || fail "the NOTICE line \"Server initialized\" is a site"
grep -q 'matched 1 ' "$tmp/write" || fail "'format \"clients connected\"' did not match one site: $(cat "$tmp/write")"
grep -q 'Server initialized' "$tmp/after.out" || fail "the NOTICE lines no longer reach the log"
echo "+p on the LL_DEBUG line: $(grep -c 'clients connected' "$tmp/after.err") line(s) on stderr; NOTICE lines in the log: $(grep -c ' \* ' "$tmp/after.out")"
echo "PASS"
[ -n "${KK_SERVERLOG_DIR:-}" ] || rm -rf "$tmp"
