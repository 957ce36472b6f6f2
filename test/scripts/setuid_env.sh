#!/bin/sh
# SPDX-License-Identifier: MIT
# A set-user-ID program honours none of kernelkit's KK_* settings (they are
# read with secure_getenv semantics), while the same binary without the
# set-user-ID bit honours them all.  Runs test/progs/kk_env_state as user
# nobody, once from a setuid-root copy and once from a plain copy, with the
# same environment, and compares what it reports.  Needs root (to make the
# setuid copy); skipped otherwise, and on a nosuid file system.
#
# KK_SETUID_PENDING may list state lines whose settings are known to be
# read with plain getenv(): for those a setuid run that honours the setting
# is reported, not failed.  Every facility reads through kk_getenv() now, so
# the list is empty.
set -u
B=${KK_BUILD:-build}
prog=$B/test/progs/kk_env_state
pending=${KK_SETUID_PENDING-}

[ -x "$prog" ] || { echo "not built: $prog"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "not root: cannot make a setuid-root copy"; exit 77; }
command -v setpriv >/dev/null 2>&1 || { echo "no setpriv"; exit 77; }
nobody_gid=$(id -g nobody 2>/dev/null) || { echo "no user nobody"; exit 77; }

tmp=$(mktemp -d /tmp/kk-setuid.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$prog" "$tmp/suid"
cp "$prog" "$tmp/plain"
chown root:root "$tmp/suid" "$tmp/plain"
chmod 4755 "$tmp/suid"
chmod 755 "$tmp/plain"

run() {	# binary -> stdout of kk_env_state, run as nobody with every setting
	env -u XDG_RUNTIME_DIR \
		KK_DYNDBG='+p' KK_DEBUG_OBJECTS=1 KK_DEBUG_OBJECTS_POLICY=base \
		KK_CONTROL=0 KK_PANIC_TIMEOUT=7 \
		KK_SHAZPTR_SKIP_SELF_SCAN=1 \
		timeout 600 setpriv --reuid=nobody --regid="$nobody_gid" --clear-groups "$1" \
		2>"$tmp/err"
}

get() {	# name output -> value
	printf '%s\n' "$2" | sed -n "s/^$1=//p"
}

fail=0
suid=$(run "$tmp/suid") || { echo "FAIL: setuid run exited $?"; cat "$tmp/err"; exit 1; }
plain=$(run "$tmp/plain") || { echo "FAIL: plain run exited $?"; cat "$tmp/err"; exit 1; }
echo "setuid:"; printf '  %s\n' $suid
echo "plain:";  printf '  %s\n' $plain

if [ "$(get secure "$suid")" != 1 ]; then
	echo "the setuid bit had no effect (nosuid mount?): skipped"
	exit 77
fi
[ "$(get secure "$plain")" = 0 ] || { echo "FAIL: plain run is secure"; exit 1; }

# name, value when honoured, test for "honoured" on a value
check() {	# name honoured-pattern
	name=$1 pat=$2
	p=$(get "$name" "$plain") s=$(get "$name" "$suid")
	case $p in
	$pat) ;;
	*) echo "FAIL: $name=$p: the plain run did not honour its setting"; fail=1; return ;;
	esac
	case $s in
	$pat)
		case " $pending " in
		*" $name "*) echo "pending: $name=$s: honoured by the setuid run (read with getenv)" ;;
		*) echo "FAIL: $name=$s: the setuid run honoured its setting"; fail=1 ;;
		esac ;;
	*) echo "ok: $name: plain $p, setuid $s" ;;
	esac
}

check dyndbg 1
check debug_objects 1
check odebug_policy base
# The program has pr_debug sites, so without KK_CONTROL=0 its endpoint starts.
check control none
check panic_timeout 7
check shazptr_skip 1
exit $fail
