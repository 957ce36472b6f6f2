#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the dynamic-debug parser's libFuzzer target for a bounded time, from a
# small seed corpus of valid and invalid queries.  Skips when clang could not
# build it.
set -u
B=${KK_BUILD:?}
F=$B/test/fuzz/dynamic_debug_parser
[ -x "$F" ] || { echo "no fuzzer built (clang with libFuzzer missing)"; exit 77; }
tmp=$(mktemp -d /tmp/kk-dd-fuzz.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/corpus"
i=0
for q in '+p' 'module !virtio* +p' 'file drm.c:10-20 =pmf' 'func foo* line 5- -p' \
	 "format '^a\\tb' +_" 'class DRM_UT_KMS +p' 'a b c d e f g h i j' 'line 9-2 +p' \
	 'format "unclosed +p' 'x.c:12 [m]f =p "fmt\"x"' '# c
+p;-p'; do
	printf '%s' "$q" > "$tmp/corpus/seed$i"
	i=$((i + 1))
done
"$F" -max_total_time="${KK_DD_FUZZ_SECONDS:-10}" -max_len=512 -timeout=5 \
	-artifact_prefix="$tmp/" "$tmp/corpus" > "$tmp/log" 2>&1
rc=$?
tail -n 3 "$tmp/log"
if [ $rc -ne 0 ]; then
	grep -A30 'ERROR\|==ERROR\|deadly signal' "$tmp/log" | head -60
	for a in "$tmp"/crash-* "$tmp"/leak-* "$tmp"/timeout-*; do
		[ -f "$a" ] && { echo "input: $a"; od -c "$a" | head; }
	done
	exit 1
fi
exit 0
