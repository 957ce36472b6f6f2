#!/bin/sh
# SPDX-License-Identifier: MIT
# `make demo`, the main job, in three parts (about 20 s):
#  1. dynamic debug, driven from outside with kkctl (examples/dynamic_debug-demo.sh);
#  2. a trace session over a master and two workers, recorded with kkctl
#     record into CTF and read with babeltrace2 (examples/trace-demo.sh);
#  3. the static keys underneath: 16154 sites in 8 shared objects switched on
#     one key at a time and all at once, and what a switched-off site costs
#     (build/kk-bench jump_label).
set -eu
B=${1:-build}
cat <<EOF
kernelkit demo: runtime facilities of the Linux kernel (dynamic debug, static
keys, ...) in a C library for ordinary programs.  About 25 seconds.

EOF
sh "$(dirname "$0")/dynamic_debug-demo.sh" "$B"
sh "$(dirname "$0")/trace-demo.sh" "$B"

json=$B/demo-static-keys.json
cat <<EOF

== 5. Underneath: static keys ============================================

Each pr_debug() above is a "static key" site, and programs can use static
keys directly: if (static_branch_unlikely(&key)) { ... } is a no-op
instruction until static_branch_enable(&key) rewrites it into a jump.  Here
a benchmark program ($B/kk-bench jump_label) has 16154 sites in 8 shared
objects, one key per site, and switches them all on while a worker thread
runs every site: first one static_branch_enable() per key, then all keys
queued (static_key_enable_queued()) and applied together
(static_key_apply_queued(), the API of the 2026 patch series).
EOF
echo "  \$ kk-bench jump_label --json $json"
"$B/kk-bench" jump_label --json "$json" > "$B/demo-static-keys.txt"
get() { sed -n "s/^ *\"$1\": *\([^,]*\),*$/\1/p" "$json"; }
echo
printf '%-30s %10s %10s %10s\n' "switch $(get sites) sites on" syncs IPIs ms
printf '%-30s %10s %10s %10.1f\n' "one key at a time" "$(get unbatched_syncs)" "$(get unbatched_ipis)" "$(get unbatched_ms)"
printf '%-30s %10s %10s %10.1f\n' "queued, one apply" "$(get batched_syncs)" "$(get batched_ipis)" "$(get batched_ms)"
echo
echo "The queued apply was $(get batched_speedup | cut -d. -f1)x faster in this run (this machine: $(nproc) CPUs)."
ins=$(get disabled_site_insns)
if [ "$ins" != null ]; then
	r() { printf '%.2f' "$1"; }
	echo "Cost of a switched-off site, in instructions per loop iteration (valgrind's"
	echo "callgrind): an empty loop $(r "$(get empty_loop_insns)"), with a switched-off static key"
	echo "$(r "$ins") (the one no-op), with a test of a volatile flag $(r "$(get flag_check_insns)")."
fi
cat <<EOF

Full results of this run: $json
More: README.md, docs/results.md (every measurement and how to repeat it),
docs/dynamic_debug.md, docs/jump_label.md, docs/control.md, docs/tracing.md,
man/man1/kkctl.1.
EOF
