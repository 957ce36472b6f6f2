#!/bin/sh
# SPDX-License-Identifier: MIT
# The bash completion: commands, options, pids from kkctl ls, and file names
# from kkctl -p PID files; every option --help lists, and --help lists every
# option that completes.
set -u
command -v bash > /dev/null || { echo "skip: no bash"; exit 77; }
B=${KK_BUILD:?}
SRC=${KK_SRC:?}
tmp=$(mktemp -d /tmp/kk-compl.XXXXXX)
pid=
fail() { echo "FAIL: $*"; [ -n "$pid" ] && kill "$pid"; rm -rf "$tmp"; exit 1; }
mkfifo "$tmp/f"
control_env=
[ "${KK_TEST_LABEL:-default}" = fallback ] && control_env=KK_CONTROL=1
env $control_env "$B/test/progs/jump_label_prog" > "$tmp/f" &
pid=$!
read -r line < "$tmp/f" || fail "jump_label_prog did not start"
. "$SRC/test/completion-lib.sh"
[ "$(complete kkctl re | tr '\n' ' ')" = "read record " ] || fail "commands: $(complete kkctl re)"
complete kkctl --j | grep -qx -- --json || fail "options: $(complete kkctl --j)"
complete kkctl --max | grep -qx -- --max-reply || fail "options: $(complete kkctl --max)"
complete kkctl --tr | grep -qx -- --tree || fail "options: $(complete kkctl --tr)"
# Every long option --help lists (kkctl.c's option table prints it) completes.
for o in $("$B/kkctl" --help | grep -oE -- '--[a-z][a-z-]*' | sort -u); do
	complete kkctl "$o" | grep -qx -- "$o" || fail "--help lists $o, completion does not"
done
# ... and every long option that completes is in --help.
help=$("$B/kkctl" --help)
for o in $(complete kkctl -- | grep -E -- '^--[a-z]'); do
	printf '%s\n' "$help" | grep -q -- "$o\b" || fail "completion offers $o, --help does not list it"
done
complete kkctl --tree "" | grep -qx "$$" || fail "--tree pids: $(complete kkctl --tree '' | head -3)"
# A tree's pid is a target, not the command.
[ "$(complete kkctl -T 1 re | tr '\n' ' ')" = "read record " ] || fail "after -T 1: $(complete kkctl -T 1 re)"
# A bound's value is not the command.
[ "$(complete kkctl -t 1 re | tr '\n' ' ')" = "read record " ] || fail "after -t 1: $(complete kkctl -t 1 re)"
complete kkctl -p "" | grep -qx "$pid" || fail "pids: $(complete kkctl -p '')"
complete kkctl -n jump_label_ | grep -qx jump_label_prog || fail "names: $(complete kkctl -n jump_label_)"
complete kkctl -p "$pid" record --format j | grep -qx jsonl || fail "formats: $(complete kkctl -p "$pid" record --format j)"
complete kkctl -p "$pid" record --w | grep -qx -- --wallclock || fail "record options: $(complete kkctl -p "$pid" record --w)"
complete kkctl -p "$pid" read st | grep -qx static_keys || fail "files: $(complete kkctl -p "$pid" read st)"
kill "$pid"; wait "$pid" 2>/dev/null
rm -rf "$tmp"
echo "kkctl_completion: ok"
