#!/bin/sh
# SPDX-License-Identifier: MIT
# The dynamic-debug demo: the seed's experiment (RFC 000) in user space.
#   sh examples/dyndbg-demo.sh [BUILD_DIR]
# Starts the "machine" (examples/machine.c), which loads 19 modules with 16154
# pr_debug sites like modprobe and runs them on a worker thread; then, through
# kkctl and the control endpoint, runs +p, -p, 'module !virtio* +p' and -p,
# first batched (one queued static-key batch per write) and then one key at a
# time, and prints one row per query.
set -eu
B=${1:-build}
KKCTL=$B/kkctl
MACHINE=$B/dyndbg-machine
for f in "$KKCTL" "$MACHINE" "$B/dyndbg-mods/modules.list"; do
	[ -e "$f" ] || { echo "dyndbg-demo: $f is missing; run make first" >&2; exit 1; }
done

tmp=$(mktemp -d /tmp/kk-dyndbg-demo.XXXXXX)
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

"$MACHINE" "$B/dyndbg-mods" > "$tmp/machine.out" 2>&1 &
pid=$!
i=0
until grep -q '^machine: pid' "$tmp/machine.out" 2>/dev/null && grep -q " @kernelkit/$pid\$" /proc/net/unix; do
	i=$((i + 1))
	[ $i -gt 300 ] && { cat "$tmp/machine.out"; echo "dyndbg-demo: machine did not start" >&2; exit 1; }
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/machine.out"; exit 1; }
	sleep 0.05
done
cat "$tmp/machine.out"
echo

ipis() {	# the machine-wide count of function-call IPIs
	awk '/^ *CAL:/ { s = 0; for (i = 2; i <= NF; i++) if ($i ~ /^[0-9]+$/) s += $i; print s; f = 1 }
	     END { if (!f) print -1 }' /proc/interrupts
}
now_ns() { date +%s%N; }

# run MODE QUERY -> "matched changed syncs ipis ms"
run() {
	"$KKCTL" -p "$pid" write dynamic_debug/batched "$1" >/dev/null
	i0=$(ipis); t0=$(now_ns)
	"$KKCTL" -p "$pid" write dynamic_debug/control "$2" > "$tmp/reply"
	t1=$(now_ns); i1=$(ipis)
	awk -v ipis=$((i1 - i0)) -v ms_ns=$((t1 - t0)) -v noipi="$i0" '
		/^total:/ { for (i = 1; i <= NF; i++) v[$i] = $(i + 1)
			    printf "%s %s %s %s %.1f\n", v["matched"], v["changed"], v["syncs"],
				   (noipi < 0 ? "n/a" : ipis), ms_ns / 1e6 }' "$tmp/reply"
}

queries="+p|-p|module !virtio* +p|-p"
IFS='|'
n=0
for q in $queries; do n=$((n + 1)); run 1 "$q" > "$tmp/b$n"; done
n=0
for q in $queries; do n=$((n + 1)); run 0 "$q" > "$tmp/u$n"; done
"$KKCTL" -p "$pid" write dynamic_debug/batched 1 >/dev/null
unset IFS

printf '%-22s %8s %8s | %-24s | %-26s\n' "" "" "" "batched (one write =" "per key (unbatched,"
printf '%-22s %8s %8s | %-24s | %-26s\n' "" "" "" " one queued batch)" " the kernel before 000)"
printf '%-22s %8s %8s | %6s %6s %9s | %7s %7s %9s\n' query matched changed syncs IPIs ms syncs IPIs ms
printf '%s\n' "--------------------------------------------------------------------------------------------"
n=0
IFS='|'
for q in $queries; do
	n=$((n + 1))
	unset IFS
	read -r bm bc bs bi bms < "$tmp/b$n"
	read -r um uc us ui ums < "$tmp/u$n"
	[ "$bm" = "$um" ] && [ "$bc" = "$uc" ] || echo "dyndbg-demo: batched and unbatched disagree on '$q'" >&2
	printf '%-22s %8s %8s | %6s %6s %9s | %7s %7s %9s\n' "$q" "$bm" "$bc" "$bs" "$bi" "$bms" "$us" "$ui" "$ums"
	IFS='|'
done
unset IFS
echo
"$KKCTL" -p "$pid" read machine/stats | tr '\n' ' ' | sed 's/ $/\n/; s/^/machine: /'
echo "ms: kkctl run end to end (fork to exit); IPIs: CAL line of /proc/interrupts, whole machine"
echo "seed (kernel, RFC 000): +p on 16154 sites took 16154 IPIs per key, 134 with the queued API"
