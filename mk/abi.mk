# SPDX-License-Identifier: MIT
# The ABI (docs/abi.md): libkernelkit.so exports what src/libkernelkit.map
# lists and nothing else.  Tests that reach past the ABI link another build
# of the same objects instead:
#
#   $(B)/internal/libkernelkit.so  the library's objects without the version
#                                  script: the public symbols plus what src/
#                                  marks KK_WHITEBOX.  Never installed.
#
# It has the real library's soname, and its directory holds it under that
# name, so a white-box test loads exactly one kernelkit: its own DT_NEEDED
# finds the internal build through its runpath, and a module it loads that
# needs the real library's soname (test/lib/*.so, the bench modules) is
# given the copy already loaded (the dynamic linker matches a needed name
# against the sonames of loaded objects before it searches).  One registry,
# one control endpoint.  test/scripts/abi.sh checks which tests link which.

KK_INTERNAL_DIR := $(B)/internal
KK_INTERNAL_SO  := $(KK_INTERNAL_DIR)/libkernelkit.so
LINK_KK_INTERNAL = -L$(KK_INTERNAL_DIR) -lkernelkit -Wl,-rpath,$(abspath $(KK_INTERNAL_DIR))

# Its version script is the real one without "local: *": the API keeps
# its KERNELKIT_1 versions, which modules built against the real library ask
# for, and what src/ marks KK_WHITEBOX stays global (unversioned).
KK_INTERNAL_MAP := $(KK_INTERNAL_DIR)/libkernelkit-internal.map
$(KK_INTERNAL_MAP): src/libkernelkit.map
	@mkdir -p $(dir $@)
	sed -e '/^local:/d' -e '/^[[:space:]]*\*;/d' $< > $@

# The soname is read from the real library, so this follows whatever name
# the real library gets (libkernelkit.so now, libkernelkit.so.N later).
$(KK_INTERNAL_SO): $(LIB_OBJS) $(KK_INTERNAL_MAP) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	soname=$$(readelf -d $(B)/libkernelkit.so | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'); \
	test -n "$$soname" && \
	$(CC) -shared -Wl,-soname,$$soname -Wl,-z,nodelete $(KK_SO_LDFLAGS) $(KK_LDFLAGS) \
		-Wl,--version-script,$(KK_INTERNAL_MAP) \
		-o $(KK_INTERNAL_DIR)/$$soname $(LIB_OBJS) $(LIB_LDLIBS) && \
	if [ "$$soname" != libkernelkit.so ]; then ln -sf $$soname $@; fi

# The white-box unit tests: they include src/ headers and call internals.
# "private": the override must not reach their prerequisites (test/lib/*.so
# link the real library and are shared with every other test).
KK_WHITEBOX_UNITS := common_env dynamic_debug_write_order text_poke_cow text_poke_faults text_sync \
	text_sync_sigmask threads_worker
KK_WHITEBOX_BINS  := $(patsubst %,$(B)/test/unit/%,$(KK_WHITEBOX_UNITS))
$(KK_WHITEBOX_BINS): $(KK_INTERNAL_SO)
$(KK_WHITEBOX_BINS): private LINK_KK = $(LINK_KK_INTERNAL)

# kk-bench times internals (bench/text_sync.c: kk_sync_round(), kk_stop_machine()).
$(B)/kk-bench: $(KK_INTERNAL_SO)
$(B)/kk-bench: private LINK_KK = $(LINK_KK_INTERNAL)

EXTRA_TESTS += $(KK_INTERNAL_SO)
