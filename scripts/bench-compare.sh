#!/bin/sh
# SPDX-License-Identifier: MIT
# Did a change move any benchmark figure?  Runs two kk-bench binaries (the
# code before and after it, each in its own build directory) section by
# section, old, new, old, new, ... in one session, so that the machine's load
# hits both alike, and compares every figure both print.
#   scripts/bench-compare.sh [-n PAIRS] [-d DIR] OLD_KKBENCH NEW_KKBENCH [SECTION...]
# (options may also follow the binaries and sections.)
#   -n PAIRS  old+new pairs of runs of each section (default 3)
#   -d DIR    keep each run's JSON and output in DIR (default: a temporary
#             directory, removed at the end)
#   SECTION   kk-bench section names (default: every section NEW lists);
#             an old binary that lists a section only by its name before
#             issue 27 (static_keys, dyndbg) is run with that name.
# For each numeric figure that both binaries print, one line: the median of
# the old runs, the median of the new ones, new/old, the spread (the larger of
# the two sides' largest run over its smallest run) and whether new/old (or
# old/new) is within that spread.  A figure with a run at or below 0 has no
# spread: it counts as within only when both medians are equal.  The last
# line: "N of M within the spread".
# Exit: 0 every figure within the spread, 1 some not, 2 a run failed or bad
# usage (one line on stderr says which).
set -u
pairs=3 keep='' old='' new='' sections=''
usage() { echo "usage: scripts/bench-compare.sh [-n PAIRS] [-d DIR] OLD_KKBENCH NEW_KKBENCH [SECTION...]" >&2; exit 2; }
die() { echo "bench-compare: $*" >&2; [ -n "$keep" ] || rm -rf "$dir"; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	-n) [ $# -ge 2 ] || usage; pairs=$2; shift 2 ;;
	-d) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
	-*) usage ;;
	*)
		if [ -z "$old" ]; then old=$1
		elif [ -z "$new" ]; then new=$1
		else sections="$sections $1"; fi
		shift ;;
	esac
done
[ -n "$new" ] || usage
case $pairs in ''|*[!0-9]*|0) usage ;; esac
for b in "$old" "$new"; do
	[ -x "$b" ] || { echo "bench-compare: $b: not an executable" >&2; exit 2; }
done
if [ -n "$keep" ]; then
	dir=$keep
	mkdir -p "$dir" || exit 2
else
	dir=$(mktemp -d /tmp/kk-bench-compare.XXXXXX) || exit 2
fi

# The section names a binary lists (kk-bench with no argument: "  NAME  desc").
list_sections() {
	"$1" 2> /dev/null | awk '/^  [a-z_0-9]+ / && !/the old name of/ { print $1 }'
}
listed() {	# NAME LIST
	case " $(echo "$2" | tr '\n' ' ') " in *" $1 "*) return 0 ;; esac
	return 1
}
# What the old binary calls section $1: its name, or its name before issue 27.
old_name() {
	listed "$1" "$old_sections" && { echo "$1"; return; }
	case $1 in
	jump_label) listed static_keys "$old_sections" && { echo static_keys; return; } ;;
	dynamic_debug) listed dyndbg "$old_sections" && { echo dyndbg; return; } ;;
	esac
	echo "$1"
}
old_sections=$(list_sections "$old")
[ -n "$sections" ] || sections=$(list_sections "$new")
[ -n "$sections" ] || die "$new lists no section"

run() {	# SIDE BINARY NAME SECTION PAIR
	out="$dir/$4.$1.$5"
	"$2" "$3" --json "$out.json" > "$out.txt" 2>&1
	rc=$?
	[ -s "$out.json" ] || die "$2 $3 (run $5) wrote no JSON (exit $rc; its output: $out.txt${keep:+, kept})"
	[ $rc -eq 0 ] || echo "bench-compare: $2 $3 (run $5) exited $rc; its figures are used" >&2
}

set --
for s in $sections; do
	os=$(old_name "$s")
	i=1
	while [ "$i" -le "$pairs" ]; do
		echo "bench-compare: $s, pair $i of $pairs" >&2
		run old "$old" "$os" "$s" "$i"
		run new "$new" "$s" "$s" "$i"
		set -- "$@" side=old sec="$s" "$dir/$s.old.$i.json" side=new sec="$s" "$dir/$s.new.$i.json"
		i=$((i + 1))
	done
done

echo "old: $old"
echo "new: $new"
echo "$pairs pairs of runs of each section, old then new:$sections"
awk '
function isnum(v) { return v ~ /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/ }
function median(s,   n, a, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
			t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
		}
	return n % 2 ? a[(n + 1) / 2] + 0 : (a[n / 2] + a[n / 2 + 1]) / 2
}
# largest over smallest, or -1 when a run is at or below 0
function spread(s,   n, a, i, lo, hi) {
	n = split(s, a, " ")
	lo = hi = a[1] + 0
	for (i = 1; i <= n; i++) {
		if (a[i] + 0 <= 0)
			return -1
		if (a[i] + 0 < lo) lo = a[i] + 0
		if (a[i] + 0 > hi) hi = a[i] + 0
	}
	return hi / lo
}
FNR == 1 { depth = 0; prefix[0] = sec "." }
# kk-bench writes one "key": value per line; "all" nests a section per object
/^[ \t]*"[^"]*": *\{/ {
	k = $0; sub(/^[ \t]*"/, "", k); sub(/".*/, "", k)
	depth++; prefix[depth] = prefix[depth - 1] k "."
	next
}
/^[ \t]*\}/ { if (depth > 0) depth--; next }
/^[ \t]*"[^"]*": / {
	k = $0; sub(/^[ \t]*"/, "", k); sub(/".*/, "", k)
	v = $0; sub(/^[ \t]*"[^"]*": */, "", v); sub(/,[ \t]*$/, "", v)
	if (!isnum(v))
		next			# strings, null, inf, nan: not figures
	k = prefix[depth] k
	if (!(k in seen)) {
		seen[k] = 1; order[++nk] = k
	}
	runs[side, k] = runs[side, k] " " v
}
END {
	printf "%-46s %11s %11s %8s %8s  %s\n", "figure", "old", "new", "new/old", "spread", "within"
	for (i = 1; i <= nk; i++) {
		k = order[i]
		if (!(("old", k) in runs) || !(("new", k) in runs)) {
			only[++nonly] = k " (only " ((("old", k) in runs) ? "old" : "new") ")"
			continue
		}
		mo = median(runs["old", k]); mn = median(runs["new", k])
		so = spread(runs["old", k]); sn = spread(runs["new", k])
		m++
		if (mo == mn) {
			ratio = mo ? "1" : "-"; sp = (so < 0 || sn < 0) ? "-" : sprintf("%.3g", so > sn ? so : sn)
			ok = "yes"
		} else if (so < 0 || sn < 0 || mo <= 0 || mn <= 0) {
			ratio = mo > 0 ? sprintf("%.3g", mn / mo) : "-"; sp = "-"
			ok = "no (a run <= 0: no spread)"
		} else {
			s = so > sn ? so : sn; r = mn / mo
			ratio = sprintf("%.3g", r); sp = sprintf("%.3g", s)
			ok = (r <= s && 1 / r <= s) ? "yes" : "no"
		}
		if (ok == "yes")
			within++
		printf "%-46s %11.6g %11.6g %8s %8s  %s\n", k, mo, mn, ratio, sp, ok
	}
	for (i = 1; i <= nonly; i++)
		printf "not compared: %s\n", only[i]
	printf "%d of %d within the spread\n", within, m
	exit within == m ? 0 : 1
}' "$@"
rc=$?
[ -n "$keep" ] || rm -rf "$dir"
exit $rc
