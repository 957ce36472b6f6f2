#!/bin/sh
# SPDX-License-Identifier: MIT
# `make demo`, the main job:
#  1. dynamic debug: the seed's 16154-site experiment, driven through kkctl
#     (examples/dyndbg-demo.sh);
#  2. the static keys underneath: 16154 sites in 8 shared objects flipped one
#     key at a time and queued with one apply, and the cost of a disabled site.
set -eu
B=${1:-build}
sh "$(dirname "$0")/dyndbg-demo.sh" "$B"
echo
echo "----------------------------------------------------------------------------"
echo
json=$B/demo-static-keys.json
"$B/kk-bench" static_keys --json "$json" > "$B/demo-static-keys.txt"
get() { sed -n "s/^ *\"$1\": *\([^,]*\),*$/\1/p" "$json"; }
echo "kernelkit demo: $(get sites) static-key sites in $(get objects) shared objects, one key per site,"
echo "switched on while a worker thread runs every site (this machine: $(nproc) CPUs)."
echo
printf '%-28s %10s %10s %10s\n' "switch all sites on" syncs IPIs ms
printf '%-28s %10s %10s %10.1f\n' "one key at a time" "$(get unbatched_syncs)" "$(get unbatched_ipis)" "$(get unbatched_ms)"
printf '%-28s %10s %10s %10.1f\n' "queued, one apply" "$(get batched_syncs)" "$(get batched_ipis)" "$(get batched_ms)"
printf '%-28s %10s %10s %10s\n' "seed 000 (kernel, RFC)" "-" 134 "-"
echo
echo "Queued apply was $(get batched_speedup | cut -d. -f1)x faster in this run."
ins=$(get disabled_site_insns)
if [ "$ins" != null ]; then
	r() { printf '%.2f' "$1"; }
	echo "Instructions per loop iteration (callgrind): empty loop $(r "$(get empty_loop_insns)"),"
	echo "with a disabled site $(r "$ins"), with a volatile flag test $(r "$(get flag_check_insns)")."
fi
echo "Full results: $json"
