#!/bin/sh
# SPDX-License-Identifier: MIT
# The control endpoint in a server's shape (issue 24, items 1 and 5):
#  1. started with fd 2 closed (a test harness's or supervisor's 2>&-), the
#     program puts its log on the lowest free number, 2, with dup2() while
#     the endpoint's thread waits: 20 starts, every dup2 succeeds (a thread
#     blocked in accept4() holds the lowest free number reserved in the
#     kernel, and dup2 onto it fails with EBUSY), and the log then gets the
#     site's line switched on through kkctl;
#  2. the program drops privileges (setgroups, setgid, setuid: a worker's
#     shape): the endpoint follows by itself, so root reaches it; the new uid
#     is refused while the kernel keeps the process non-dumpable (it may hold
#     root's secrets: ptrace is refused too), and reaches it once the program
#     calls prctl(PR_SET_DUMPABLE, 1) as nginx's workers do; a third uid is
#     refused by the endpoint itself (control_raw, which checks nothing:
#     -13 and the reason), and its refused +p switches nothing on;
#  3. the program chroots into an empty directory (no /proc there): kkctl
#     still reaches it, and +p still switches its site on.
# The program answers each command on a pipe ("quiet" waits until every
# other thread sleeps): no sleep orders anything.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root"; exit 77; }
command -v setpriv > /dev/null || { echo "skip: needs setpriv"; exit 77; }
U=$((3994000 + $$ % 1000)) U2=$((3995000 + $$ % 1000))
KK_GUEST_LIB_NAME=ident
. "${KK_SRC:?}/test/guest-lib.sh"
chmod 755 "$tmp"
guest_close_stderr=1	# start: the program, with fd 2 closed
show_on_fail() { [ -s "$tmp/log" ] && { echo "--- log"; cat "$tmp/log"; }; }

# as UID CMD...: CMD as that uid and gid, no groups
as() { u=$1; shift; setpriv --reuid="$u" --regid="$u" --clear-groups "$@"; }
# reached [UID]: kkctl (as UID, or root) reads from the program.  After a
# change of ids the endpoint makes its new socket on its own thread: poll.
reached() {
	i=0
	while :; do
		if [ $# -eq 1 ]; then
			as "$1" "$KKCTL" -p "$pid" read static_keys
		else
			"$KKCTL" -p "$pid" read static_keys
		fi > /dev/null 2> "$tmp/ctlerr" && return 0
		i=$((i + 1))
		[ $i -lt 100 ] || return 1
		sleep 0.05
	done
}

# refused WHAT REQUEST...: control_raw as uid $U2 sends REQUEST (its words
# joined by spaces); the endpoint's reply is -13 and the reason, nothing more.
refused() {
	what=$1; shift
	as "$U2" "$B/test/progs/control_raw" "$pid" "$*" > "$tmp/raw" 2> "$tmp/ctlerr" ||
		fail "$what: control_raw: $(cat "$tmp/ctlerr")"
	[ "$(head -n 1 "$tmp/raw")" = -13 ] || fail "$what: the endpoint did not refuse: $(cat "$tmp/raw")"
	grep -q "peer is neither uid $U nor root" "$tmp/raw" ||
		fail "$what: not the endpoint's refusal of a stranger: $(cat "$tmp/raw")"
	[ "$(wc -l < "$tmp/raw")" -eq 2 ] || fail "$what: more than the refusal: $(cat "$tmp/raw")"
}

# ---- 1. fd 2 closed at launch
: > "$tmp/log"
chmod 666 "$tmp/log"
bad=0
for n in $(seq 20); do
	t="start $n"
	start $control_env
	cmd quiet
	echo "lowfd $tmp/log" >&3
	IFS= read -r ans <&4 || fail "$t: no answer to lowfd"
	case $ans in
	"ok 2") ;;
	*) bad=$((bad + 1)); echo "start $n: $ans" ;;
	esac
	finish
done
[ $bad -eq 0 ] || fail "dup2 onto fd 2 failed in $bad of 20 starts"
t="fd 2, then +p"
start $control_env
cmd quiet
cmd "lowfd $tmp/log"
reached || fail "$t: kkctl: $(cat "$tmp/ctlerr")"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func guest_hello +p' > /dev/null 2> "$tmp/ctlerr" ||
	fail "$t: +p: $(cat "$tmp/ctlerr")"
cmd debug
grep -q '^guest hello 42$' "$tmp/log" || fail "$t: no pr_debug line on fd 2"
finish
echo "fd 2: 20 of 20 starts put their log on fd 2"

# ---- 2. the program drops privileges
: > "$tmp/log"
t="setuid"
start $control_env
reached || fail "$t: before: $(cat "$tmp/ctlerr")"
cmd "ids $U"
reached || fail "$t: root after the drop: $(cat "$tmp/ctlerr")"
as "$U" "$KKCTL" -p "$pid" read static_keys > /dev/null 2> "$tmp/ctlerr" &&
	fail "$t: uid $U reached the process while it was not dumpable"
grep -q 'not dumpable' "$tmp/ctlerr" || fail "$t: uid $U, not dumpable: $(cat "$tmp/ctlerr")"
cmd "dumpable 1"
reached "$U" || fail "$t: uid $U after the drop and PR_SET_DUMPABLE: $(cat "$tmp/ctlerr")"
cmd "lowfd $tmp/log"
[ "$ans" = "ok 2" ] || fail "$t: the log is not on fd 2: $ans"
# The third uid, through control_raw (no client-side check: kkctl's own
# refusal would hide whether the endpoint refuses): the endpoint answers -13
# and why, gives no file, and a write it refuses switches nothing on.
refused "$t: uid $U2 reads" read static_keys
refused "$t: uid $U2 writes +p" write dynamic_debug/control 'func guest_hello +p'
cmd debug
grep -q '^guest hello' "$tmp/log" && fail "$t: uid $U2's refused +p switched the site on"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func guest_hello +p' > /dev/null 2> "$tmp/ctlerr" ||
	fail "$t: +p: $(cat "$tmp/ctlerr")"
cmd debug
grep -q '^guest hello 42$' "$tmp/log" || fail "$t: no pr_debug line after the drop"
finish
echo "setuid: root and uid $U (once dumpable) reach the process after its drop, uid $U2 does not"

# ---- 3. the program chroots where there is no /proc
: > "$tmp/log"
mkdir "$tmp/jail"
t="chroot"
# (LeakSanitizer's exit check needs /proc, which the jail has not)
[ "${KK_TEST_LABEL:-default}" = asan+ubsan ] && control_env="$control_env ASAN_OPTIONS=detect_leaks=0"
start $control_env
# As in 1: the endpoint's thread opens files while it starts (its peer
# rules, /proc/self/uid_map), each on the lowest free number, 2 here; a
# log put on the lowest number then is not on 2 (tally run 29: no line).
cmd quiet
cmd "lowfd $tmp/log"
[ "$ans" = "ok 2" ] || fail "$t: the log is not on fd 2: $ans"
cmd "chroot $tmp/jail"
"$KKCTL" -p "$pid" write dynamic_debug/control 'func guest_hello +p' > /dev/null 2> "$tmp/ctlerr" ||
	fail "$t: +p: $(cat "$tmp/ctlerr")"
cmd debug
grep -q '^guest hello 42$' "$tmp/log" || fail "$t: no pr_debug line in the jail"
finish
echo "chroot: reached and switched in a jail without /proc"
