#!/bin/sh
# SPDX-License-Identifier: MIT
# A program built with -flto, linked against the shared library and against
# the static archive: static-key sites, pr_debug descriptors and the library's
# keys survive link-time optimisation.
. "${KK_SRC:?}/test/links-lib.sh"
links_need "-flto" -flto -O2
links_build lto-shared -flto -L"$B" -lkernelkit -Wl,-rpath,"$B" -ldl
links_run lto-shared
links_build lto-archive -flto "$B/libkernelkit.a" -pthread -ldl
links_run lto-archive
