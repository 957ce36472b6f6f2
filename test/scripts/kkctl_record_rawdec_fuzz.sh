#!/bin/sh
# SPDX-License-Identifier: MIT
# kkctl record's raw decoder (tools/kkctl/record_rawdec.c: trace_pipe_raw
# into records for jsonl, text, perfetto) trusts no byte of a reply (issue
# 39; docs/tracing.md, "The raw stream"): test/progs/record_rawdec_fuzz
# checks what it makes of a valid reply (records, lost, messages as printf
# makes them), then gives it 20000 changed copies (bytes flipped, lengths,
# counts, class ids, string lengths set to extremes, format characters put
# anywhere, replies cut short; each in a buffer of exactly its size, so that
# ASan sees a read past it) for three seeds, reading every string of every
# record it gives, and then the valid reply again:
#   - it never crashes or stops, and the valid reply after them is whole;
#   - what it says is only "a malformed trace_pipe_raw frame", once a run.
set -u
B=${KK_BUILD:?}
prog=$B/test/progs/record_rawdec_fuzz
[ -x "$prog" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d /tmp/kk-rdfuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*"; exit 1; }

for seed in 1 7 12345; do
	timeout 300 "$prog" 20000 "$seed" > /dev/null 2> "$tmp/err$seed" ||
		fail "seed $seed: rc $? $(tail -5 "$tmp/err$seed")"
	grep -v '^kkctl: process 77: a malformed trace_pipe_raw frame (.*): skipped$' "$tmp/err$seed" |
		grep -q . && fail "seed $seed said: $(head -5 "$tmp/err$seed")"
	[ "$(wc -l < "$tmp/err$seed")" -le 1 ] || fail "seed $seed: said more than once"
done
echo "kkctl_record_rawdec_fuzz: ok"
