#!/bin/sh
# SPDX-License-Identifier: MIT
# The endpoint's thread makes no descriptor on its own after its start, in
# the process and in a fork child (test/progs/control_fork_fds.c says why).
# The old library read its peer rules on that thread: "parent: the library's
# thread made 2 descriptor(s) after its start, first /proc/self/uid_map",
# and the same in the child.  Nor does fork() open a file in the child: it
# keeps its parent's peer rules (441a488 read them again inside fork():
# "fork child: fork() opened 2 file(s) in the child, first /proc/self/uid_map").
set -u
B=${KK_BUILD:?}
PROG=$B/test/progs/control_fork_fds
[ -x "$PROG" ] || { echo "not built"; exit 77; }
out=$(timeout 600 "$PROG" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "FAIL: control_fork_fds exited $rc"; exit 1; }
