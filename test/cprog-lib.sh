# SPDX-License-Identifier: MIT
# Shared by the scripts that build a small C program against the library and
# run it: control_fork_seccomp.sh, control_start_before_main.sh,
# startup_thread_mask.sh.  Set KK_CPROG_NAME (the name of $tmp), then source
# it.  Sets B, SRC, CC, a $tmp removed at exit, fail(), and $CFLAGS for this
# pass (the fallback build's programs are built with KK_NO_JUMP_LABEL); the
# programs include test/tasks.h with <tasks.h>.
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
CC=${CC:-cc}
tmp=$(mktemp -d "/tmp/kk-${KK_CPROG_NAME:-cprog}.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
CFLAGS="-O2 -Wall -Wextra -Werror -I$SRC/include -I$SRC/test -pthread"
[ "${KK_TEST_LABEL:-default}" = fallback ] && CFLAGS="$CFLAGS -DKK_NO_JUMP_LABEL"
