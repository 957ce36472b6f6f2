#!/bin/sh
# SPDX-License-Identifier: MIT
# A static position-independent program (-static-pie) against libkernelkit.a
# (whose objects are -fPIC): the same checks as links_static.sh.
. "${KK_SRC:?}/test/links-lib.sh"
links_no_static_san
links_need "-static-pie" -static-pie -fPIE
links_build static-pie -DLINKS_EARLY_WARN -static-pie -fPIE "$B/libkernelkit.a" -pthread -ldl
links_run static-pie
