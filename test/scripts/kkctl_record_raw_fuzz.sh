#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record's raw path trusts no byte of a trace_pipe_raw reply (issue 39;
# docs/tracing.md, "The raw stream"): test/progs/record_raw_fuzz gives
# tools/kkctl/record_raw.c 20000 changed copies of a valid reply (bytes
# flipped, lengths, counts, class ids and string lengths set to extremes,
# replies cut short; each in a buffer of exactly its size, so that ASan
# sees a read past it), for three seeds, and then the valid reply:
#   - it never crashes, and never fails the trace (exit 0), and the valid
#     reply after them is still written whole;
#   - what it writes is the trace's directory only: "metadata" and thread
#     streams pid77-tidN, nothing else there, nothing beside it.
set -u
B=${KK_BUILD:?}
prog=$B/test/progs/record_raw_fuzz
[ -x "$prog" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-rfuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

for seed in 1 7 12345; do
	timeout 300 "$prog" "$tmp/trace$seed" 20000 "$seed" 2> "$tmp/err$seed" ||
		fail "seed $seed: rc $? $(tail -5 "$tmp/err$seed")"
	grep -v '^kkctl: process 77: a malformed trace_pipe_raw frame (.*): skipped$' "$tmp/err$seed" |
		grep -q . && fail "seed $seed said: $(head -5 "$tmp/err$seed")"
	bad=$(ls -A "$tmp/trace$seed" | grep -v '^metadata$' | grep -v '^pid77-tid-\{0,1\}[0-9]*\(\.[0-9]*\)\{0,1\}$')
	[ -z "$bad" ] || fail "seed $seed: files that are not the trace's: $bad"
	[ -z "$(find "$tmp/trace$seed" -mindepth 1 -type d)" ] || fail "seed $seed: a directory in the trace"
done
extra=$(ls -A "$tmp" | grep -v '^trace[0-9]*$' | grep -v '^err[0-9]*$')
[ -z "$extra" ] || fail "files beside the traces: $extra"
echo "kkctl_record_raw_fuzz: ok"
