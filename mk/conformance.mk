# SPDX-License-Identifier: MIT
# The kernel-conformance suite: kernel-style test modules in test/conformance/,
# built against test/conformance/include/linux/ (build plumbing only: module_init,
# MODULE_*, EXPORT_SYMBOL*, printk) and kernelkit's headers, with the kernel's
# -std=gnu11 and KBUILD_MODNAME set by the build as kbuild sets it.
#   test/conformance/test_<name>.c -> $(B)/test/conformance/test_<name> (exit 0 = pass)
#   test/conformance/lib<name>.c   -> $(B)/test/conformance/lib<name>.so, a second
#                                     "module" that a test links with
#                                     CONF_LDLIBS_test_<name> := -l<name>
CONF_SRCS := $(wildcard test/conformance/test_*.c)
CONF_LIBS := $(patsubst test/conformance/lib%.c,$(B)/test/conformance/lib%.so,$(wildcard test/conformance/lib*.c))
CONF_BINS := $(patsubst test/conformance/%.c,$(B)/test/conformance/%,$(CONF_SRCS))
CONF_HDRS := $(wildcard test/conformance/include/linux/*.h)
# The warnings the kernel's own build leaves off.
CONF_CFLAGS = -Itest/conformance/include -Iinclude $(CFLAGS) $(KK_CFLAGS) \
	-Wno-unused-parameter -Wno-sign-compare -Wno-missing-field-initializers
EXTRA_TESTS += $(CONF_LIBS) $(CONF_BINS)

$(B)/test/conformance/lib%.so: test/conformance/lib%.c $(CONF_HDRS) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -DKBUILD_MODNAME='"$*"' $(CONF_CFLAGS) -shared -o $@ $< \
		$(LINK_KK) $(KK_LDFLAGS)

$(B)/test/conformance/test_%: test/conformance/test_%.c test/conformance/runner.c $(CONF_HDRS) \
		$(HDRS) $(B)/libkernelkit.so $(CONF_LIBS)
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -DKBUILD_MODNAME='"test_$*"' $(CONF_CFLAGS) -o $@ $< \
		test/conformance/runner.c -L$(B)/test/conformance \
		-Wl,-rpath,$(ABS_B)/test/conformance $(CONF_LDLIBS_test_$*) $(LINK_KK) $(KK_LDFLAGS) -ldl
