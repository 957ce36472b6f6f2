#!/bin/sh
# SPDX-License-Identifier: MIT
# The ABI check (docs/abi.md).  Fails, naming each symbol, when
#  1. libkernelkit.so exports a symbol src/libkernelkit.map does not list
#     ("appeared"), or misses one the map lists ("disappeared");
#  2. an export is not in version KERNELKIT_1, or an interposed libc
#     function (the map's documented category) is versioned at all (a
#     versioned definition would interpose nothing);
#  3. a listed name other than the interposed libc functions is not declared
#     by include/kernelkit/*.h, a function or object a public header declares
#     is not listed (the compiler says what is declared where: a mention in a
#     comment does not count), or an interposed one is not a libc function;
#  4. the soname is not the one the file name promises (libkernelkit.so.N.*
#     -> libkernelkit.so.N; a plain libkernelkit.so may keep its own name);
#  5. libkernelkit-odebug.so exports anything but free, realloc and munmap,
#     unversioned;
#  6. a black-box test (stress, conformance, dialect, progs, test/lib) links
#     the white-box build $(B)/internal/libkernelkit.so, or a process of a
#     white-box test loads two kernelkits when it loads a module that needs
#     the real library;
#  7. debian/libkernelkit1.symbols does not list exactly the exports (each
#     API name @KERNELKIT_1, each interposed function @Base), or the counts
#     docs/abi.md and docs/packaging.md give are not the library's.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
CC=${CC:-cc}
MAP=$SRC/src/libkernelkit.map
LIB=$B/libkernelkit.so
tmp=$(mktemp -d /tmp/kk-abi.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }

for t in nm readelf; do
	command -v $t >/dev/null 2>&1 || { echo "SKIP: no $t"; exit 77; }
done
[ -f "$LIB" ] || { echo "FAIL: no $LIB"; exit 1; }

# ---- the map: names of KERNELKIT_1, and which are the interposed libc ones --------
# Comments are dropped; a comment that starts "Interposed libc functions"
# opens the interposed category, which runs to "local:".
awk '
	{ line = $0; out = "" }
	{
		while (length(line)) {
			if (incomment) {
				i = index(line, "*/")
				if (!i) { text = text line; line = ""; break }
				text = text substr(line, 1, i - 1); line = substr(line, i + 2)
				incomment = 0
				if (text ~ /^[ \t*]*Interposed libc functions/) interposed = 1
				continue
			}
			i = index(line, "/*")
			if (!i) { out = out line; line = ""; break }
			out = out substr(line, 1, i - 1); line = substr(line, i + 2)
			incomment = 1; text = ""
		}
	}
	out ~ /^[ \t]*KERNELKIT_1[ \t]*\{/ { innode = 1; next }
	out ~ /^[ \t]*local:/ { innode = 0 }
	innode && out ~ /^[ \t]*[A-Za-z_][A-Za-z_0-9]*;[ \t]*$/ {
		gsub(/[ \t;]/, "", out)
		print out > (interposed ? "'"$tmp"'/interposed" : "'"$tmp"'/api")
	}
' "$MAP"
touch "$tmp/api" "$tmp/interposed"
sort -u "$tmp/api" > "$tmp/api.s"
sort -u "$tmp/interposed" > "$tmp/interposed.s"
sort -u "$tmp/api" "$tmp/interposed" > "$tmp/map"
[ -s "$tmp/api.s" ] || { echo "FAIL: no names found in $MAP"; exit 1; }
[ -s "$tmp/interposed.s" ] || fail "no interposed libc functions found in $MAP (category comment gone?)"

# ---- 1. the exported set against the map -------------------------------------------
# readelf -W: one line per symbol, "name@@VERSION" for a versioned definition.
# The version node's own absolute symbol (KERNELKIT_1, Ndx ABS) is no export.
readelf -W --dyn-syms "$LIB" |
	awk '$7 != "UND" && $7 != "ABS" && $5 != "LOCAL" && NF >= 8 && $1 ~ /^[0-9]+:$/ { print $8 }' |
	sort -u > "$tmp/dynsyms"
sed 's/@.*//' "$tmp/dynsyms" | sort -u > "$tmp/exported"
comm -23 "$tmp/exported" "$tmp/map" > "$tmp/appeared"
comm -13 "$tmp/exported" "$tmp/map" > "$tmp/disappeared"
while read -r s; do
	fail "appeared: $s is exported but not listed in src/libkernelkit.map"
done < "$tmp/appeared"
while read -r s; do
	fail "disappeared: $s is listed in src/libkernelkit.map but not exported"
done < "$tmp/disappeared"

# ---- 2. versions ----------------------------------------------------------------------
while read -r v; do
	s=${v%%@*}
	if grep -qx "$s" "$tmp/interposed.s"; then
		[ "$v" = "$s" ] || fail "$v: an interposed libc function must be unversioned"
	else
		[ "$v" = "$s@@KERNELKIT_1" ] || fail "$v: not in version KERNELKIT_1"
	fi
done < "$tmp/dynsyms"

# ---- 3. the map against the public headers (the compiler says what is declared where) ----
# Redeclaring a name as an incomplete struct object makes gcc name its
# earlier declaration ("note: previous declaration of 'x' with type ...")
# and the file and line it is on; a name nothing declares draws no note, a
# mention in a comment draws none either.  Probed: every identifier of the
# public headers and every name of the map.  Both ways:
#  - each API name of the map is declared by include/kernelkit/*.h;
#  - each function or object include/kernelkit/*.h declares is in the map,
#    except, by design: __start_*/__stop_* (each object's own section
#    bounds, hidden), __kk_bound_* (the same bounds under another name, for
#    a header that does not know their type), __kk_wrong_* (never defined: a
#    call is a compile-time error) and typedef names.
probe() {	# out names-file headers... (and $PROBE_FLAGS)
	out=$1 names=$2; shift 2
	{
		for h in "$@"; do echo "#include <$h>"; done
		echo "struct kk_abi_probe;"
		sed 's/.*/extern struct kk_abi_probe &;/' "$names"
	} > "$tmp/probe.c"
	LC_ALL=C "$PCC" -D_GNU_SOURCE ${PROBE_FLAGS:-} -I"$SRC/include" -fno-builtin -fsyntax-only -fmax-errors=0 \
		"$tmp/probe.c" 2>&1 |
		sed -n "s/^\([^:]*\):\([0-9]*\):[0-9]*: note: previous declaration of '\([A-Za-z_0-9]*\)'.*/\3 \1 \2/p" |
		sort -u > "$out"
}
PCC=${ABI_PROBE_CC:-gcc}	# the note's wording is gcc's
if command -v "$PCC" >/dev/null 2>&1; then
	hdrs=$(cd "$SRC/include" && ls kernelkit/*.h)
	# identifiers of the headers, less C keywords (they would only be syntax errors)
	cat "$SRC"/include/kernelkit/*.h | tr -c 'A-Za-z0-9_' '\n' |
		grep -E '^[A-Za-z_][A-Za-z0-9_]*$' | sort -u > "$tmp/tokens"
	printf '%s\n' auto break case char const continue default do double else enum \
		extern float for goto if inline int long register restrict return short signed \
		sizeof static struct switch typedef union unsigned void volatile while bool \
		true false | sort > "$tmp/keywords"
	comm -23 "$tmp/tokens" "$tmp/keywords" | sort -u - "$tmp/api.s" > "$tmp/cand"
	# shellcheck disable=SC2086
	probe "$tmp/decl" "$tmp/cand" $hdrs
	while read -r s; do
		where=$(awk -v s="$s" '$1 == s { print $2 ":" $3; exit }' "$tmp/decl")
		case $where in
		"$SRC"/include/kernelkit/*.h:*|include/kernelkit/*.h:*) ;;
		"") fail "$s is exported but no include/kernelkit/*.h declares it" ;;
		*) fail "$s is exported but declared in $where, not include/kernelkit/*.h" ;;
		esac
	done < "$tmp/api.s"
	while read -r s f l; do
		case $f in "$SRC"/include/kernelkit/*.h|include/kernelkit/*.h) ;; *) continue ;; esac
		case $s in __start_*|__stop_*|__kk_bound_*|__kk_wrong_*) continue ;; esac
		sed -n "${l}p" "$f" | grep -q '\btypedef\b' && continue
		grep -qx "$s" "$tmp/map" ||
			fail "$s is declared in ${f#"$SRC"/}:$l but not exported (not in src/libkernelkit.map)"
	done < "$tmp/decl"
	libc_h="unistd.h spawn.h signal.h poll.h sys/select.h sys/epoll.h"
	# shellcheck disable=SC2086
	probe "$tmp/libcdecl" "$tmp/interposed.s" $libc_h
	# fortified declarations too (__ppoll_chk); a fortified ppoll is a definition
	# shellcheck disable=SC2086
	PROBE_FLAGS="-O2 -D_FORTIFY_SOURCE=2" probe "$tmp/libcchk" "$tmp/interposed.s" $libc_h
	sort -u -o "$tmp/libcdecl" "$tmp/libcdecl" "$tmp/libcchk"
	while read -r s; do
		awk -v s="$s" '$1 == s { f = 1 } END { exit !f }' "$tmp/libcdecl" ||
			fail "$s is listed as an interposed libc function, but libc declares no $s"
	done < "$tmp/interposed.s"
else
	echo "SKIP: 3, libc's declarations of the interposed functions not checked: no $PCC"
fi

# ---- 4. soname ---------------------------------------------------------------------------
soname=$(readelf -d "$LIB" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
real=$(basename "$(readlink -f "$LIB")")
case $real in
libkernelkit.so.[0-9]*)
	want=libkernelkit.so.$(echo "${real#libkernelkit.so.}" | cut -d. -f1)
	[ "$soname" = "$want" ] || fail "soname $soname, but the file is $real (want $want)" ;;
libkernelkit.so)
	[ "$soname" = libkernelkit.so ] || fail "soname $soname for an unversioned $real"
	echo "note: unversioned soname $soname (a file libkernelkit.so.N.* gets libkernelkit.so.N)" ;;
*) fail "unexpected library file $real" ;;
esac

# ---- 5. the preload library -------------------------------------------------------------
PRE=$B/libkernelkit-odebug.so
if [ -f "$PRE" ]; then
	readelf -W --dyn-syms "$PRE" |
		awk '$7 != "UND" && $7 != "ABS" && $5 != "LOCAL" && NF >= 8 && $1 ~ /^[0-9]+:$/ { print $8 }' |
		sort -u > "$tmp/pre"
	printf 'free\nmunmap\nrealloc\n' > "$tmp/pre.want"
	if ! cmp -s "$tmp/pre" "$tmp/pre.want"; then
		fail "libkernelkit-odebug.so exports $(tr '\n' ' ' < "$tmp/pre")(want: free munmap realloc, unversioned)"
	fi
else
	fail "no $PRE"
fi

# ---- 6. the white-box build stays with the white-box tests ----------------------------------
runpath() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(R[UN]*PATH).*\[\(.*\)\]/\1/p'; }
is_elf() { [ -f "$1" ] && [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
nwhite=0
for f in "$B"/test/unit/* "$B"/test/stress/* "$B"/test/conformance/* "$B"/test/dialect/* \
	 "$B"/test/progs/* "$B"/test/lib/*.so "$B"/dynamic_debug-mods/*.so "$B"/bench-mods/*.so \
	 "$B"/libkernelkit-odebug.so; do
	is_elf "$f" || continue
	case $(runpath "$f") in
	*/internal*) ;;
	*) continue ;;
	esac
	case $f in
	"$B"/test/unit/*)
		nwhite=$((nwhite + 1))
		# One kernelkit, the internal one, as the dynamic linker resolves it.
		n=$(LD_TRACE_LOADED_OBJECTS=1 "$f" 2>/dev/null | grep -c 'libkernelkit')
		LD_TRACE_LOADED_OBJECTS=1 "$f" 2>/dev/null | grep -q "internal/libkernelkit" ||
			fail "$f: links the white-box build but does not load it"
		[ "$n" -eq 1 ] || fail "$f: loads $n kernelkit libraries" ;;
	*) fail "$f: a black-box test links the white-box build (runpath $(runpath "$f"))" ;;
	esac
done
echo "white-box unit tests (linking $B/internal/libkernelkit.so): $nwhite"

# A white-box process that loads a module built against the real library
# (test/lib/libjump_label_deferred.so needs its soname) must keep one kernelkit.
MOD=$B/test/lib/libjump_label_deferred.so
if [ -f "$B/internal/libkernelkit.so" ] && [ -f "$MOD" ] && command -v "$CC" >/dev/null 2>&1; then
	cat > "$tmp/one.c" <<'EOF'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <kernelkit/kernelkit.h>

static int count(struct dl_phdr_info *i, size_t n, void *arg)
{
	(void)n;
	if (strstr(i->dlpi_name, "libkernelkit")) {
		printf("loaded: %s\n", i->dlpi_name);
		++*(int *)arg;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int n = 0;

	(void)argc;
	(void)kk_threads_start;		/* needs the library */
	if (!dlopen(argv[1], RTLD_NOW)) {
		printf("dlopen: %s\n", dlerror());
		return 2;
	}
	dl_iterate_phdr(count, &n);
	return n == 1 ? 0 : 1;
}
EOF
	SANFLAGS=
	case ${KK_TEST_LABEL:-default} in asan*) SANFLAGS="-fsanitize=address,undefined" ;; esac
	# shellcheck disable=SC2086
	if "$CC" $SANFLAGS -I"$SRC/include" -o "$tmp/one" "$tmp/one.c" -Wl,--no-as-needed \
		-L"$B/internal" -lkernelkit -Wl,-rpath,"$(cd "$B/internal" && pwd)" -ldl \
		> "$tmp/one.log" 2>&1; then
		"$tmp/one" "$MOD" > "$tmp/one.out" 2>&1 ||
			fail "a white-box process that loads $MOD: $(tr '\n' ' ' < "$tmp/one.out")"
	else
		cat "$tmp/one.log"
		fail "cannot build the one-kernelkit probe"
	fi
else
	echo "SKIP: one kernelkit in a white-box process that loads $MOD not checked: no internal/libkernelkit.so, no module, or no $CC"
fi

# ---- 7. the Debian symbols file and the documented counts -------------------------------
SYMS=$SRC/debian/libkernelkit1.symbols
if [ -f "$SYMS" ]; then
	while read -r v; do
		s=${v%%@*}
		if [ "$v" = "$s" ]; then echo "$s@Base"; else echo "$s@KERNELKIT_1"; fi
	done < "$tmp/dynsyms" | LC_ALL=C sort > "$tmp/want.syms"
	awk 'NR > 1 && $1 != "KERNELKIT_1@KERNELKIT_1" { print $1 }' "$SYMS" | LC_ALL=C sort > "$tmp/have.syms"
	comm -23 "$tmp/want.syms" "$tmp/have.syms" | while read -r s; do
		echo "FAIL: $s is exported but not in debian/libkernelkit1.symbols"
	done > "$tmp/syms.bad"
	comm -13 "$tmp/want.syms" "$tmp/have.syms" | while read -r s; do
		echo "FAIL: $s is in debian/libkernelkit1.symbols but not exported"
	done >> "$tmp/syms.bad"
	[ -s "$tmp/syms.bad" ] && { cat "$tmp/syms.bad"; bad=1; }
fi
napi=$(wc -l < "$tmp/api.s") nint=$(wc -l < "$tmp/interposed.s")
grep -q "That is $napi API names plus $nint interposed functions" "$SRC/docs/abi.md" ||
	fail "docs/abi.md does not say \"That is $napi API names plus $nint interposed functions\""
grep -q "^    $((napi + nint))\$" "$SRC/docs/abi.md" ||
	fail "docs/abi.md's nm count is not $((napi + nint))"
tr '\n' ' ' < "$SRC/docs/packaging.md" | grep -q "the $napi API names in .KERNELKIT_1. and the $nint interposed" ||
	fail "docs/packaging.md does not give $napi API names and $nint interposed functions"

echo "libkernelkit.so: $(wc -l < "$tmp/exported") exported ($(wc -l < "$tmp/api.s") API, $(wc -l < "$tmp/interposed.s") interposed libc), map $(wc -l < "$tmp/map")"
[ $bad -eq 0 ] && echo "abi: ok"
exit $bad
