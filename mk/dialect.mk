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

# The same at -O0, for one C and one C++ standard: clang -O0 emits the dead
# branch of an if when it holds a label (an asm goto's), which pr_debug_if()
# must not list (test/dialect/dynamic_debug_level.c).
define DIALECT_O0_RULES
$(B)/test/dialect/$(1)-$(2)-O0: $(DIALECT_SRCS) $(wildcard test/dialect/*.h) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $$(dir $$@)
	$(if $(filter c++,$(3)),$(call dialect_cxx,$(1)),$(1)) -x $(3) -std=$(2) $$(DIALECT_FLAGS) -O0 \
		-o $$@ $(DIALECT_SRCS) -x none $$(LINK_KK) -ldl
DIALECT_BINS += $(B)/test/dialect/$(1)-$(2)-O0
endef

DIALECT_BINS :=
$(foreach cc,$(DIALECT_CCS),$(foreach s,$(DIALECT_C),$(eval $(call DIALECT_RULES,$(cc),$(s),c))))
$(foreach cc,$(DIALECT_CCS),$(foreach s,$(DIALECT_CXX),$(eval $(call DIALECT_RULES,$(cc),$(s),c++))))
$(foreach cc,$(DIALECT_CCS),$(eval $(call DIALECT_O0_RULES,$(cc),c11,c)))
$(foreach cc,$(DIALECT_CCS),$(eval $(call DIALECT_O0_RULES,$(cc),c++17,c++)))
EXTRA_TESTS += $(DIALECT_BINS)

.PHONY: dialects
dialects: $(DIALECT_BINS)

# C++ as C++ is written (test/dialect/cxx/): pr_debug() in every C++ shape in
# one unit, a header-only library (dynamic_debug_lib.h) used by the program and by two
# -fPIC shared objects, and the debugobjects idiom; one program per C++
# compiler and standard:
#   $(B)/test/dialect/cxx-<compiler>-<standard>
# and its shared objects in $(B)/test/dialect-so/<compiler>-<standard>/ (outside
# test/dialect/, whose every executable file is run as a test).
# DIALECT_SO_FLAGS: extra flags for the shared objects (none: they are built
# with jump labels, sites in -fPIC inline functions and templates included).
DIALECT_SO_FLAGS ?=
DIALECT_CXX_SRCS := test/dialect/cxx/dynamic_debug_shapes.cc test/dialect/cxx/debugobjects_idiom.cc
DIALECT_CXX_DEPS := $(wildcard test/dialect/cxx/*) $(HDRS) $(B)/libkernelkit.so

# $(1) compiler (gcc|clang), $(2) standard, $(3) a, b (linked) or c (dlopen'ed)
define DIALECT_SO_RULE
$(B)/test/dialect-so/$(1)-$(2)/libdynamic_debug_lib_$(3).so: $(DIALECT_CXX_DEPS)
	@mkdir -p $$(dir $$@)
	$(call dialect_cxx,$(1)) -std=$(2) $$(DIALECT_FLAGS) -Itest/dialect/cxx -fPIC -shared \
		$$(DIALECT_SO_FLAGS) -DDYNAMIC_DEBUG_LIB_SO_FN=dynamic_debug_lib_so_$(3) -o $$@ test/dialect/cxx/dynamic_debug_lib_so.cc \
		$$(LINK_KK)
endef

# $(1) compiler, $(2) standard
define DIALECT_CXX_RULES
$(call DIALECT_SO_RULE,$(1),$(2),a)
$(call DIALECT_SO_RULE,$(1),$(2),b)
$(call DIALECT_SO_RULE,$(1),$(2),c)
$(B)/test/dialect/cxx-$(1)-$(2): $(DIALECT_CXX_DEPS) $(B)/test/dialect-so/$(1)-$(2)/libdynamic_debug_lib_a.so \
		$(B)/test/dialect-so/$(1)-$(2)/libdynamic_debug_lib_b.so $(B)/test/dialect-so/$(1)-$(2)/libdynamic_debug_lib_c.so
	@mkdir -p $$(dir $$@)
	$(call dialect_cxx,$(1)) -std=$(2) $$(DIALECT_FLAGS) -Itest/dialect/cxx -o $$@ \
		-DDYNAMIC_DEBUG_LIB_C_PATH='"$(ABS_B)/test/dialect-so/$(1)-$(2)/libdynamic_debug_lib_c.so"' \
		$(DIALECT_CXX_SRCS) -L$(B)/test/dialect-so/$(1)-$(2) -ldynamic_debug_lib_a -ldynamic_debug_lib_b \
		-Wl,-rpath,$(ABS_B)/test/dialect-so/$(1)-$(2) $$(LINK_KK) -ldl
DIALECT_CXX_BINS += $(B)/test/dialect/cxx-$(1)-$(2)
endef

DIALECT_CXX_BINS :=
$(foreach cc,$(DIALECT_CCS),$(foreach s,$(DIALECT_CXX),$(eval $(call DIALECT_CXX_RULES,$(cc),$(s)))))
EXTRA_TESTS += $(DIALECT_CXX_BINS)
dialects: $(DIALECT_CXX_BINS)
