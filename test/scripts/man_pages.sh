#!/bin/sh
# SPDX-License-Identifier: MIT
# The manual is complete and renders cleanly:
#  (a) every function the library exports has a page in man/man3 (a full page
#      or a .so link).  The export list is src/libkernelkit.map when it exists,
#      else the T/W symbols of the built library that the public headers
#      declare.  Functions that libc defines too (execve, posix_spawn: the
#      library interposes them) are libc's to document.
#  (b) every KK_ name that src/ reads from the environment (getenv,
#      secure_getenv, kk_getenv, kk_env_*, or any "KK_..." string literal,
#      which is how tables and #defines name variables) is in kernelkit(7);
#  (c) every page renders without a warning, every .so link points to an
#      existing page, and kernelkit(7) lists every man3 page in SEE ALSO.
# Exit 0 pass, 1 fail (one line per problem), 77 skip.
set -u
SRC=${KK_SRC:-.}
B=${KK_BUILD:-build}
MAN=$SRC/man
LIB=$B/libkernelkit.so
MAP=$SRC/src/libkernelkit.map
tmp=$(mktemp -d /tmp/kk-man.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0
problem() { echo "man_pages: $*"; bad=1; }

[ -d "$MAN/man3" ] || { echo "man_pages: no $MAN/man3"; exit 1; }
[ -f "$MAN/man7/kernelkit.7" ] || { echo "man_pages: no $MAN/man7/kernelkit.7"; exit 1; }
[ -e "$LIB" ] || { echo "SKIP: $LIB is not built"; exit 77; }
command -v nm >/dev/null 2>&1 || { echo "SKIP: no nm"; exit 77; }

# ---- (a) every exported function has a page -----------------------------------------

nm -D --defined-only "$LIB" | awk '$2 ~ /^[TWi]$/ { print $3 }' | sed 's/@.*//' |
	sort -u > "$tmp/functions"
if [ -f "$MAP" ]; then
	# The names the map exports: "name;" lines (comments and local: aside).
	sed 's/#.*//; s,/\*.*\*/,,g' "$MAP" | tr ' \t' '\n\n' |
		sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\);$/\1/p' | sort -u > "$tmp/exported"
	src="$MAP"
else
	# Before the version script: only what the public headers declare.
	cat "$SRC"/include/kernelkit/*.h > "$tmp/headers"
	while read -r f; do
		grep -Eq "(^|[^A-Za-z0-9_])$f[[:space:]]*\(" "$tmp/headers" && echo "$f"
	done < "$tmp/functions" > "$tmp/exported"
	src="the public headers"
fi
# Functions, not data (static_key_initialized, param_ops_dyndbg_classes, ...).
comm -12 "$tmp/exported" "$tmp/functions" > "$tmp/ours"
# libc's own functions, which the library interposes.
libc=$(ldd "$LIB" 2>/dev/null | awk '$1 ~ /^libc\.so/ { print $3 }')
[ -n "$libc" ] && [ -e "$libc" ] || libc=$(${CC:-cc} -print-file-name=libc.so.6)
if [ -e "$libc" ]; then
	nm -D --defined-only "$libc" | awk '{ print $3 }' | sed 's/@.*//' | sort -u > "$tmp/libc"
	comm -23 "$tmp/ours" "$tmp/libc" > "$tmp/need"
else
	echo "man_pages: note: libc not found; interposed libc functions are not set aside"
	cp "$tmp/ours" "$tmp/need"
fi
[ -s "$tmp/need" ] || problem "no exported function found in $LIB (from $src)"
while read -r f; do
	[ -f "$MAN/man3/$f.3" ] || problem "exported function $f has no page man/man3/$f.3"
done < "$tmp/need"

# ---- (b) every KK_ environment variable is in kernelkit(7) ---------------------------

{
	grep -rhoE '(getenv|secure_getenv|kk_getenv|kk_env_[a-z_]+)\([[:space:]]*"KK_[A-Za-z0-9_]*' \
		"$SRC/src" | sed 's/.*"//'
	grep -rhoE '"KK_[A-Za-z0-9_]*' "$SRC/src" | sed 's/^"//'
} | sort -u > "$tmp/vars"
[ -s "$tmp/vars" ] || problem "no KK_ variable found in $SRC/src"
while read -r v; do
	grep -q -- "$v" "$MAN/man7/kernelkit.7" ||
		problem "variable $v (read in src/: $(grep -rlF "\"$v" "$SRC/src" | head -1)) is not in kernelkit(7)"
done < "$tmp/vars"

# ---- (c) pages render; links resolve; kernelkit(7) points to every page ---------------

if command -v man >/dev/null 2>&1; then
	render() { (cd "$MAN" && LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
		    man --warnings -E UTF-8 -l "$1" 2>&1 >/dev/null); }
elif command -v groff >/dev/null 2>&1; then
	render() { (cd "$MAN" && groff -k -man -ww -z "$1" 2>&1); }
else
	echo "SKIP: neither man nor groff is installed (man-db, groff-base)"
	exit 77
fi
pages=0
for p in "$MAN"/man1/*.1 "$MAN"/man3/*.3 "$MAN"/man7/*.7; do
	[ -f "$p" ] || continue
	rel=${p#"$MAN"/}
	pages=$((pages + 1))
	if grep -q '^\.so ' "$p"; then
		target=$(sed -n 's/^\.so //p' "$p")
		[ "$(wc -l < "$p")" -eq 1 ] || problem "$rel: a .so link must be one line"
		[ -f "$MAN/$target" ] || problem "$rel: .so link to missing page $target"
		grep -q '^\.so ' "$MAN/$target" 2>/dev/null && problem "$rel: .so link to a link, $target"
		continue
	fi
	out=$(render "$rel")
	[ -z "$out" ] || problem "$rel: $(echo "$out" | head -1)"
	name=$(basename "$p"); name=${name%.*}
	grep -q "^\.TH $name " "$p" || problem "$rel: .TH does not name $name"
	case $rel in
	man3/*) grep -q "^\.BR $name (3)" "$MAN/man7/kernelkit.7" ||
			problem "kernelkit(7) SEE ALSO does not list $name(3)" ;;
	esac
done

[ $bad -eq 0 ] || exit 1
echo "man_pages: $(wc -l < "$tmp/need") exported functions (from $src) have pages," \
	"$(wc -l < "$tmp/vars") KK_ names are in kernelkit(7), $pages pages render cleanly"
exit 0
