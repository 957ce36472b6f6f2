#!/bin/sh
# SPDX-License-Identifier: MIT
# Under load, which server's worker wakes on the other CPU (docs/results.md,
# "Under load")?  Starts BUSYLOOPS busy loops (sh -c 'while :; do :; done',
# nice 0), runs `kk-bench guest` RUNS times meanwhile, and counts the runs in
# which each server's request (mp_server_plain_request_us and
# mp_server_kk_request_us: the median of its exchanges, unpinned) took more
# than US microseconds: the slow mode, a worker woken across CPUs.
#   scripts/bench-under-load.sh [-k KKBENCH] [-t US] RUNS BUSYLOOPS
#   -k KKBENCH  the kk-bench to run (default: build/kk-bench of this tree)
#   -t US       the slow threshold (default 25)
# One line per run, then the counts, and the range of the ratios: unpinned,
# and pinned (mp_server_hog_request_ratio, mp_server_cross_cpu_request_ratio).
# The busy loops are killed at the end, whatever happens.  Exit 0, or 2 when a
# run printed no request figures (one line says which).
set -u
kkbench=$(dirname "$0")/../build/kk-bench
us=25
usage() { echo "usage: scripts/bench-under-load.sh [-k KKBENCH] [-t US] RUNS BUSYLOOPS" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	-k) [ $# -ge 2 ] || usage; kkbench=$2; shift 2 ;;
	-t) [ $# -ge 2 ] || usage; us=$2; shift 2 ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ $# -eq 2 ] || usage
runs=$1 loops=$2
case $runs in ''|*[!0-9]*|0) usage ;; esac
case $loops in ''|*[!0-9]*) usage ;; esac
[ -x "$kkbench" ] || { echo "bench-under-load: $kkbench: not an executable (make all)" >&2; exit 2; }
dir=$(mktemp -d /tmp/kk-bench-under-load.XXXXXX) || exit 2
pids=
# shellcheck disable=SC2086
stop() { [ -z "$pids" ] || kill $pids 2> /dev/null; wait 2> /dev/null; rm -rf "$dir"; }
trap 'stop; exit 2' INT TERM HUP
i=0
while [ "$i" -lt "$loops" ]; do
	sh -c 'while :; do :; done' &
	pids="$pids $!"
	i=$((i + 1))
done
[ -z "$pids" ] || echo "bench-under-load: busy loops:$pids" >&2

# "KEY VALUE" of the figures kk-bench wrote
figures() {
	sed -n 's/^[ \t]*"\(mp_server[a-z_]*request_[a-z]*\)": *\([-0-9.eE+]*\),*$/\1 \2/p' "$1"
}
i=1 rc=0
while [ "$i" -le "$runs" ]; do
	"$kkbench" guest --json "$dir/$i.json" > "$dir/$i.txt" 2>&1
	figures "$dir/$i.json" 2> /dev/null > "$dir/$i.fig"
	if ! grep -q '^mp_server_plain_request_us ' "$dir/$i.fig" ||
	   ! grep -q '^mp_server_kk_request_us ' "$dir/$i.fig"; then
		echo "bench-under-load: run $i: $kkbench guest printed no request figures:" >&2
		tail -n 5 "$dir/$i.txt" >&2
		rc=2
		break
	fi
	i=$((i + 1))
done
# shellcheck disable=SC2046
[ $rc -ne 0 ] || awk -v us="$us" -v runs="$runs" -v loops="$loops" '
function range(name, lo, hi) { return lo == "" ? name " -" : sprintf("%s %.3g-%.3gx", name, lo, hi) }
function add(k, v) {
	if (!(k in lo) || v < lo[k]) lo[k] = v
	if (!(k in hi) || v > hi[k]) hi[k] = v
}
FNR == 1 { n++ }
{ f[n, $1] = $2 + 0; if ($1 ~ /ratio$/) add($1, $2 + 0) }
END {
	for (i = 1; i <= n; i++) {
		p = f[i, "mp_server_plain_request_us"]; k = f[i, "mp_server_kk_request_us"]
		slowp += (p > us); slowk += (k > us)
		printf "run %d: plain %.4g us%s, kernelkit %.4g us%s (%.3gx)\n", i,
		       p, (p > us) ? " (slow)" : "", k, (k > us) ? " (slow)" : "", k / p
	}
	printf "%d runs of kk-bench guest, %d busy loops: plain slow (> %g us) in %d, kernelkit slow in %d\n",
	       runs, loops, us, slowp, slowk
	printf "request ratio kernelkit/plain: %s; pinned: %s, %s\n",
	       range("unpinned", lo["mp_server_request_ratio"], hi["mp_server_request_ratio"]),
	       range("hog", lo["mp_server_hog_request_ratio"], hi["mp_server_hog_request_ratio"]),
	       range("cross-CPU", lo["mp_server_cross_cpu_request_ratio"], hi["mp_server_cross_cpu_request_ratio"])
}' $(i=1; while [ "$i" -le "$runs" ]; do echo "$dir/$i.fig"; i=$((i + 1)); done)
stop
exit $rc
