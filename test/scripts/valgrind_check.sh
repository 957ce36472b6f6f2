#!/bin/sh
# SPDX-License-Identifier: MIT
# A small, meaningful part of the suite under real memcheck and helgrind
# (issue 10: "Run a part of the test suite under memcheck and helgrind in
# make check").  About two minutes on a 2-core machine.
#
# memcheck: the static-key API tests that patch code (jump_label_api:
#   branches, refcount, queued, deferred), the flipping program with 4 reader
#   threads, and the dynamic-debug output tests (pr_debug sites are static
#   keys too).
# helgrind: the queued and deferred static-key tests (the worker thread does
#   the deferred decrements) and the flipping program with 2 readers.
# Criterion forks a child per test; valgrind follows forks by itself
# (--trace-children=yes also covers Criterion's re-exec, if any).
# Not here, with the reason:
#   patching::never_writable_and_executable: valgrind's own code cache is a
#     writable+executable mapping in the process;
#   patching::remap_fallback: re-executes the test binary, which valgrind
#     cannot do in place (its loader fails in UME);
#   shazptr, debug objects: lock-free code on C11 atomics that helgrind
#     cannot model (every access would need a suppression).
# Suppressions (test/valgrind/*.supp) are only for documented false positives.
set -u
. "${KK_SRC:?}/test/valgrind-lib.sh"
export KK_BUILD=$B
U=$B/test/unit
P=$B/test/progs
for f in "$U/jump_label_api" "$U/dynamic_debug_output" "$P/jump_label_flip"; do
	[ -x "$f" ] || { echo "not built: $f"; exit 77; }
done

vg_run "memcheck jump_label_api" memcheck --trace-children=yes -- \
	"$U/jump_label_api" --jobs 1 --filter='jump_label_api/@(branches|refcount|queued|deferred)_*'
vg_run "memcheck jump_label_flip" memcheck -- "$P/jump_label_flip" 4 50
vg_run "memcheck dynamic_debug_output" memcheck --trace-children=yes -- "$U/dynamic_debug_output" --jobs 1
vg_run "helgrind jump_label_api" helgrind --trace-children=yes -- \
	"$U/jump_label_api" --jobs 1 --filter='jump_label_api/@(queued|deferred)_*'
vg_run "helgrind jump_label_flip" helgrind -- "$P/jump_label_flip" 2 10
[ -z "$bad" ] || { echo "FAIL:$bad"; exit 1; }
echo "valgrind_check: ok"
