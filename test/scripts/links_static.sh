#!/bin/sh
# SPDX-License-Identifier: MIT
# A fully static program (-static) against libkernelkit.a: it starts (no
# constructor of the library unwinds or aborts, also with KK_PANIC_* set),
# flips a static key, prints pr_debug, reports a debug object, WARNs with a
# call trace (and from a constructor(101), without one) and panics.
. "${KK_SRC:?}/test/links-lib.sh"
links_no_static_san
links_need "-static" -static
links_build static -DLINKS_EARLY_WARN -static "$B/libkernelkit.a" -pthread -ldl
links_run static
