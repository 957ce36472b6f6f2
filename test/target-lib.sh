# SPDX-License-Identifier: MIT
# The dynamic-debug target of the kkctl scripts, sourced after `set -u`:
# sets B, K (kkctl), TARGET, tmp (a fresh directory named after
# $KK_TARGET_NAME) and fail(), which kills the target and removes $tmp;
# starts $TARGET with its stdout on a fifo, its pid in $pid, and waits for
# its first line, in $line.  Skips (77) when something is not built.
B=${KK_BUILD:?}
K=$B/kkctl
TARGET=$B/test/progs/dynamic_debug_target
[ -x "$TARGET" ] && [ -x "$K" ] || { echo "not built"; exit 77; }
tmp=$(mktemp -d "/tmp/kk-${KK_TARGET_NAME:-target}.XXXXXX")
pid=
fail() { echo "FAIL: $*"; [ -n "$pid" ] && kill "$pid"; rm -rf "$tmp"; exit 1; }
mkfifo "$tmp/f"
"$TARGET" > "$tmp/f" 2>/dev/null &
pid=$!
read -r line < "$tmp/f" || fail "the target did not start"
