#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl against a running process: ls, files, read, write, exit codes, the
# abstract address (no file), a client running as nobody refused by kkctl
# itself, a squatter on another process's name refused before anything is
# sent, and nothing left behind at exit.
set -u
B=${KK_BUILD:?}
KKCTL=$B/kkctl
pid= sq= sl=
fail() {
	echo "FAIL: $*"
	for p in $pid $sq $sl; do kill "$p" 2>/dev/null; done
	rm -rf "$tmp"
	exit 1
}

tmp=$(mktemp -d /tmp/kk-cli.XXXXXX)
chmod 755 "$tmp"
mkfifo "$tmp/pidfifo"
# jump_label_prog has sites: its endpoint listens before main() prints the pid.
# The fallback build (KK_NO_JUMP_LABEL) has no sites, so nothing starts the
# endpoint by the lazy rule: ask for it at load.
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
env $control_env "$B/test/progs/jump_label_prog" > "$tmp/pidfifo" &
pid=$!
read -r printed < "$tmp/pidfifo" || fail "no pid line"
[ "$printed" = "$pid" ] || fail "pid line $printed, want $pid"
grep -q " @kernelkit/$pid\$" /proc/net/unix || fail "@kernelkit/$pid is not in /proc/net/unix"

"$KKCTL" ls | grep -Eq "^$pid +[0-9]+ +jump_label_prog\$" || fail "ls does not list $pid: $("$KKCTL" ls)"
"$KKCTL" -p "$pid" files | grep -q "static_keys" || fail "files"
out=$("$KKCTL" -p "$pid" read static_keys) || fail "read exit $?"
echo "$out" | grep -q '^# name enabled count sites module mode$' || fail "listing header: $out"
# The fallback build has no sites, so untouched keys are unknown to the registry.
if [ "${KK_TEST_LABEL:-default}" != fallback ]; then
	echo "$out" | grep -q '^target_key 0 0 1 jump_label_prog r-$' || fail "listing: $out"
	echo "$out" | grep -q '^target_true_key 1 1 1 jump_label_prog r-$' || fail "listing: $out"
fi

"$KKCTL" -p "$pid" read no/such/file 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "missing file: exit $rc"
grep -q "No such file or directory" "$tmp/err" || fail "message: $(cat "$tmp/err")"
echo hi | "$KKCTL" -p "$pid" write debug_objects/stats 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "read-only write: exit $rc"
grep -q "Permission denied" "$tmp/err" || fail "message: $(cat "$tmp/err")"
# a key the program did not export (kk_static_key_export()) is read-only
if [ "${KK_TEST_LABEL:-default}" != fallback ]; then
	echo "target_key on" | "$KKCTL" -p "$pid" write static_keys 2>"$tmp/err"; rc=$?
	[ $rc -eq 1 ] || fail "write of a key not exported: exit $rc"
	grep -q "Permission denied.*target_key.*read-only" "$tmp/err" || fail "message: $(cat "$tmp/err")"
fi
"$KKCTL" -p "$pid" 2>/dev/null; [ $? -eq 2 ] || fail "usage exit"
"$KKCTL" bogus 2>/dev/null; [ $? -eq 2 ] || fail "usage exit"
"$KKCTL" -p notapid read x 2>/dev/null; [ $? -eq 2 ] || fail "bad pid exit"
# --help and --version: exit 0, their text on stdout (a pipe to a pager or
# grep sees it), nothing on stderr.
for o in --help --version; do
	"$KKCTL" $o > "$tmp/out" 2> "$tmp/err"; rc=$?
	[ $rc -eq 0 ] || fail "$o: exit $rc"
	[ -s "$tmp/err" ] && fail "$o wrote to stderr: $(cat "$tmp/err")"
	case $o in
	--help) grep -q "usage:" "$tmp/out" || fail "--help: no usage on stdout: $(cat "$tmp/out")" ;;
	--version) grep -Eqx 'kkctl \(kernelkit\) [0-9]+\.[0-9]+.*' "$tmp/out" ||
		fail "--version on stdout: '$(cat "$tmp/out")'" ;;
	esac
done
"$KKCTL" -p 999999 read static_keys 2>"$tmp/err"; [ $? -eq 1 ] || fail "no endpoint exit"
grep -qx "kkctl: process 999999: no such process" "$tmp/err" || fail "message: $(cat "$tmp/err")"
# (a live process without one: that is what "no control endpoint" means)
"$KKCTL" -p $$ read static_keys 2>"$tmp/err"; [ $? -eq 1 ] || fail "no endpoint exit"
grep -qx "kkctl: process $$ has no control endpoint" "$tmp/err" || fail "message: $(cat "$tmp/err")"

# A foreign uid: anyone may connect to an abstract name, so kkctl itself
# refuses a process of another user before it sends anything (and the
# endpoint would refuse the request: test/unit/control_endpoint.c).
if [ "$(id -u)" -eq 0 ] && id nobody >/dev/null 2>&1 && command -v setpriv >/dev/null; then
	cp "$KKCTL" "$tmp/kkctl"
	chmod 755 "$tmp/kkctl"
	asnobody() { setpriv --reuid=nobody --regid=nogroup --clear-groups "$@"; }
	asnobody "$tmp/kkctl" -p "$pid" read static_keys >"$tmp/out" 2>"$tmp/err"; rc=$?
	[ $rc -eq 1 ] || fail "nobody: exit $rc"
	grep -q "refusing process $pid: it runs as uid 0" "$tmp/err" || fail "nobody message: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "nobody got data: $(cat "$tmp/out")"
	asnobody "$tmp/kkctl" ls > "$tmp/out" || fail "ls as nobody"
	grep -q "^$pid " "$tmp/out" && fail "ls as nobody lists a root process"
else
	echo "SKIP: the foreign-uid part (kkctl as nobody) not run: needs root, user nobody and setpriv"
fi

# A squatter on the name of a process that serves none: kkctl checks the
# socket's owner (SO_PEERCRED) and refuses before it sends a byte.
sleep 30 &
sl=$!
mkfifo "$tmp/sqfifo"
"$B/test/progs/control_squat" "$sl" > "$tmp/sqfifo" &
sq=$!
exec 5< "$tmp/sqfifo"
read -r ready <&5 || fail "squatter did not start"
[ "$ready" = ready ] || fail "squatter: $ready"
"$KKCTL" -p "$sl" write static_keys secret > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || fail "squatted: exit $rc"
grep -q "refusing @kernelkit/$sl: it is served by process $sq" "$tmp/err" || fail "squat message: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "squatted: output $(cat "$tmp/out")"
read -r got <&5 || fail "squatter: no report"
[ "$got" = "received 0" ] || fail "squatter $got"
wait "$sq"; sq=
exec 5<&-
kill "$sl"; wait "$sl" 2>/dev/null; sl=

"$KKCTL" -p "$pid" read static_keys >/dev/null || fail "owner no longer served"

kill "$pid"; wait "$pid"
grep -q " @kernelkit/$pid\$" /proc/net/unix && fail "@kernelkit/$pid still listed after exit"
pid=
rm -rf "$tmp"
echo "kkctl_cli: ok"
