#!/bin/sh
# SPDX-License-Identifier: MIT
# A program that includes the headers after "#pragma GCC visibility
# push(hidden)": every public header must push default visibility for its own
# declarations, or the program's references to the library become hidden and
# the link fails ("hidden symbol ... isn't defined").
. "${KK_SRC:?}/test/links-lib.sh"
links_build pragma-hidden -DLINKS_PRAGMA_HIDDEN -L"$B" -lkernelkit -Wl,-rpath,"$B" -ldl
links_run pragma-hidden
links_build pragma-hidden-archive -DLINKS_PRAGMA_HIDDEN -fvisibility=hidden \
	"$B/libkernelkit.a" -pthread -ldl
links_run pragma-hidden-archive
