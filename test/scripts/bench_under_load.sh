#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/bench-under-load.sh on a fake kk-bench that prints fixed request
# times: it runs `guest` RUNS times while BUSYLOOPS busy loops run, counts
# the runs in which each server is over the threshold, gives the ratios'
# ranges, kills its busy loops at the end, and stops with one line when a
# run prints no request figures.
set -u
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-bench-under-load-test.XXXXXX)
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out" "$tmp/err" 2> /dev/null; rm -rf "$tmp"; exit 1; }

# Run N: the plain and kernelkit request times of line N of $tmp/times.
cat > "$tmp/times" <<'EOF'
13.5 13.8 1.01 1.00
14.0 41.0 1.02 1.01
30.2 13.9 1.00 1.00
EOF
cat > "$tmp/kk-bench" <<EOS
#!/bin/sh
[ "\$1" = guest ] && [ "\$2" = --json ] || exit 2
echo "\$1" >> "$tmp/calls"
n=\$(( \$(cat "$tmp/count" 2> /dev/null || echo 0) + 1 ))
echo \$n > "$tmp/count"
[ -f "$tmp/broken" ] && { echo '{ "hello_ratio": 1.1 }' > "\$3"; echo "mp_server did not answer" >&2; exit 1; }
sed -n "\${n}p" "$tmp/times" | awk '{
	print "{"
	print "  \"hello_ratio\": 1.1,"
	print "  \"mp_server_plain_request_us\": " \$1 ","
	print "  \"mp_server_kk_request_us\": " \$2 ","
	print "  \"mp_server_request_ratio\": " \$2 / \$1 ","
	print "  \"mp_server_hog_request_ratio\": " \$3 ","
	print "  \"mp_server_cross_cpu_request_ratio\": " \$4
	print "}" }' > "\$3"
EOS
chmod +x "$tmp/kk-bench"

sh "$SRC/scripts/bench-under-load.sh" -k "$tmp/kk-bench" 3 2 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc"
[ "$(wc -l < "$tmp/calls")" -eq 3 ] || fail "kk-bench ran $(wc -l < "$tmp/calls") times, want 3"
pids=$(sed -n 's/^bench-under-load: busy loops://p' "$tmp/err")
[ "$(echo "$pids" | wc -w)" -eq 2 ] || fail "busy loops: '$pids', want 2"
for p in $pids; do
	kill -0 "$p" 2> /dev/null && { kill "$p"; fail "busy loop $p still runs"; }
done
grep -qx "run 2: plain 14 us, kernelkit 41 us (slow) (2.93x)" "$tmp/out" || fail "run 2 line"
grep -qx "run 3: plain 30.2 us (slow), kernelkit 13.9 us (0.46x)" "$tmp/out" || fail "run 3 line"
grep -qx "3 runs of kk-bench guest, 2 busy loops: plain slow (> 25 us) in 1, kernelkit slow in 1" "$tmp/out" ||
	fail "counts"
grep -qx "request ratio kernelkit/plain: unpinned 0.46-2.93x; pinned: hog 1-1.02x, cross-CPU 1-1.01x" "$tmp/out" ||
	fail "ranges"

# Another threshold moves the counts.
rm -f "$tmp/count"
sh "$SRC/scripts/bench-under-load.sh" -t 35 -k "$tmp/kk-bench" 3 0 > "$tmp/out" 2> "$tmp/err" || fail "-t 35: exit $?"
grep -qx "3 runs of kk-bench guest, 0 busy loops: plain slow (> 35 us) in 0, kernelkit slow in 1" "$tmp/out" ||
	fail "counts with -t 35"

# A run without the request figures: exit 2, one line that says so, no counts.
touch "$tmp/broken"
sh "$SRC/scripts/bench-under-load.sh" -k "$tmp/kk-bench" 2 1 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "exit $rc when a run had no request figures, want 2"
grep -q "^bench-under-load: run 1: .* printed no request figures" "$tmp/err" || fail "no message"
grep -q "slow" "$tmp/out" && fail "counts after a failed run"
for p in $(sed -n 's/^bench-under-load: busy loops://p' "$tmp/err"); do
	kill -0 "$p" 2> /dev/null && { kill "$p"; fail "busy loop $p still runs after a failed run"; }
done
rm -rf "$tmp"
exit 0
