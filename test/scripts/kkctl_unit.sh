#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -u UNIT and --user-unit UNIT select a systemd unit's processes by
# their cgroup, and -M ID finds a container that a cgroupfs manager named
# "<engine>-<id>" (podman: libpod-<id>, no ".scope") (issue 40, items 2, 6).
#
# No systemd runs as pid 1 here, so the cgroups are made by hand where
# systemd would make them, in the hierarchy kkctl reads (the unified one,
# else systemd's named v1 hierarchy):
#   S  /system.slice/kku-PID.service                 (a system unit)
#   U  /user.slice/user-0.slice/user@0.service/app.slice/kku-PID.service
#      (a unit of root's user manager, with the same name)
#   O  /user.slice/user-4242.slice/user@4242.service/app.slice/kku-PID.service
#      (another user's)
#   N  not in a unit
#   C  in a pid and network namespace, in /libpod_parent/libpod-<64 hex>
#   K  the same, where a Kubernetes node's systemd cgroup driver puts a
#      container: a path of 191 bytes, /kubepods.slice/.../cri-containerd-<id>.scope
# Checked: -u kku-PID (and kku-PID.service) is S alone; --user-unit is U
# alone (root's own manager; O is another user's); -u with -n narrows;
# -u system.slice is S; a unit with no process is one line, exit 1, and a
# bad name a usage error; -M <64 hex> is C (before: "no process ... in that
# container"), and -M <K's 64 hex> is K (before: the path was cut at 159
# bytes, before the id).
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (cgroups made by hand)"; exit 77; }
B=${KK_BUILD:?}
KKCTL=$B/kkctl
PROG=$B/test/progs/jump_label_prog
tmp=$(mktemp -d /tmp/kk-unit.XXXXXX)
pids= cgs= C=
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
cleanup() {
	# C is no child of ours (unshare's): killed, then waited for by its cgroup
	for p in $C ${K:-} $pids; do kill -9 "$p" 2>/dev/null; done
	for p in $pids; do wait "$p" 2>/dev/null; done
	# leaves first: a cgroup with children cannot go; one whose last
	# process is still exiting cannot either (up to 10 s)
	for c in $cgs; do echo "$c"; done | sort -r | while read -r c; do
		i=0
		while ! rmdir "$c" 2>/dev/null && [ -d "$c" ] && [ $i -lt 1000 ]; do
			i=$((i + 1))
			sleep 0.01
		done
	done
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

if grep -q '^cgroup2 /sys/fs/cgroup cgroup2' /proc/mounts; then
	base=/sys/fs/cgroup
elif grep -q ' /sys/fs/cgroup/systemd cgroup .*name=systemd' /proc/mounts &&
     [ "$(sed -n 's/^0:://p' /proc/self/cgroup)" = / ] || ! grep -q '^0::' /proc/self/cgroup; then
	base=/sys/fs/cgroup/systemd
else
	echo "skip: no cgroup hierarchy kkctl reads that we can make cgroups in"
	exit 77
fi
mkcg() {	# mkcg PATH: made, with its parents, and removed at exit
	p=$base
	for part in $(echo "$1" | tr '/' ' '); do
		p=$p/$part
		[ -d "$p" ] && continue
		mkdir "$p" || { echo "skip: cannot make cgroup $p"; exit 77; }
		cgs="$cgs $p"
	done
}
# start VAR CGROUP [unshare...]: jump_label_prog in CGROUP (by a shell that
# moves itself there, then execs), its pid in VAR once it serves
start() {
	var=$1 cg=$2
	shift 2
	mkcg "$cg"
	mkfifo "$tmp/f.$var"
	sh -c 'echo $$ > "$1/cgroup.procs" && shift && exec "$@"' sh "$base$cg" \
		"$@" env $control_env "$PROG" > "$tmp/f.$var" &
	pids="$pids $!"
	read -r line < "$tmp/f.$var" || fail "jump_label_prog in $cg did not start"
	eval "$var=\$!"
}
u=kku-$$
id=$(printf '%064x' $$)
start S /system.slice/$u.service
grep -q "/system.slice/$u.service\$" "/proc/$S/cgroup" || { echo "skip: the cgroup move did not show"; exit 77; }
start U /user.slice/user-0.slice/user@0.service/app.slice/$u.service
start O /user.slice/user-4242.slice/user@4242.service/app.slice/$u.service
start N ""
if unshare -n -p -f true 2>/dev/null; then
	# the shell that moves itself execs unshare: its child is the program
	start C0 /libpod_parent/libpod-$id unshare -n -p -f --mount-proc
	C=$(pgrep -P "$C0" -x jump_label_prog)
	kid=$(printf '%064x' $((1000000 + $$)))
	pod=kubepods-burstable-pod$(printf '%08x_%04x_4000_8000_%012x' $$ 1 $$)
	start K0 /kubepods.slice/kubepods-burstable.slice/$pod.slice/cri-containerd-$kid.scope \
		unshare -n -p -f --mount-proc
	K=$(pgrep -P "$K0" -x jump_label_prog)
else
	C= K=
	echo "SKIP: -M with a cgroupfs-named container not checked: cannot unshare"
fi

# pids that answered a --json read, sorted
answered() { sed -n 's/^{"pid":\([0-9]*\),.*"ok":true.*/\1/p' "$tmp/out" | sort -n | tr '\n' ' '; }
sel() {	# sel WHAT WANT ARGS...: kkctl ARGS --json read static_keys answers WANT's pids
	what=$1 want=$2
	shift 2
	"$KKCTL" "$@" --json read static_keys > "$tmp/out" 2> "$tmp/err" ||
		fail "$what: exit $?: $(cat "$tmp/err")"
	[ "$(answered)" = "$want " ] || fail "$what: answered by $(answered)(want $want; S $S U $U O $O N $N)"
}
sel "-u $u" "$S" -u "$u"
sel "-u $u.service" "$S" -u "$u.service"
sel "--user-unit $u" "$U" --user-unit "$u"
sel "-u $u --user-unit $u" "$(printf '%s\n' "$S" "$U" | sort -n | tr '\n' ' ' | sed 's/ $//')" \
	-u "$u" --user-unit "$u"
sel "-u $u -n jump_label_prog" "$S" -u "$u" -n jump_label_prog
"$KKCTL" -u "$u" -n no_such_name_kk read static_keys > "$tmp/out" 2> "$tmp/err" && fail "-u -n other name: exit 0"
grep -qx "kkctl: no process with a control endpoint in that unit matches" "$tmp/err" ||
	fail "-u -n other name: $(cat "$tmp/err")"
"$KKCTL" -u "kku-none-$$" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
	grep -qx "kkctl: no process with a control endpoint in that unit" "$tmp/err" ||
	fail "a unit with no process: exit $rc: $(cat "$tmp/err")"
"$KKCTL" -u "a/b" read static_keys 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -qx "kkctl: bad unit name: 'a/b'" "$tmp/err" || fail "bad unit name: exit $rc: $(cat "$tmp/err")"
# a slice holds its units: system.slice has S, and maybe other processes of
# this machine (not ours): S among them, and not U, O or N
"$KKCTL" --tree $$ -u system.slice --json read static_keys > "$tmp/out" 2> "$tmp/err" ||
	fail "-u system.slice: $(cat "$tmp/err")"
[ "$(answered)" = "$S " ] || fail "-u system.slice within our tree: $(answered)"
echo "kkctl -u and --user-unit: ok"

if [ -n "$C" ]; then
	sel "-M <64 hex>" "$C" -M "$id"
	sel "-M <64 hex> of a kubepods path of 191 bytes" "$K" -M "$kid"
	echo "kkctl -M with a cgroupfs-named container: ok"
fi
echo "kkctl_unit: ok"
