#!/bin/sh
# SPDX-License-Identifier: MIT
# A program built with -fvisibility=hidden: the library's declarations
# (functions, DECLARE_STATIC_KEY_FALSE(kk_debug_objects_key)) still bind to the
# shared library, and its own keys and pr_debug sites register.
. "${KK_SRC:?}/test/links-lib.sh"
links_build hidden -fvisibility=hidden -L"$B" -lkernelkit -Wl,-rpath,"$B" -ldl
links_run hidden
links_build hidden-archive -fvisibility=hidden "$B/libkernelkit.a" -pthread -ldl
links_run hidden-archive
