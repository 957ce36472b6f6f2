#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl -u UNIT and --user-unit UNIT against a real systemd (issue 40, item 2):
# the host's own systemd booted in a container (systemd-nspawn --directory=/
# --volatile=yes), its units started with systemd-run, kkctl run on the host.
#
# In the container (machine kk-unit-PID), each a forking mp_server (a master
# and one worker, both with an endpoint) from the build tree, bound read-only
# at its own path:
#   D  kk-demo-PID.service                  a system unit
#   O  kk-other-PID.service                 another system unit, same program
#   I  kk-inst-PID@1.service                a template's instance, in
#                                           system-kk\x2dinst\x2dPID.slice
#   G  kk-long-PID-000...0.service          a name of 249 characters: its
#                                           cgroup path is longer than 255
#   U  kk-demo-PID.service of root's user manager (user@0.service/app.slice)
# Checked, each an exact set of pids: -M NAME -u kk-demo-PID (and .service,
# and without -M) is D; --user-unit is U; -u with -n narrows the 10
# mp_servers to D; the escaped slice and the instance are I; the long name is
# G; -u system.slice is D, O, I and G (not U); a write through -u lands in D
# alone; a unit with no process, with -M and without, is one line and exit 1.
#
# No systemd-machined runs on the host here (pid 1 is not systemd), so
# `systemctl -M` and `machinectl` cannot reach the machine: commands run in
# it by nsenter into its pid 1, and it is stopped by SIGTERM to nspawn
# (which halts it), SIGKILL after 60 s.
set -u
[ "$(id -u)" -eq 0 ] || { echo "skip: needs root (systemd-nspawn)"; exit 77; }
command -v systemd-nspawn > /dev/null ||
	{ echo "skip: no systemd-nspawn (apt-get install systemd-container)"; exit 77; }
command -v nsenter > /dev/null || { echo "skip: no nsenter"; exit 77; }
B=$(cd "${KK_BUILD:?}" && pwd)
KKCTL=$B/kkctl
PROG=$B/test/progs/mp_server
M=kk-unit-$$
tmp=$(mktemp -d /tmp/kk-unit-systemd.XXXXXX)
NSPAWN= L= cgs=
setenv=
[ "${KK_TEST_LABEL:-default}" = fallback ] && setenv=--setenv=KK_CONTROL=1

# The cgroup hierarchies nspawn and the container's systemd write: the unified
# one at /sys/fs/cgroup, or systemd's named v1 one and the hybrid unified one.
# nspawn is started in a cgroup of its own in each (it makes payload/ and
# supervisor/ in the cgroup it runs in: two runs must not share one).
for h in /sys/fs/cgroup /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do
	[ -f "$h/cgroup.procs" ] && cgs="$cgs $h/$M"
done
[ -n "$cgs" ] || { echo "skip: no cgroup hierarchy under /sys/fs/cgroup"; exit 77; }
cgs_gone() {	# removed, leaves first, once their processes have exited
	for c in $cgs; do
		[ -d "$c" ] || continue
		i=0
		until find "$c" -depth -type d -exec rmdir {} + 2>/dev/null ||
		      [ ! -d "$c" ] || [ $i -ge 300 ]; do
			i=$((i + 1))
			sleep 0.1
		done
		[ -d "$c" ] && echo "cleanup: could not remove cgroup $c"
	done
}
gone() {	# gone PID TENTHS: did PID exit within TENTHS tenths of a second?
	i=0
	while kill -0 "$1" 2>/dev/null; do
		[ $i -ge "$2" ] && return 1
		i=$((i + 1))
		sleep 0.1
	done
}
cleanup() {
	if [ -n "$NSPAWN" ]; then
		kill -TERM "$NSPAWN" 2>/dev/null	# nspawn halts the machine
		if ! gone "$NSPAWN" 600; then
			echo "cleanup: the machine did not halt in 60 s; killed"
			[ -n "$L" ] && kill -KILL "$L" 2>/dev/null
			kill -KILL "$NSPAWN" 2>/dev/null
		fi
		wait "$NSPAWN" 2>/dev/null
	fi
	cgs_gone
	rm -rf "/run/systemd/nspawn/propagate/$M" "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }
in_m() { nsenter -t "$L" -a "$@"; }	# run a command in the machine

for c in $cgs; do mkdir "$c" || { echo "skip: cannot make cgroup $c"; exit 77; }; done
# The firstboot wizard would ask on the console: off.  The machine's /etc is
# empty (--volatile=yes): the host's PAM files let user@0.service start.
# What the presets would start and is of no use here is masked.
sh -c 'for c in $1; do echo $$ > "$c/cgroup.procs" || exit 1; done; shift; exec "$@"' sh "$cgs" \
	systemd-nspawn --quiet --directory=/ --volatile=yes --machine="$M" \
	--register=no --keep-unit --private-network --bind-ro="$B" \
	--bind-ro=/etc/pam.d --bind-ro=/etc/security --boot systemd.firstboot=off \
	systemd.mask=ssh.socket systemd.mask=ssh.service \
	systemd.mask=postgresql.service systemd.mask=lttng-sessiond.service \
	< /dev/null > "$tmp/nspawn.log" 2>&1 &
NSPAWN=$!
# its pid 1: the child of nspawn that is pid 1 in its own pid namespace
i=0
while [ -z "$L" ]; do
	for p in $(pgrep -P "$NSPAWN"); do
		grep -q '^NSpid:.*[[:space:]]1$' "/proc/$p/status" 2>/dev/null && L=$p
	done
	[ -n "$L" ] && break
	kill -0 "$NSPAWN" 2>/dev/null && [ $i -lt 600 ] ||
		{ echo "skip: systemd-nspawn did not start a machine: $(tail -n 3 "$tmp/nspawn.log" | tr '\n' ' ')"; exit 77; }
	i=$((i + 1))
	sleep 0.1
done
# booted: systemd's state is running or degraded (a unit failed), not
# initializing or starting (a hang guard of 300 s)
i=0
until state=$(in_m systemctl is-system-running 2>/dev/null); [ "$state" = running ] || [ "$state" = degraded ]; do
	kill -0 "$NSPAWN" 2>/dev/null && [ $i -lt 3000 ] ||
		{ echo "skip: the machine did not boot (state '$state'): $(tail -n 3 "$tmp/nspawn.log" | tr '\n' ' ')"; exit 77; }
	i=$((i + 1))
	sleep 0.1
done

# run KEY UNIT [--user]: a forking mp_server as UNIT (of root's user manager
# with --user), its inside pids (master, worker) in $tmp/KEY.pids once its
# master says every worker is ready
run() {
	key=$1 unit=$2 dir=/run
	shift 2
	[ "${1:-}" = --user ] && dir=/run/user/0
	in_m env XDG_RUNTIME_DIR=/run/user/0 systemd-run "$@" --quiet --unit="$unit.service" $setenv \
		-p StandardOutput="file:$dir/$unit.out" "$PROG" -p 0 -w 1 ||
		fail "systemd-run $* --unit=$unit.service: exit $?"
	i=0
	until [ "$(in_m env XDG_RUNTIME_DIR=/run/user/0 systemctl "$@" is-active "$unit.service")" = active ] &&
	      grep -q '^ready ' "/proc/$L/root$dir/$unit.out" 2>/dev/null; do
		[ $i -lt 600 ] || fail "$unit.service: not active and ready in 60 s"
		i=$((i + 1))
		sleep 0.1
	done
	# "ready MASTER PORT GEN WORKER"
	sed -n 's/^ready \([0-9]*\) [0-9]* [0-9]* \([0-9]*\)$/\1 \2/p' "/proc/$L/root$dir/$unit.out" |
		sorted > "$tmp/$key.pids"
}
sorted() { tr ' ' '\n' | grep . | sort -n | tr '\n' ' '; }
D=kk-demo-$$
run D "$D"
run O "kk-other-$$"
run I "kk-inst-$$@1"
# a long name (249 characters with .service; systemd allows 255): its cgroup
# path, seen from the host, is longer than 255
long=kk-long-$$-$(printf '%0*d' $((232 - ${#$})) 0)
run G "$long"
user=
if in_m systemctl start user@0.service 2> "$tmp/user.err"; then
	run U "$D" --user
	user=1
else
	echo "SKIP: --user-unit not checked: user@0.service did not start in the machine: $(tail -n 1 "$tmp/user.err")"
fi
pids() { cat "$tmp/$1.pids"; }

# the inside pids that answered a --json read, sorted
answered() { sed -n 's/^{"pid":[0-9]*,.*"pid_inside":\([0-9]*\),.*"ok":true.*/\1/p' "$tmp/out" | sort -n | tr '\n' ' '; }
sel() {	# sel WHAT WANT ARGS...: kkctl ARGS --json read static_keys answers the inside pids WANT
	what=$1 want=$2
	shift 2
	"$KKCTL" "$@" --json read static_keys > "$tmp/out" 2> "$tmp/err" ||
		fail "$what: exit $?: $(cat "$tmp/err")"
	[ "$(answered)" = "$want" ] || fail "$what: answered by $(answered)(want $want)"
}
sel "-M $M -u $D" "$(pids D)" -M "$M" -u "$D"
sel "-M $M -u $D.service" "$(pids D)" -M "$M" -u "$D.service"
sel "-u $D" "$(pids D)" -u "$D"
sel "-M $M -u $D -n mp_server" "$(pids D)" -M "$M" -u "$D" -n mp_server
sel "-M $M -u kk-inst-$$@1" "$(pids I)" -M "$M" -u "kk-inst-$$@1"
sel "-M $M -u system-kk\\x2dinst\\x2d$$.slice" "$(pids I)" -M "$M" -u "system-kk\\x2dinst\\x2d$$.slice"
sel "-M $M -u kk-long-$$-0...0" "$(pids G)" -M "$M" -u "$long"
sel "-M $M -u system.slice" "$(cat "$tmp/D.pids" "$tmp/O.pids" "$tmp/I.pids" "$tmp/G.pids" | sorted)" \
	-M "$M" -u system.slice
[ -n "$user" ] && sel "-M $M --user-unit $D" "$(pids U)" -M "$M" --user-unit "$D"

# a write through -u lands in the unit's processes and nowhere else
"$KKCTL" -M "$M" -u "$D" write dynamic_debug/control 'func handle_request +p' > "$tmp/out" 2> "$tmp/err" ||
	fail "-u $D write: exit $?: $(cat "$tmp/err")"
[ "$(grep -c '": matched 1 changed 1$' "$tmp/out")" -eq 2 ] || fail "-u $D write: $(cat "$tmp/out")"
"$KKCTL" -M "$M" -n mp_server read dynamic_debug/control > "$tmp/out" 2> "$tmp/err" ||
	fail "-n mp_server read: exit $?: $(cat "$tmp/err")"
[ "$(grep -c 'handle_request =p ' "$tmp/out")" -eq 2 ] &&
	[ "$(grep -c 'handle_request =_ ' "$tmp/out")" -eq $((${user:+2} + 6)) ] ||
	fail "after -u $D write, the flags of every mp_server: $(cat "$tmp/out")"

# none: one line, exit 1 (with -M: the container has processes, none in the unit)
none() {	# none WHAT LINE ARGS...
	what=$1 line=$2
	shift 2
	"$KKCTL" "$@" read static_keys > "$tmp/out" 2> "$tmp/err"; rc=$?
	[ $rc -eq 1 ] && [ ! -s "$tmp/out" ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] &&
		grep -qx "kkctl: $line" "$tmp/err" || fail "$what: exit $rc: $(cat "$tmp/err")"
}
none "-u kk-none-$$" "no process with a control endpoint in that unit" -u "kk-none-$$"
none "-M $M -u kk-none-$$" "no process with a control endpoint in that container matches" \
	-M "$M" -u "kk-none-$$"
none "-M $M -u $D -n jump_label_prog" "no process with a control endpoint in that container matches" \
	-M "$M" -u "$D" -n jump_label_prog
echo "kkctl_unit_systemd: ok"
