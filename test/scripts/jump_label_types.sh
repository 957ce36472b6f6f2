#!/bin/sh
# SPDX-License-Identifier: MIT
# The static-key macros reject a wrong key type at compile time, in C and in
# C++, with gcc and clang, with and without KK_NO_JUMP_LABEL, and also in a
# program that #defines the plain attribute names (error, used, section ...)
# before it includes the headers, as OpenSSH does with `error`.  Each case
# compiles a snippet: the good ones must compile warning-free with -pedantic,
# the bad ones must fail with the headers' own diagnostic (not some other
# error that happens to stop the build).
set -u
tmp=$(mktemp -d /tmp/kk-sktypes.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
ran=0

# $1 compiler, $2 language, $3 standard, $4 extra flags, $5 file
build() {
	$1 -x "$2" -std="$3" -Wall -Wextra -Werror -pedantic -O2 -Iinclude $4 -c -o "$tmp/out.o" "$5" \
		> "$tmp/log" 2>&1
}

# $1 name, $2 body (inside a function), $3 "ok" or the text the error must contain
case_() {
	name=$1 body=$2 want=$3
	for macros in ${KK_SKT_MACROS-"" "clash"}; do
		f="$tmp/t.c"
		{
			if [ "$macros" = clash ]; then
				printf '#define error 1\n#define used 0\n#define section 2\n#define weak 3\n'
				printf '#define visibility 4\n#define constructor 5\n#define destructor 6\n'
				printf '#define aligned 7\n#define alias 8\n#define noinline 9\n'
			fi
			printf '#include <kernelkit/jump_label.h>\n'
			printf 'DEFINE_STATIC_KEY_TRUE(kt);\nDEFINE_STATIC_KEY_FALSE(kf);\n'
			printf 'struct static_key kp = STATIC_KEY_INIT_FALSE;\n'
			printf 'DEFINE_STATIC_KEY_DEFERRED_FALSE(kd, 10);\n'
			printf 'struct static_key_false *kpp = &kf;\n'
			printf 'int f(void);\nint f(void)\n{\n\tint n = 0;\n\t%s\n\treturn n;\n}\n' "$body"
		} > "$f"
		for cc in ${KK_SKT_CC:-gcc g++ clang clang++}; do
			command -v $cc >/dev/null 2>&1 || { echo "SKIP: $cc not checked: not installed"; continue; }
			case $cc in *++) lang=c++ std=c++17 ;; *) lang=c std=c11 ;; esac
			for extra in "" "-DKK_NO_JUMP_LABEL"; do
				ran=$((ran + 1))
				what="$name [$cc $std $extra${macros:+ with #define error/used/...}]"
				if build $cc $lang $std "$extra" "$f"; then
					[ "$want" = ok ] && continue
					echo "FAIL: $what compiled"
					fail=1
				elif [ "$want" = ok ]; then
					echo "FAIL: $what did not compile:"
					head -n 8 "$tmp/log"
					fail=1
				elif ! grep -q -e "$want" "$tmp/log"; then
					echo "FAIL: $what failed without the expected diagnostic ($want):"
					head -n 8 "$tmp/log"
					fail=1
				fi
			done
		done
	done
}

case_ "right types" \
	'n += static_branch_likely(&kt); n += static_branch_unlikely(&kf); n += static_key_enabled(&kt) && static_key_enabled(&kp);' ok
case_ "static_branch_likely(struct static_key *)" \
	'n += static_branch_likely(&kp);' 'static_branch_\*() needs'
case_ "static_branch_unlikely(struct static_key_false_deferred *)" \
	'n += static_branch_unlikely(&kd);' 'static_branch_\*() needs'
case_ "static_branch_unlikely(struct static_key_false **)" \
	'n += static_branch_unlikely(&kpp);' \
	'static_branch_\*() needs'
case_ "static_key_enabled(int *)" \
	'n += static_key_enabled(&n);' 'not a struct static_key\|__kk_key_of'

echo "$ran compilations"
[ "$fail" -eq 0 ] && echo "ok"
exit $fail
