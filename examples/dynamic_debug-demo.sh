#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic-debug half of `make demo`, for someone who has never heard of
# the kernel's dynamic debug:
#   sh examples/dynamic_debug-demo.sh [BUILD_DIR]
# Starts the "machine" (examples/machine.c), a program that loads 19 shared
# objects with 16154 pr_debug() calls in all, the way modprobe loads kernel
# modules, and runs them on a worker thread.  Then, from outside, with kkctl:
#  1. lists the program's debug messages;
#  2. switches one module's messages on, shows a few of them, switches them
#     off and shows that they stopped;
#  3. switches all 16154 on and off (+p, -p, 'module !virtio* +p', -p), first
#     with one batch of code changes per command, then one site at a time, and
#     prints the syncs, IPIs and time of each command.
set -eu
B=${1:-build}
KKCTL=$B/kkctl
MACHINE=$B/dynamic_debug-machine
for f in "$KKCTL" "$MACHINE" "$B/dynamic_debug-mods/modules.list"; do
	[ -e "$f" ] || { echo "dynamic_debug-demo: $f is missing; run make first" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/kk-dynamic_debug-demo.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# Show a kkctl command as an operator would type it (with SUFFIX, if given,
# after it), then run it and indent its output.
#   kk [-s SUFFIX] ARGS...
kk() {
	suffix=
	[ "$1" = -s ] && { suffix=" $2"; shift 2; }
	printf '  $ kkctl'
	for a in "$@"; do
		case $a in
		*[!A-Za-z0-9_./-]*) printf " '%s'" "$a" ;;
		*) printf ' %s' "$a" ;;
		esac
	done
	printf '%s\n' "$suffix"
	"$KKCTL" "$@" > "$tmp/out"
	sed 's/^/    /' "$tmp/out"
}

"$MACHINE" "$B/dynamic_debug-mods" > "$tmp/machine.out" 2>&1 &
pid=$!
i=0
until grep -q '^machine: pid' "$tmp/machine.out" 2>/dev/null && grep -q " @kernelkit/$pid\$" /proc/net/unix; do
	i=$((i + 1))
	[ $i -gt 300 ] && { cat "$tmp/machine.out"; echo "dynamic_debug-demo: machine did not start" >&2; exit 1; }
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/machine.out"; exit 1; }
	sleep 0.05
done

cat <<EOF
== 1. A program full of debug messages ==================================

The Linux kernel has "dynamic debug": every pr_debug() message in its code
can be switched on or off while the system runs, one message, one file or
one module at a time.  kernelkit gives a user-space program the same thing.

The program below ($MACHINE, pid $pid) loads 19 shared objects
named and sized like the kernel modules of a PC, 16154 pr_debug() calls in
all, and a worker thread runs every one of them in a loop.  All are off: an
off pr_debug() costs one no-op instruction.  Modules and their messages:
EOF
awk '/^dyndbg:/ { w = $NF " " $2; if (n++) w = ", " w
		  if (len + length(w) > 72) { printf ",\n"; len = 0; sub(/^, /, "", w) }
		  printf "%s", w; len += length(w) }
     END { print "" }' "$tmp/machine.out" | sed 's/^/    /'
echo
echo "kkctl ($KKCTL) finds such programs and reads their control files:"
kk ls
kk -s '| head -4' -p "$pid" read dynamic_debug/control > "$tmp/list"
head -5 "$tmp/list"
echo "    ... ($(($(wc -l < "$tmp/out") - 1)) lines: one per pr_debug() call; =_ means off)"

cat <<EOF

== 2. Switch one module's messages on, then off ============================

'+p' prints a message; 'm', 'f' and 'l' add the module, function and line.
The program sends its messages to a counter rather than to the terminal
(millions a second); its file machine/log shows the last few printed.
EOF
kk -p "$pid" write dynamic_debug/control 'module i2c_core +pmfl'
sleep 0.2
kk -p "$pid" read machine/log
kk -p "$pid" write dynamic_debug/control 'module i2c_core -pmfl'
sleep 0.6
kk -p "$pid" read machine/log

ipis() {	# the machine-wide count of function-call IPIs
	awk '/^ *CAL:/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s; f = 1 }
	     END { if (!f) print -1 }' /proc/interrupts
}
now_ns() { date +%s%N; }

syncs() { "$KKCTL" -p "$pid" read machine/stats | awk '$1 == "syncs" { print $2 }'; }

# run MODE QUERY FILE: FILE gets "matched changed syncs ipis ms".  The syncs
# are the program's own count (machine/stats) before and after the command.
# kkctl gives up after 5 s; on a loaded machine a command that changes 16154
# sites one at a time can take longer.  It goes on in the program: the demo
# then waits until the program answers again and counts the time until then.
run() {
	"$KKCTL" -p "$pid" write dynamic_debug/batched "$1" >/dev/null
	printf '  $ kkctl -p %s write dynamic_debug/control %s\n' "$pid" "'$2'"
	s0=$(syncs)
	i0=$(ipis); t0=$(now_ns)
	if "$KKCTL" -p "$pid" write dynamic_debug/control "$2" > "$tmp/reply" 2> "$tmp/err"; then
		t1=$(now_ns); i1=$(ipis)
		mark=
	else
		sed 's/^/    /' "$tmp/err"
		i=0
		until "$KKCTL" -p "$pid" read machine/stats > /dev/null 2>&1; do
			i=$((i + 1))
			[ $i -lt 12 ] || { echo "dynamic_debug-demo: the machine does not answer" >&2; exit 1; }
		done
		t1=$(now_ns); i1=$(ipis)
		echo "total: matched - changed -" > "$tmp/reply"
		mark='*'
		slow=1
	fi
	s1=$(syncs)
	awk -v ipis=$((i1 - i0)) -v ms_ns=$((t1 - t0)) -v noipi="$i0" -v syncs=$((s1 - s0)) -v mark="$mark" '
		/^total:/ { for (i = 1; i <= NF; i++) v[$i] = $(i + 1)
			    printf "%s %s %s %s %.1f%s\n", v["matched"], v["changed"], syncs,
				   (noipi < 0 ? "n/a" : ipis), ms_ns / 1e6, mark }' "$tmp/reply" > "$3"
}

cat <<EOF

== 3. All 16154 at once: syncs and IPIs ===================================

Switching a pr_debug() on rewrites 5 bytes of the program's machine code (a
no-op becomes a jump) while the worker thread may be running that very code.
kernelkit does it as the kernel does on x86: a breakpoint on every site,
then the rest of each instruction, then its first byte, and after each of
these 3 steps a "sync": every thread of the program is made to execute a
serializing instruction, so that none runs stale code.  A sync is one
membarrier() system call, or a signal to every thread where there is none.

The kernel syncs CPUs with IPIs (inter-processor interrupts, the CAL line of
/proc/interrupts); membarrier() interrupts each CPU that is running one of
the program's threads at that moment.  So the IPI column below counts what
the whole machine did, and depends on where threads happened to run: on a
busy 2-CPU virtual machine it varies a lot from run to run.  The sync count
is the stable figure.

Before a 2026 patch series by Jim Cromie ("queued static-key API reduces
IPIs to 134/16154 in dyndbg"), Linux switched the sites one at a time, with
one IPI round each; with it, +p on 16154 sites took 134 IPIs instead of
16154.  kernelkit puts every site a command changes into one batch: 3 syncs
for the whole command.  The same four commands run twice: with batches
(dynamic_debug/batched 1, the default), then one site at a time (0).
EOF

queries="+p|-p|module !virtio* +p|-p"
slow=
echo "  $ kkctl -p $pid write dynamic_debug/batched 1"
IFS='|'
n=0
for q in $queries; do n=$((n + 1)); run 1 "$q" "$tmp/b$n"; done
echo "  $ kkctl -p $pid write dynamic_debug/batched 0"
n=0
for q in $queries; do n=$((n + 1)); run 0 "$q" "$tmp/u$n"; done
unset IFS
echo "  $ kkctl -p $pid write dynamic_debug/batched 1"
"$KKCTL" -p "$pid" write dynamic_debug/batched 1 >/dev/null
echo

printf '%-22s %8s %8s | %-24s | %-26s\n' "" "" "" "one batch per command" "one site at a time"
printf '%-22s %8s %8s | %6s %6s %9s | %7s %7s %9s\n' command matched changed syncs IPIs ms syncs IPIs ms
printf '%s\n' "--------------------------------------------------------------------------------------------"
n=0
IFS='|'
for q in $queries; do
	n=$((n + 1))
	unset IFS
	read -r bm bc bs bi bms < "$tmp/b$n"
	read -r um uc us ui ums < "$tmp/u$n"
	[ "$bm" = "$um" ] && [ "$bc" = "$uc" ] || [ "$um" = - ] ||
		echo "dynamic_debug-demo: batched and unbatched disagree on '$q'" >&2
	printf '%-22s %8s %8s | %6s %6s %9s | %7s %7s %9s\n' "$q" "$bm" "$bc" "$bs" "$bi" "$bms" "$us" "$ui" "$ums"
	IFS='|'
done
unset IFS
[ -z "$slow" ] || echo "*: kkctl stopped waiting after 5 s (this machine is busy; an idle 2-CPU VM
   takes about 0.7 s); the command went on, and ms is the time until the
   program answered again."
"$KKCTL" -p "$pid" read machine/stats > "$tmp/stats"
st() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/stats"; }
cat <<EOF

matched: sites the query selects; changed: sites whose flags changed; ms:
the whole kkctl command, start to exit.  One site at a time costs 3 syncs
per site.  The first batched +p may also pay for copying the code pages on
their first change: up to one IPI per page when another thread is running
those pages at that moment (docs/results.md explains it).
While all this ran, the worker went $(st rounds) times through the 16154 sites
and printed $(st messages) debug messages (to its counter, not the terminal).
EOF
