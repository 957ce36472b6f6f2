# SPDX-License-Identifier: MIT
# The dialect matrix: test/dialect/*.c is one consumer program (one file per
# facility plus main.c), written in the common subset of C and C++.  It is
# built once per language standard and compiler, with -Wall -Wextra -Werror
# -pedantic and no -D_GNU_SOURCE, and each build is a test (exit 0 = pass):
#   $(B)/test/dialect/<compiler>-<standard>
# In a sanitizer build only gcc is used: a clang-built program cannot load a
# gcc-ASan library.
DIALECT_C    := c99 c11 c17 c2x gnu11
DIALECT_CXX  := c++11 c++14 c++17 c++20 c++2b
DIALECT_CCS  := $(if $(SAN),gcc,gcc clang)
DIALECT_SRCS := $(wildcard test/dialect/*.c)
DIALECT_FLAGS = -Wall -Wextra -Werror -pedantic -Iinclude -Itest/dialect -O2 -g -pthread \
	$(SAN) $(filter -DKK_NO_JUMP_LABEL,$(EXTRA_CFLAGS))

dialect_cxx = $(if $(filter gcc,$(1)),g++,clang++)

# $(1) compiler (gcc|clang), $(2) standard, $(3) language (c|c++)
define DIALECT_RULES
$(B)/test/dialect/$(1)-$(2): $(DIALECT_SRCS) $(wildcard test/dialect/*.h) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $$(dir $$@)
	$(if $(filter c++,$(3)),$(call dialect_cxx,$(1)),$(1)) -x $(3) -std=$(2) $$(DIALECT_FLAGS) \
		-o $$@ $(DIALECT_SRCS) -x none $$(LINK_KK) -ldl
DIALECT_BINS += $(B)/test/dialect/$(1)-$(2)
endef

DIALECT_BINS :=
$(foreach cc,$(DIALECT_CCS),$(foreach s,$(DIALECT_C),$(eval $(call DIALECT_RULES,$(cc),$(s),c))))
$(foreach cc,$(DIALECT_CCS),$(foreach s,$(DIALECT_CXX),$(eval $(call DIALECT_RULES,$(cc),$(s),c++))))
EXTRA_TESTS += $(DIALECT_BINS)

.PHONY: dialects
dialects: $(DIALECT_BINS)
