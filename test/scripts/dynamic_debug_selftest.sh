#!/bin/sh
# SPDX-License-Identifier: MIT
# Dynamic debug driven with kkctl against a running process, in the spirit of
# the kernel's tools/testing/selftests/dynamic_debug/dynamic_debug_selftest.sh:
# listing, flags, negation, errors and exit codes, the listing round trip,
# KK_DYNDBG at start-up and per-module queries at dlopen.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
TARGET=$B/test/progs/dynamic_debug_target
LIB=$B/test/lib/libdynamic_debug_mod.so
[ -x "$TARGET" ] && [ -x "$KKCTL" ] && [ -f "$LIB" ] || { echo "not built"; exit 77; }

tmp=$(mktemp -d /tmp/kk-dd-self.XXXXXX)
mkfifo "$tmp/pidfifo"
pid=
fail() {
	echo "FAIL: $*"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
	exit 1
}

start() {	# start [ENV=VAL...]: run the target, set $pid
	env "$@" "$TARGET" "$LIB" > "$tmp/pidfifo" 2> "$tmp/stderr" &
	pid=$!
	# The target prints its pid once its files exist and its endpoint listens.
	read -r printed < "$tmp/pidfifo" || fail "the target printed no pid: $(cat "$tmp/stderr")"
	[ "$printed" = "$pid" ] || fail "pid line $printed, want $pid"
}
stop() { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }

ctl() { "$KKCTL" -p "$pid" "$@"; }
ddcmd() { ctl write dynamic_debug/control "$1" > "$tmp/reply" 2> "$tmp/err"; }
listing() { ctl read dynamic_debug/control; }
# check_match_ct PATTERN COUNT: COUNT listing lines match PATTERN (grep -E)
check_match_ct() {
	n=$(listing | grep -Ec -- "$1")
	[ "$n" -eq "$2" ] || fail "expected $2 lines matching '$1', got $n"
}

start

# ---- the listing
listing > "$tmp/l0" || fail "read"
head -n 1 "$tmp/l0" | grep -qx '# filename:lineno \[module\]function flags format' || fail "header: $(head -n 1 "$tmp/l0")"
check_match_ct '\[dynamic_debug_target\]target_alpha =_ ' 2
check_match_ct '\[dynamic_debug_target\]target_beta =_ "target beta \\"quoted\\"\\t%d\\n"$' 1
check_match_ct '\[dynamic_debug_mod\]ddm_plain =_ ' 3
check_match_ct ' class:DDM_' 13

# ---- flags, per-query counts
ddcmd 'module dynamic_debug_target +p' || fail "+p: $(cat "$tmp/err")"
grep -q 'query 1 "module dynamic_debug_target +p": matched 3 changed 3' "$tmp/reply" || fail "reply: $(cat "$tmp/reply")"
check_match_ct '\[dynamic_debug_target\].* =p ' 3
ddcmd 'module dynamic_debug_target +p' || fail "+p again"
grep -q 'matched 3 changed 0' "$tmp/reply" || fail "second +p: $(cat "$tmp/reply")"
ddcmd 'func target_alpha +mflt' || fail "+mflt"
check_match_ct '\[dynamic_debug_target\]target_alpha =pmflt ' 2
ddcmd 'func target_alpha -mflt' || fail "-mflt"
ctl write target/run > /dev/null || fail "run"
grep -q '^target alpha 1$' "$tmp/stderr" || fail "message: $(cat "$tmp/stderr")"
grep -q '^target beta "quoted"	2$' "$tmp/stderr" || fail "message: $(cat "$tmp/stderr")"
ddcmd 'func target_alpha =pmf' || fail "=pmf"
ctl write target/run > /dev/null
grep -q '^dynamic_debug_target:target_alpha: target alpha 1$' "$tmp/stderr" || fail "decorated: $(cat "$tmp/stderr")"
ddcmd '-p' || fail "-p"
check_match_ct ' =p' 0
check_match_ct ' =mf ' 2
ddcmd '=_' || fail "=_"
check_match_ct ' =_ ' "$(($(listing | wc -l) - 1))"

# ---- negation (the seed's module !virtio* +p)
ddcmd 'module !dynamic_debug_mod* +p' || fail "negation"
check_match_ct '\[dynamic_debug_target\].* =p ' 3
check_match_ct '\[dynamic_debug_mod\].* =p ' 0
ddcmd '-p; module !dynamic_debug_target +p' || fail "negation 2"
check_match_ct '\[dynamic_debug_target\].* =p ' 0
check_match_ct '\[dynamic_debug_mod\].* =p ' 3
ddcmd 'func !target_alpha module dynamic_debug_target +p' || fail "func negation"
check_match_ct '\[dynamic_debug_target\]target_beta =p ' 1
check_match_ct '\[dynamic_debug_target\]target_alpha =_ ' 2
ddcmd 'format !^ddm module dynamic_debug_mod -p' || fail "format negation"
grep -q 'matched 0 ' "$tmp/reply" || fail "format negation: $(cat "$tmp/reply")"
ddcmd '-p' || fail "-p"

# ---- errors: exit 1, the kernel's message, nothing changed
listing > "$tmp/before"
ddcmd 'module dynamic_debug_target +p; nosuch keyword +p'; rc=$?
[ $rc -eq 1 ] || fail "bad query: exit $rc"
grep -q 'unknown keyword "nosuch"' "$tmp/err" || fail "message: $(cat "$tmp/err")"
grep -q 'Invalid argument' "$tmp/err" || fail "errno: $(cat "$tmp/err")"
listing | cmp -s - "$tmp/before" || fail "a failed write changed something"
ddcmd '+k' && fail "+k accepted"
grep -q "unknown flag 'k'" "$tmp/err" || fail "message: $(cat "$tmp/err")"
ddcmd 'line 9-2 +p' && fail "bad range accepted"
grep -q 'last-line:2 < 1st-line:9' "$tmp/err" || fail "message: $(cat "$tmp/err")"
awk 'BEGIN { for (i = 0; i < 4200; i++) printf " "; printf "+p" }' > "$tmp/big"
ctl write dynamic_debug/control < "$tmp/big" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "4202-byte write: exit $rc"
grep -q 'Argument list too long' "$tmp/err" || fail "E2BIG: $(cat "$tmp/err")"
listing | cmp -s - "$tmp/before" || fail "a refused write changed something"

# ---- the round trip: set a mixed state, save, clear, write the listing back
ddcmd 'func target_alpha format again =pmfslt; func target_beta =p; module dynamic_debug_mod format ratelimited =pl; class DDM_VBL +ft' || fail "state"
listing > "$tmp/saved"
ddcmd '=_' || fail "clear"
listing | cmp -s - "$tmp/saved" && fail "clear changed nothing"
# each write stays below 4096 bytes: 40 listing lines at a time
split -l 40 "$tmp/saved" "$tmp/chunk."
for c in "$tmp"/chunk.*; do
	ctl write dynamic_debug/control < "$c" > /dev/null 2> "$tmp/err" || fail "write back: $(cat "$tmp/err")"
done
listing | cmp -s - "$tmp/saved" || { listing | diff "$tmp/saved" - | head; fail "round trip"; }
stop

# ---- KK_DYNDBG before main(), module load queries at start-up and at dlopen
start KK_DYNDBG='func target_beta +p; module dynamic_debug_mod format two +p' KK_DYNDBG_MOD_dynamic_debug_mod='format one +pf'
check_match_ct '\[dynamic_debug_target\]target_beta =p ' 1
check_match_ct '\[dynamic_debug_target\]target_alpha =_ ' 2
check_match_ct '\[dynamic_debug_mod\]ddm_plain =pf "ddm plain one' 1
# the target dlopens the library in main(): KK_DYNDBG does not reach it
check_match_ct '\[dynamic_debug_mod\]ddm_plain =_ "ddm plain two' 1
ddcmd '-pf' || fail "-pf"
ctl write target/reload > /dev/null || fail "reload"
# at dlopen the module's queries apply again; KK_DYNDBG (start-up only) does not
check_match_ct '\[dynamic_debug_mod\]ddm_plain =pf "ddm plain one' 1
check_match_ct '\[dynamic_debug_mod\]ddm_plain =_ "ddm plain two' 1
check_match_ct '\[dynamic_debug_target\]target_beta =_ ' 1
stop

# the kernel-style spelling of a module parameter, and a bad KK_DYNDBG
start 'dynamic_debug_mod.dyndbg=' KK_DYNDBG='bogus query +p'
check_match_ct '\[dynamic_debug_mod\]ddm_plain =p ' 3
check_match_ct ' =p' 3
grep -q 'KK_DYNDBG ignored' "$tmp/stderr" || fail "bad KK_DYNDBG: $(cat "$tmp/stderr")"
grep -q 'unknown keyword "bogus"' "$tmp/stderr" || fail "bad KK_DYNDBG: $(cat "$tmp/stderr")"
stop

rm -rf "$tmp"
echo "dyndbg selftest: ok"
