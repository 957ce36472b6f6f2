#!/bin/sh
# SPDX-License-Identifier: MIT
# Sites switch in a process that may not gain executable memory (systemd's
# MemoryDenyWriteExecute=, prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN)):
# the default write method, /proc/self/mem, needs no mprotect(PROT_EXEC),
# so a key flips (its site too); the page-swap method (KK_TEXT_POKE=remap)
# would need one, and is refused in one line, the key left as it was.
set -u
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
CC=${CC:-cc}
[ "${KK_TEST_LABEL:-default}" = fallback ] && { echo "skip: no text is written in the fallback build"; exit 77; }
command -v "$CC" >/dev/null 2>&1 || { echo "skip: no compiler $CC"; exit 77; }
tmp=$(mktemp -d /tmp/kk-mdwe.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
san=
case ${KK_TEST_LABEL:-default} in asan*) san="-fsanitize=address,undefined -fno-omit-frame-pointer" ;; esac
cat > "$tmp/mdwe.c" <<'PROG'
#include <errno.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <kernelkit/jump_label.h>
#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_MDWE_REFUSE_EXEC_GAIN 1
#endif
DEFINE_STATIC_KEY_FALSE(k);
static __attribute__((noinline)) int site(void)
{
	return static_branch_unlikely(&k) ? 1 : 0;
}
int main(void)
{
	int before = site(), after;

	if (prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0L, 0L, 0L))
		return errno == EINVAL ? 77 : 3;
	if (static_branch_enable(&k)) {
		after = site();
		printf("refused: %s; key %d site %d\n", kk_jump_label_strerror(),
		       static_key_enabled(&k), after);
		return 2;
	}
	after = site();
	printf("before %d after %d\n", before, after);
	return before == 0 && after == 1 ? 0 : 1;
}
PROG
# shellcheck disable=SC2086
"$CC" -O2 -Wall -Wextra -Werror $san -I"$SRC/include" -o "$tmp/mdwe" "$tmp/mdwe.c" \
	-L"$B" -lkernelkit -Wl,-rpath,"$(cd "$B" && pwd)" || fail "build"
KK_CONTROL=0 "$tmp/mdwe" > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 77 ] && { echo "skip: no PR_SET_MDWE in this kernel"; exit 77; }
[ $rc -eq 0 ] || fail "under MDWE the key did not flip (exit $rc): $(cat "$tmp/out")"
echo "MDWE, default method: $(cat "$tmp/out"): ok"
KK_CONTROL=0 KK_TEXT_POKE=remap "$tmp/mdwe" > "$tmp/out" 2>&1; rc=$?
[ $rc -eq 2 ] || fail "KK_TEXT_POKE=remap under MDWE: exit $rc: $(cat "$tmp/out")"
grep -qx "refused: text cannot be written: /proc/self/mem and mremap both refused; key 0 site 0" "$tmp/out" ||
	fail "KK_TEXT_POKE=remap under MDWE: $(cat "$tmp/out")"
echo "MDWE, remap: refused in one line, the key unchanged: ok"
