# SPDX-License-Identifier: MIT
# Static keys (jump_label): the benchmark's site modules: 16154 sites over 8 shared objects,
# generated at build time into $(B)/bench-mods/.
JUMP_LABEL_MOD_SIZES := 2019 2019 2019 2019 2019 2019 2019 2021
JUMP_LABEL_MOD_IDS   := 0 1 2 3 4 5 6 7
JUMP_LABEL_MOD_LIBS  := $(patsubst %,$(B)/bench-mods/libjump_label_mod%.so,$(JUMP_LABEL_MOD_IDS))
EXTRA_ALL  += $(JUMP_LABEL_MOD_LIBS)

$(B)/bench-mods/jump_label_mod%.c: bench/gen-sites.sh
	@mkdir -p $(dir $@)
	sh bench/gen-sites.sh $(word $(shell expr $* + 1),$(JUMP_LABEL_MOD_SIZES)) > $@

$(B)/bench-mods/libjump_label_mod%.so: $(B)/bench-mods/jump_label_mod%.c $(HDRS) $(B)/libkernelkit.so
	$(CC) $(KK_CPPFLAGS) -O2 $(KK_CFLAGS) -shared -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

# A C++ template site in a -fPIC shared object, for the disabled-site cost.
KK_CXX := $(if $(findstring clang,$(CC)),clang++,g++)
EXTRA_ALL += $(B)/bench-mods/libkkbcxx.so
$(B)/bench-mods/libkkbcxx.so: bench/cxx/kkb_cxx.cc $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(KK_CXX) -Iinclude -O2 -g -std=c++17 -Wall -Wextra -Werror -pedantic -fPIC -pthread $(SAN) \
		-shared -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

# Long-running programs that the script tests drive with kkctl.
PROG_BINS   := $(patsubst test/progs/%.c,$(B)/test/progs/%,$(wildcard test/progs/*.c))
EXTRA_TESTS += $(PROG_BINS)

$(B)/test/progs/%: test/progs/%.c test/kktest.h $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itest $(CFLAGS) $(KK_CFLAGS) $(PROG_CFLAGS_$*) -o $@ $< $(LINK_KK) \
		$(KK_LDFLAGS)
# The test build of the bench's server counts the endpoint's clients.
PROG_CFLAGS_mp_server := -DMP_COUNT_CTL

# Conformance: test_static_keys (the kernel's lib/test_static_keys.c) uses the
# keys of a second module, libstatic_key_base.so (the kernel's
# lib/test_static_key_base.c).
CONF_LDLIBS_test_static_keys := -lstatic_key_base
