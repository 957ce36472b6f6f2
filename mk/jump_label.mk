# SPDX-License-Identifier: MIT
# The static-key benchmark's site modules: 16154 sites over 8 shared objects,
# generated at build time into $(B)/bench-mods/.
KKBM_SIZES := 2019 2019 2019 2019 2019 2019 2019 2021
KKBM_IDS   := 0 1 2 3 4 5 6 7
KKBM_LIBS  := $(patsubst %,$(B)/bench-mods/libkkbm%.so,$(KKBM_IDS))
EXTRA_ALL  += $(KKBM_LIBS)

$(B)/bench-mods/kkbm%.c: bench/gen-sites.sh
	@mkdir -p $(dir $@)
	sh bench/gen-sites.sh $(word $(shell expr $* + 1),$(KKBM_SIZES)) > $@

$(B)/bench-mods/libkkbm%.so: $(B)/bench-mods/kkbm%.c $(HDRS) $(B)/libkernelkit.so
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
	$(CC) $(KK_CPPFLAGS) -Itest $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(LINK_KK) $(KK_LDFLAGS)
