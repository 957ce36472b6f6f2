#!/bin/sh
# SPDX-License-Identifier: MIT
# Programs #define ordinary words (OpenSSH defines `error`).  Every public
# header must still compile, in C and C++, with gcc and clang, under
# -Wall -Wextra -Werror -pedantic, when the words that GNU attributes are
# named after are macros, and a wrong key type must still be rejected.
set -u
SRC=${KK_SRC:-.}
tmp=$(mktemp -d /tmp/kk-clash.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Bare words (<stdnoreturn.h> itself defines noreturn) and words that take
# arguments (OpenSSH: #define error(...) sshlog(...)).
words="used unused weak cold hot noreturn noinline always_inline packed deprecated
nonnull leaf nothrow artificial gnu_inline may_alias fallthrough"
fwords="error warning section aligned visibility constructor destructor format
tls_model alias optimize"

{
	for w in $words; do echo "#define $w }}} clash {{{"; done
	for w in $fwords; do echo "#define $w(...) }}} clash {{{"; done
	cat <<'PROG'
#include <kernelkit/kernelkit.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/jump_label_ratelimit.h>
#include <kernelkit/ratelimit.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/panic.h>
#include <kernelkit/shazptr.h>
#include <kernelkit/control.h>

DEFINE_STATIC_KEY_FALSE(clash_key);
static int clash_value;

int clash_use(void);
int clash_use(void)
{
	struct shazptr_guard g = shazptr_acquire(&clash_value);
	int r = 0;

	shazptr_clear(g);
	if (static_branch_unlikely(&clash_key))
		r = 1;
	pr_debug("clash %d\n", r);
	pr_debug("clash\n");
	debug_object_init(&clash_value, (const struct debug_obj_descr *)0);
	if (WARN_ON(r > 1))
		r = 0;
	return r;
}
PROG
} > "$tmp/clash.c"

# The same program with a wrong key type: must not compile.
sed 's/static_branch_unlikely(&clash_key)/static_branch_unlikely(\&clash_key.key)/' \
	"$tmp/clash.c" > "$tmp/wrong.c"

flags="-Wall -Wextra -Werror -pedantic -I$SRC/include -c"
ran=0
for cc in gcc clang g++ clang++; do
	command -v $cc >/dev/null || { echo "SKIP: $cc not checked: not installed"; continue; }
	case $cc in
	*++) lang="-x c++ -std=c++11" ;;
	*) lang="-x c -std=c11" ;;
	esac
	ran=$((ran + 1))
	$cc $lang $flags -o "$tmp/clash.o" "$tmp/clash.c" 2>"$tmp/err" ||
		{ head -20 "$tmp/err"; fail "$cc $lang: headers break when attribute words are macros"; }
	if $cc $lang $flags -o "$tmp/wrong.o" "$tmp/wrong.c" 2>"$tmp/err"; then
		fail "$cc $lang: static_branch_unlikely() accepted a struct static_key *"
	fi
	echo "$cc $lang: ok (and a wrong key type is rejected)"
done
[ $ran -gt 0 ] || { echo "no compiler"; exit 77; }
exit 0
