# SPDX-License-Identifier: MIT
# The gdb helper, next to the library in the build directory under the name
# gdb's auto-load looks for (<real path of the object>-gdb.py): running a
# program from the build tree under gdb loads it once the build directory is
# on the auto-load safe path (test/scripts/gdb_default.sh does exactly that).
# `make install` puts it in $(PREFIX)/share/gdb/auto-load/ (see the Makefile).
EXTRA_ALL += $(B)/$(KK_LIB_REAL)-gdb.py

$(B)/$(KK_LIB_REAL)-gdb.py: tools/gdb/libkernelkit.so-gdb.py
	@mkdir -p $(dir $@)
	cp $< $@
