#!/bin/sh
# SPDX-License-Identifier: MIT
# scripts/bench-compare.sh on two fake kk-bench binaries that print fixed
# figures: the runs interleave old, new, old, new; a figure within the spread
# of its runs is reported within, one outside it (up or down, or with a run
# at 0) is not; the summary counts both, the exit status says which; strings,
# nulls and figures of one side only are not compared; an old binary that
# knows a section by its name before issue 27 is run with that name; a run
# that writes no JSON stops the comparison with one line.
set -u
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-bench-compare-test.XXXXXX)
fail() { echo "FAIL: $*"; echo "--- output:"; cat "$tmp/out" 2> /dev/null; rm -rf "$tmp"; exit 1; }

# A fake kk-bench: lists SECTIONS when run bare; run as NAME --json FILE,
# writes the figures of NAME's run number N (a counter per side and
# section): lines "NAME KEY V1 V2 V3" of DATA, the value of run N.
mkstub() {	# FILE SIDE SECTIONS DATA
	cat > "$1" <<EOS
#!/bin/sh
if [ \$# -eq 0 ]; then
	echo "usage: kk-bench NAME|all [--json FILE]"
	echo "benchmarks:"
	for s in $3; do echo "  \$s          a fake section"; done
	exit 0
fi
[ "\$2" = --json ] || exit 2
echo "$2 \$1" >> "$tmp/order"
c="$tmp/count.$2.\$1"
n=\$(( \$(cat "\$c" 2> /dev/null || echo 0) + 1 ))
echo \$n > "\$c"
awk -v s="\$1" -v n=\$n '
	BEGIN { print "{" }
	\$1 == s { printf "%s  \"%s\": %s", sep, \$2, \$(2 + n); sep = ",\n" }
	END { print "\n}" }' "$4" > "\$3"
grep -q '"' "\$3" || { rm -f "\$3"; echo "kk-bench: no benchmark named '\$1'" >&2; exit 2; }
EOS
	chmod +x "$1"
}

cat > "$tmp/old.data" <<'EOF'
alpha steady_ns 10 12 11
alpha moved_ms 100 101 100
alpha slower_us 50 55 52
alpha zero_syncs 0 0 0
alpha zero_moved_ipis 0 1 0
alpha name_str "abc" "abc" "abc"
alpha gone_null null null null
alpha old_only 5 5 5
static_keys flip_ms 1 1.1 1
EOF
cat > "$tmp/new.data" <<'EOF'
alpha steady_ns 11.5 10.5 12
alpha moved_ms 130 131 130
alpha slower_us 40 41 40
alpha zero_syncs 0 0 0
alpha zero_moved_ipis 2 2 2
alpha name_str "abc" "abc" "abc"
alpha gone_null null null null
alpha new_only 7 7 7
jump_label flip_ms 1.05 1 1
EOF
mkstub "$tmp/old" old "alpha static_keys" "$tmp/old.data"
mkstub "$tmp/new" new "alpha jump_label" "$tmp/new.data"

sh "$SRC/scripts/bench-compare.sh" "$tmp/old" "$tmp/new" alpha jump_label -n 3 > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 1 ] || fail "exit $rc with figures outside the spread, want 1 ($(cat "$tmp/err"))"
# figure old new new/old spread within...
line() { grep "^$1 " "$tmp/out" | tr -s ' '; }
[ "$(line alpha.steady_ns)" = "alpha.steady_ns 11 11.5 1.05 1.2 yes" ] || fail "steady: $(line alpha.steady_ns)"
[ "$(line alpha.moved_ms)" = "alpha.moved_ms 100 130 1.3 1.01 no" ] || fail "moved: $(line alpha.moved_ms)"
[ "$(line alpha.slower_us)" = "alpha.slower_us 52 40 0.769 1.1 no" ] || fail "slower: $(line alpha.slower_us)"
[ "$(line alpha.zero_syncs)" = "alpha.zero_syncs 0 0 - - yes" ] || fail "zero: $(line alpha.zero_syncs)"
line alpha.zero_moved_ipis | grep -q "^alpha.zero_moved_ipis 0 2 - - no (a run <= 0" ||
	fail "zero moved: $(line alpha.zero_moved_ipis)"
[ "$(line jump_label.flip_ms)" = "jump_label.flip_ms 1 1 1 1.1 yes" ] || fail "renamed: $(line jump_label.flip_ms)"
grep -q "name_str\|gone_null" "$tmp/out" && fail "a string or null was compared"
grep -qx "not compared: alpha.old_only (only old)" "$tmp/out" || fail "old_only not listed"
grep -qx "not compared: alpha.new_only (only new)" "$tmp/out" || fail "new_only not listed"
[ "$(tail -n 1 "$tmp/out")" = "3 of 6 within the spread" ] || fail "summary: $(tail -n 1 "$tmp/out")"
want="old alpha new alpha old alpha new alpha old alpha new alpha old static_keys new jump_label old static_keys new jump_label old static_keys new jump_label"
[ "$(tr '\n' ' ' < "$tmp/order" | sed 's/ $//')" = "$want" ] || fail "order: $(tr '\n' ' ' < "$tmp/order")"

# Every figure within: exit 0.
rm -f "$tmp"/count.* "$tmp/order"
sh "$SRC/scripts/bench-compare.sh" -n 3 "$tmp/old" "$tmp/new" jump_label > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 0 ] || fail "exit $rc with every figure within, want 0"
[ "$(tail -n 1 "$tmp/out")" = "1 of 1 within the spread" ] || fail "summary: $(tail -n 1 "$tmp/out")"

# A run that writes no JSON: exit 2 and one line that names it.
sh "$SRC/scripts/bench-compare.sh" -n 1 "$tmp/old" "$tmp/new" nosuch > "$tmp/out" 2> "$tmp/err"
rc=$?
[ $rc -eq 2 ] || fail "exit $rc when a run failed, want 2"
grep -q "^bench-compare: $tmp/old nosuch (run 1) wrote no JSON" "$tmp/err" || fail "message: $(cat "$tmp/err")"
grep -q "within the spread" "$tmp/out" && fail "a summary after a failed run"
rm -rf "$tmp"
exit 0
