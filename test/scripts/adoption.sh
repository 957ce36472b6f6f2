#!/bin/sh
# SPDX-License-Identifier: MIT
# The two worked examples of docs/adoption.md, run as the guide describes:
#  (a) test/progs/adopt_syslog: a syslog-style daemon whose debug() lines are
#      pr_debug() sites.  Its own log_level (config file, SIGHUP reload)
#      decides them with no kkctl at all; then kkctl switches them live, and
#      its level is served as dynamic_debug/params/adopt_syslog.log_level.
#  (b) test/progs/adopt_formatter: a server with its own formatter (%V) and
#      debug categories, gated with _dynamic_func_call_cls[_no_desc]: its
#      "error_log ... debug_http" decides the sites through a classmap
#      parameter; decorations reach the lines of the with-descriptor sites and
#      are refused, changing nothing, for the _no_desc one.
# And the reason for (b)'s shape: pr_debug() with %V does not compile under
# -Wformat -Werror.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:-.}
KKCTL=$B/kkctl
SYS=$B/test/progs/adopt_syslog
FMT=$B/test/progs/adopt_formatter
[ -x "$SYS" ] && [ -x "$FMT" ] && [ -x "$KKCTL" ] || { echo "SKIP: not built"; exit 77; }

tmp=$(mktemp -d /tmp/kk-adopt.XXXXXX)
pid=
fail() {
	echo "FAIL: $*"
	[ -f "$tmp/err" ] && sed 's/^/    stderr: /' "$tmp/err" | tail -n 20
	[ -n "$pid" ] && kill "$pid" 2> /dev/null
	rm -rf "$tmp"
	exit 1
}

# start PROG: run PROG "$tmp/conf" with stdout on fd 3, stderr (appended, so
# that it can be emptied) in $tmp/err; set $pid.
start() {
	rm -f "$tmp/out"
	mkfifo "$tmp/out"
	: > "$tmp/err"
	"$1" "$tmp/conf" > "$tmp/out" 2>> "$tmp/err" &
	pid=$!
	exec 3< "$tmp/out"
	read -r printed <&3 || fail "$1 printed no pid"
	[ "$printed" = "$pid" ] || fail "pid line $printed, want $pid"
}
stop() { kill "$pid"; wait "$pid" 2> /dev/null; pid=; exec 3<&-; }
# ask SIGNAL ANSWER: send it, wait for the answer line (the log lines are written before)
ask() {
	: > "$tmp/err"
	kill -"$1" "$pid" || fail "kill -$1"
	read -r got <&3 || fail "no answer to $1"
	case $got in $2) ;; *) fail "answer to $1: '$got', want '$2'" ;; esac
}
ctl() { "$KKCTL" -p "$pid" "$@"; }
has() { grep -Eq -- "$1" "$tmp/err" || fail "${2:-}no line matching '$1'"; }
hasnt() { ! grep -Eq -- "$1" "$tmp/err" || fail "${2:-}unexpected line matching '$1'"; }

# ---- (a) the syslog-style daemon ---------------------------------------------------------

echo "log_level info" > "$tmp/conf"
start "$SYS"
ask USR1 "served 1"
has '^adopt_syslog: info: served request 1$'
hasnt 'debug:' "level info: "

# its own level says debug: the debug lines come, no kkctl involved
echo "log_level debug" > "$tmp/conf"
ask HUP "reloaded debug"
ask USR1 "served 2"
has '^adopt_syslog: debug: parsing request 2$' "level debug: "
has '^adopt_syslog: debug: request 2: handled in 3 steps$' "level debug: "
has '^adopt_syslog: info: served request 2$'

# live, with kkctl: one site off, one decorated
ctl write dynamic_debug/control 'func parse_request -p' > /dev/null || fail "kkctl -p"
ctl write dynamic_debug/control 'func handle_request +mf' > /dev/null || fail "kkctl +mf"
ask USR1 "served 3"
hasnt 'parsing request 3' "after 'func parse_request -p': "
has '^adopt_syslog: debug: adopt_syslog:handle_request: request 3: handled in 3 steps$'

# a reload that keeps the level keeps what kkctl switched
ask HUP "reloaded debug"
ask USR1 "served 4"
hasnt 'parsing request 4' "a reload at the same level undid kkctl: "

# the daemon's own level, live: the parameter
[ "$(ctl read dynamic_debug/params/adopt_syslog.log_level)" = debug ] || fail "param read"
ctl write dynamic_debug/params/adopt_syslog.log_level info > /dev/null || fail "param write"
ask USR1 "served 5"
hasnt 'debug:' "log_level info through the parameter: "
has '^adopt_syslog: info: served request 5$'
! ctl write dynamic_debug/params/adopt_syslog.log_level loud > /dev/null 2>&1 || fail "bad level taken"
[ "$(ctl read dynamic_debug/params/adopt_syslog.log_level)" = info ] || fail "bad level changed it"

# the operator turns the sites on although the config says info: that stands
# across a reload at the same level, until the level changes
echo "log_level info" > "$tmp/conf"
ask HUP "reloaded info"
ctl write dynamic_debug/control 'module adopt_syslog +p' > /dev/null || fail "kkctl +p"
ask HUP "reloaded info"
ask USR1 "served 6"
has '^adopt_syslog: debug: parsing request 6$' "operator's +p after a reload: "
echo "log_level debug" > "$tmp/conf"
ask HUP "reloaded debug"
echo "log_level notice" > "$tmp/conf"
ask HUP "reloaded notice"
ask USR1 "served 7"
hasnt 'debug:' "level notice: "
stop

# started with debug in its config: on from the first request
echo "log_level debug" > "$tmp/conf"
start "$SYS"
ask USR1 "served 1"
has '^adopt_syslog: debug: parsing request 1$' "started at debug: "
stop

# ---- (b) the server with its own formatter -----------------------------------------------

echo "error_log stderr info" > "$tmp/conf"
start "$FMT"
ask USR1 "served 1"
has '^srv: \[info\] served /index.html #1$'
hasnt '\[debug\]' "error_log info: "

echo "error_log stderr info debug_http" > "$tmp/conf"
ask HUP "reloaded 4"
ask USR1 "served 2"
has '^srv: \[debug\] http request line: "GET /index.html"$' "debug_http: "
has '^srv: \[debug\] http output: 612 bytes$' "debug_http: "
hasnt 'event:|core:' "debug_http only: "
[ "$(ctl read dynamic_debug/params/srv.debug)" = 0x4 ] || fail "srv.debug: $(ctl read dynamic_debug/params/srv.debug)"

# live: a category by class, decorations on the with-descriptor sites
ctl write dynamic_debug/control 'class SRV_DEBUG_CORE +p' > /dev/null || fail "class +p"
ctl write dynamic_debug/control 'class SRV_DEBUG_HTTP +mfl' > /dev/null || fail "class +mfl"
ask USR1 "served 3"
has '^srv: \[debug\] core: request 3 freed$' "class SRV_DEBUG_CORE +p: "
has '^srv: \[debug\] srv:handle_request:[0-9]+: http output: 612 bytes$' "+mfl: "

# the _no_desc site cannot decorate: refused in one line, nothing changes
ctl read dynamic_debug/control > "$tmp/before" || fail "listing"
if ctl write dynamic_debug/control 'module srv +p; class SRV_DEBUG_EVENT +pm' > "$tmp/reply" 2>&1; then
	fail "decoration of a _no_desc site was accepted"
fi
grep -q "nothing was changed" "$tmp/reply" || fail "refusal: $(cat "$tmp/reply")"
[ "$(grep -c "dyndbg:" "$tmp/reply")" = 1 ] || fail "refusal is not one line: $(cat "$tmp/reply")"
ctl read dynamic_debug/control > "$tmp/after" || fail "listing"
cmp -s "$tmp/before" "$tmp/after" || fail "the refused write changed: $(diff "$tmp/before" "$tmp/after")"
ctl write dynamic_debug/control 'class SRV_DEBUG_EVENT +p' > /dev/null || fail "event +p"
ask USR1 "served 4"
has '^srv: \[debug\] event: accept #4$' "class SRV_DEBUG_EVENT +p: "

# the server's mask through its parameter: only the bits that change move
ctl write dynamic_debug/params/srv.debug 0 > /dev/null || fail "srv.debug 0"
ask USR1 "served 5"
hasnt 'http' "srv.debug 0: "
has '^srv: \[debug\] core: request 5 freed$' "srv.debug 0 kept kkctl's class: "
stop

# started with "debug": every category from the first request
echo "error_log stderr debug" > "$tmp/conf"
start "$FMT"
ask USR1 "served 1"
has '^srv: \[debug\] event: accept #1$' "started at debug: "
has '^srv: \[debug\] core: request 1 freed$' "started at debug: "
stop

# ---- why (b) does not use pr_debug(): -Wformat ---------------------------------------------

CC=${CC:-cc}
if command -v "$CC" > /dev/null 2>&1; then
	cat > "$tmp/wformat.c" <<'EOF'
#include <stddef.h>
#include <kernelkit/dynamic_debug.h>
typedef struct { size_t len; const char *data; } srv_str_t;
void f(srv_str_t *uri) { pr_debug("uri %V\n", uri); }
EOF
	"$CC" -I"$SRC/include" -Wformat -Werror -c -o "$tmp/wformat.o" "$tmp/wformat.c" \
		2> "$tmp/cc.err" && fail "pr_debug(\"%V\") compiled under -Wformat -Werror"
	grep -q "format" "$tmp/cc.err" || fail "no format diagnostic: $(cat "$tmp/cc.err")"
else
	echo "SKIP: pr_debug(\"%V\") under -Wformat -Werror not checked: no $CC"
fi

rm -rf "$tmp"
echo "adoption: both examples pass"
exit 0
