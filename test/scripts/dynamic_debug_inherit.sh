#!/bin/sh
# SPDX-License-Identifier: MIT
# State follows the process (issue 12, item 4): queries applied live to a
# process are on in the processes it forks and in the images they exec, with
# every exec function; KK_DYNDBG_INHERIT=0, kk_dyndbg_set_inherit(0) and the
# control file dynamic_debug/inherit opt out; a failed exec changes nothing;
# a program without kernelkit gets one harmless entry; a live `kkctl write`
# on a running parent reaches the image its child execs; a set-user-ID image
# ignores the entry and starts from its own defaults.
set -u
B=${KK_BUILD:?}
P=$B/test/progs/dynamic_debug_inherit
KKCTL=$B/kkctl
ON='report_site=on other_site=off'
OFF='report_site=off other_site=off'
pid=
tmp=$(mktemp -d /tmp/kk-inherit.XXXXXX)
chmod 755 "$tmp"
fail() {
	echo "FAIL: $*"
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$tmp"
	exit 1
}
[ -x "$P" ] || { echo "not built: $P"; exit 77; }
# (the fallback build, KK_NO_JUMP_LABEL, tests a flag instead of a key: the same)
unset KK_DYNDBG KK_DYNDBG_INHERIT

out=$("$P" report) || fail "report exit $?"
[ "$out" = "$OFF" ] || fail "defaults: $out"

# fork without exec: memory is copied
out=$("$P" fork) || fail "fork exit $?"
[ "$out" = "$ON" ] || fail "forked child: $out"

# every exec function, and vfork and posix_spawn (a live +p on the parent)
for how in execv execve execvp execvpe execl execle execlp fexecve vfork \
	   posix_spawn posix_spawnp; do
	out=$("$P" api $how 2>&1) || fail "$how: exit $?: $out"
	[ "$out" = "$ON" ] || fail "$how: $out"
done

# the grandchild: an image that changed nothing passes on what it got
out=$("$P" api execv "$P" api execv 2>&1) || fail "grandchild exit $?: $out"
[ "$out" = "$ON" ] || fail "grandchild: $out"

# an exec that fails changes nothing (environ untouched), the next one works
out=$("$P" failexec 2>&1) || fail "failexec exit $?: $out"
[ "$out" = "$ON" ] || fail "after a failed exec: $out"

# a file without #! runs with /bin/sh (execvp, execlp; as glibc), state included
printf 'echo "sh: $KK_DYNDBG_INHERIT"\n' > "$tmp/noshebang"
chmod 755 "$tmp/noshebang"
for how in execvp execlp; do
	out=$("$P" api $how "$tmp/noshebang" 2>&1) || fail "$how script: exit $?: $out"
	[ "$out" = "sh: func report_site +p" ] || fail "$how script: $out"
done

# a state of 2 KiB to 32 KiB (copied to an mmap'ed area, not the stack)
out=$("$P" many 200 execv 2>&1) || fail "many 200: exit $?: $out"
[ "$out" = "$ON
$ON" ] || fail "a 8 KiB state: $out"
out=$("$P" many 200 vfork 2>&1) || fail "many 200 vfork: exit $?: $out"
[ "$out" = "$ON
$ON" ] || fail "a 8 KiB state, vfork: $out"
# over the 32 KiB cap: one warning, images start from their defaults
out=$("$P" many 2000 execv 2>"$tmp/err") || fail "many 2000: exit $?: $out"
[ "$out" = "$OFF
$OFF" ] || fail "over the cap: $out"
[ "$(grep -c 'over the 32768-byte limit of KK_DYNDBG_INHERIT' "$tmp/err")" = 1 ] ||
	fail "over the cap, stderr: $(cat "$tmp/err")"
# (the program's status first: a crash must not read as "0 entries")
"$P" many 2000 execv /usr/bin/env > "$tmp/env" 2>/dev/null || fail "many 2000 env: exit $?"
out=$(grep -c '^KK_DYNDBG_INHERIT=' "$tmp/env")
[ "$out" = 0 ] || fail "over the cap: $out entries passed"

# opting out
out=$(KK_DYNDBG_INHERIT=0 "$P" api execv 2>&1) || fail "env opt-out exit $?"
[ "$out" = "$OFF" ] || fail "KK_DYNDBG_INHERIT=0: $out"
out=$(KK_DYNDBG_INHERIT=0 "$P" api execv "$P" api execv 2>&1) || fail "env opt-out exit $?"
[ "$out" = "$OFF" ] || fail "KK_DYNDBG_INHERIT=0 is passed on to the grandchild: $out"
out=$("$P" api-off execv 2>&1) || fail "api opt-out exit $?"
[ "$out" = "$OFF" ] || fail "kk_dyndbg_set_inherit(0): $out"
out=$("$P" api-off posix_spawn 2>&1) || fail "api opt-out exit $?"
[ "$out" = "$OFF" ] || fail "kk_dyndbg_set_inherit(0), posix_spawn: $out"
# KK_DYNDBG_INHERIT=0 in the envp of one call: that image starts from its
# defaults; the next exec, with the process's own environment, inherits.
for how in execve execle execvpe fexecve posix_spawn posix_spawnp vfork:execve; do
	out=$("$P" api-envoff $how 2>&1) || fail "envp opt-out, $how: exit $?: $out"
	[ "$out" = "$OFF
$ON" ] || fail "KK_DYNDBG_INHERIT=0 in one $how's envp (want off, then on): $out"
done

# a program without kernelkit sees one entry, the state, one query a line
"$P" api execv /usr/bin/env > "$tmp/env" 2>&1 || fail "api execv env: exit $?: $(cat "$tmp/env")"
out=$(grep '^KK_DYNDBG' "$tmp/env") || fail "env: no entry"
[ "$out" = "KK_DYNDBG_INHERIT=func report_site +p" ] || fail "env sees: $out"
# (the entry is the last of the copy: the lines after it are its value)
# compacted: KK_DYNDBG first, an identical query applied again moves to the end
KK_DYNDBG='func other_site +p;func report_site +p' "$P" api execv /usr/bin/env > "$tmp/env" 2>&1 ||
	fail "compaction run: exit $?: $(cat "$tmp/env")"
out=$(grep -c '^KK_DYNDBG_INHERIT=' "$tmp/env")
[ "$out" = 1 ] || fail "$out KK_DYNDBG_INHERIT entries"
KK_DYNDBG='func report_site +p;func other_site -p' "$P" api execv /usr/bin/env > "$tmp/env" 2>&1 ||
	fail "compaction run: exit $?: $(cat "$tmp/env")"
out=$(sed -n '/^KK_DYNDBG_INHERIT=/,$p' "$tmp/env" | sed 's/^KK_DYNDBG_INHERIT=//' | tr '\n' '|')
[ "$out" = "func other_site -p|func report_site +p|" ] || fail "state not compacted: $out"

# A live `kkctl write` on a running parent, then fork and exec: on.  Then
# dynamic_debug/inherit 0 on another one: off.  The control file reads back
# what it printed.
control_run() {	# HOW, then the kkctl writes as "file value" pairs -> the report
	how=$1
	shift
	rm -f "$tmp/in" "$tmp/out"
	mkfifo "$tmp/in" "$tmp/out"
	"$P" wait "$how" < "$tmp/in" > "$tmp/out" 2>"$tmp/err" &
	pid=$!
	exec 8>"$tmp/in" 9<"$tmp/out"
	read -r ready ppid <&9 || fail "no ready line"
	[ "$ready $ppid" = "ready $pid" ] || fail "ready line: $ready $ppid"
	while [ $# -ge 2 ]; do
		printf '%s\n' "$2" | "$KKCTL" -p "$pid" write "$1" >/dev/null ||
			fail "kkctl write $1 '$2'"
		shift 2
	done
	echo go >&8
	read -r r1 r2 <&9 || fail "no report: $(cat "$tmp/err")"
	exec 8>&- 9<&-
	wait "$pid" || fail "parent exit $?: $(cat "$tmp/err")"
	pid=
	echo "$r1 $r2"
}
out=$(control_run execv dynamic_debug/control 'func report_site +p') || fail "$out"
[ "$out" = "$ON" ] || fail "kkctl write, then fork+exec: $out"
out=$(control_run posix_spawn dynamic_debug/control 'func report_site +p') || fail "$out"
[ "$out" = "$ON" ] || fail "kkctl write, then posix_spawn: $out"
out=$(control_run execv dynamic_debug/control 'func report_site +p' dynamic_debug/inherit 0) ||
	fail "$out"
[ "$out" = "$OFF" ] || fail "dynamic_debug/inherit 0: $out"

# the control file: reads back what it printed
mkfifo "$tmp/in2" "$tmp/out2"
"$P" wait execv < "$tmp/in2" > "$tmp/out2" 2>/dev/null &
pid=$!
exec 8>"$tmp/in2" 9<"$tmp/out2"
read -r ready ppid <&9 || fail "no ready line"
v=$("$KKCTL" -p "$pid" read dynamic_debug/inherit) || fail "read inherit"
[ "$v" = 1 ] || fail "dynamic_debug/inherit reads '$v'"
printf '%s\n' "$v" | "$KKCTL" -p "$pid" write dynamic_debug/inherit >/dev/null ||
	fail "writing back '$v'"
echo 0 | "$KKCTL" -p "$pid" write dynamic_debug/inherit >/dev/null || fail "write 0"
v=$("$KKCTL" -p "$pid" read dynamic_debug/inherit) || fail "read inherit"
[ "$v" = 0 ] || fail "dynamic_debug/inherit after 0 reads '$v'"
echo 2 | "$KKCTL" -p "$pid" write dynamic_debug/inherit >/dev/null 2>&1 && fail "2 accepted"
exec 8>&- 9<&-
wait "$pid"
pid=

# A fully static program (libkernelkit.a) interposes the exec family too
# (posix_spawn only in the shared library: see docs/dynamic_debug.md).
case ${KK_TEST_LABEL:-default} in
asan*) echo "SKIP: the static program (ASan links no static program)" ;;
*)
	src=${KK_SRC:-.}
	if ${CC:-cc} -D_GNU_SOURCE -I"$src/include" -I"$src/test" -O2 -static -o "$tmp/static" \
		"$src/test/progs/dynamic_debug_inherit.c" "$B/libkernelkit.a" -pthread -ldl \
		>"$tmp/static.log" 2>&1; then
		for how in execv execve execvp execl fexecve vfork; do
			out=$("$tmp/static" api $how 2>&1) || fail "static $how: exit $?: $out"
			[ "$out" = "$ON" ] || fail "static $how: $out"
		done
		out=$("$tmp/static" api execv "$P" report 2>&1) || fail "static -> dynamic: $out"
		[ "$out" = "$ON" ] || fail "static -> dynamic: $out"
	else
		echo "SKIP: the static program: it does not link here"
		tail -3 "$tmp/static.log"
	fi
	;;
esac

# A set-user-ID image ignores the entry (kk_getenv: secure_getenv semantics)
# and starts from its own defaults; the same image without the bit inherits.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1 &&
   nobody_gid=$(id -g nobody 2>/dev/null); then
	cp "$P" "$tmp/suid"
	cp "$P" "$tmp/plain"
	chown root:root "$tmp/suid" "$tmp/plain"
	chmod 4755 "$tmp/suid"
	chmod 755 "$tmp/plain"
	asnobody() { setpriv --reuid=nobody --regid="$nobody_gid" --clear-groups "$@"; }
	out=$(asnobody "$tmp/plain" api execv "$tmp/plain" report 2>&1) ||
		fail "plain: exit $?: $out"
	[ "$out" = "$ON" ] || fail "plain copy as nobody: $out"
	out=$(asnobody "$tmp/plain" api execv "$tmp/suid" report 2>&1) ||
		fail "setuid: exit $?: $out"
	if [ "$(stat -c %u "$tmp/suid")" = 0 ] && ! grep -q " $(df --output=target "$tmp" |
		tail -1) .*nosuid" /proc/mounts; then
		[ "$out" = "$OFF" ] || fail "setuid image inherited: $out"
	else
		echo "SKIP: the setuid image: $tmp is on a nosuid file system"
	fi
else
	echo "SKIP: the setuid image: not root, or no setpriv or user nobody"
fi

rm -rf "$tmp"
echo "PASS"
