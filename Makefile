# SPDX-License-Identifier: MIT
#
# kernelkit build.  Everything goes under $(B) (default: build/).  The same rules
# build the sanitizer, fallback and clang variants into other directories, e.g.
#   make B=build/san SAN="-fsanitize=address,undefined" tests
#
# Layout conventions (so that facilities can be added without editing this file):
#   src/*.c, src/<facility>/*.c      -> libkernelkit.{a,so}
#   src/arch/$(ARCH)/*.c              -> arch code (src/arch/generic/ when there is none)
#   src/<facility>/internal.h         -> that facility's private header; a one-file unit
#                                        src/<unit>.c has src/<unit>.h (control.h, text_poke.h)
#   src/common/                       -> internals shared by every facility (common/internal.h)
#   Private headers are included by their path from src/ ("jump_label/internal.h",
#   never a bare "internal.h"): the build passes -Isrc.
#   test/unit/*.c                     -> one Criterion program per behaviour
#   test/stress/*.c                   -> one plain program each (exit 0 = pass)
#   test/lib/*.c                      -> $(B)/test/lib/lib<name>.so helper objects for tests
#   test/scripts/*.sh                 -> shell tests (exit 0 pass, 77 skip)
#   bench/*.c                         -> linked into kk-bench
#   mk/*.mk                           -> extra rules a facility needs (included below)

B        ?= build
CC       ?= cc
ARCH     ?= $(shell uname -m)
CFLAGS   ?= -O2 -g
CPPFLAGS ?=
LDFLAGS  ?=
SAN      ?=
EXTRA_CFLAGS ?=
VERSION  := 0.1.0

# The ABI of libkernelkit.so: the soname is libkernelkit.so.$(ABI_MAJOR), the
# file libkernelkit.so.$(ABI_MAJOR).$(ABI_MINOR).$(ABI_PATCH).  Bump MAJOR when
# an exported symbol goes away or changes meaning, MINOR when one is added.
ABI_MAJOR := 1
ABI_MINOR := 1
ABI_PATCH := 0
KK_SONAME    := libkernelkit.so.$(ABI_MAJOR)
KK_LIB_REAL  := $(KK_SONAME).$(ABI_MINOR).$(ABI_PATCH)

# Where `make install` puts things (GNU conventions; DESTDIR stages them).
PREFIX     ?= /usr/local
DESTDIR    ?=
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
DOCDIR     ?= $(DATADIR)/doc/kernelkit
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# Private to kernelkit: the LD_PRELOAD library, which has no soname and so
# does not belong in the linker's search path.
PKGLIBDIR  ?= $(LIBDIR)/kernelkit
BASHCOMPDIR ?= $(DATADIR)/bash-completion/completions
GDBAUTOLOADDIR ?= $(DATADIR)/gdb/auto-load

ifeq ($(origin CC),default)
CC := cc
endif

KK_CPPFLAGS := -D_GNU_SOURCE -Iinclude -Isrc $(CPPFLAGS)
KK_CFLAGS   := -std=gnu11 -Wall -Wextra -fPIC -pthread $(SAN) $(EXTRA_CFLAGS)
KK_LDFLAGS  := -pthread $(SAN) $(LDFLAGS)
ABS_B        = $(abspath $(B))

ARCH_DIR := $(if $(wildcard src/arch/$(ARCH)/*.c),src/arch/$(ARCH),src/arch/generic)
LIB_SRCS := $(filter-out src/arch/%,$(wildcard src/*.c src/*/*.c)) $(wildcard $(ARCH_DIR)/*.c)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
LIB_LDLIBS := -ldl -lpthread

HDRS := $(wildcard include/kernelkit/*.h include/kernelkit/arch/*/*.h) $(wildcard src/*.h src/*/*.h src/arch/*/*.h)

UNIT_SRCS   := $(wildcard test/unit/*.c)
STRESS_SRCS := $(wildcard test/stress/*.c)
TLIB_SRCS   := $(wildcard test/lib/*.c)
UNIT_BINS   := $(patsubst test/unit/%.c,$(B)/test/unit/%,$(UNIT_SRCS))
STRESS_BINS := $(patsubst test/stress/%.c,$(B)/test/stress/%,$(STRESS_SRCS))
TLIBS       := $(patsubst test/lib/%.c,$(B)/test/lib/lib%.so,$(TLIB_SRCS))

BENCH_SRCS  := $(wildcard bench/*.c)
BENCH_LDLIBS := -lm

# Extra programs and rules contributed by facilities.
EXTRA_ALL   :=
EXTRA_TESTS :=

# Link against the shared library found in $(B) at run time, so that the
# program, its test objects and dlopen'ed modules share one registry.
LINK_KK := -L$(B) -lkernelkit -Wl,-rpath,$(ABS_B)

.PHONY: all lib tests check demo bench install install-build \
	uninstall clean deps help FORCE
# Keep generated sources (bench and demo modules) for reading and debugging.
.SECONDARY:
all: lib $(B)/kkctl $(B)/kk-bench

# The library: the real file, its soname link (what programs load) and the
# development link (what -lkernelkit finds).
lib: $(B)/libkernelkit.a $(B)/$(KK_LIB_REAL) $(B)/$(KK_SONAME) $(B)/libkernelkit.so

-include mk/*.mk

all: $(EXTRA_ALL)

# KK_LIBRARY_BUILD: the library's own units skip the per-object constructors
# of the public headers (the library has no sites of its own).
# -fvisibility=hidden: only what src/ marks KK_EXPORT (or a public header
# declares) leaves an object; src/libkernelkit.map decides (docs/abi.md).
KK_LIB_CFLAGS := -fvisibility=hidden
$(B)/obj/%.o: %.c $(HDRS) $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -DKK_LIBRARY_BUILD $(CFLAGS) $(KK_CFLAGS) $(KK_LIB_CFLAGS) -c -o $@ $<

# In the shared library only: wrappers that find the real function with
# dlsym(RTLD_NEXT), which a static program cannot do.
LIB_SO_ONLY := $(B)/obj/src/dynamic_debug/inherit_spawn.o $(B)/obj/src/text_sync_waits.o
$(B)/libkernelkit.a: $(filter-out $(LIB_SO_ONLY),$(LIB_OBJS))
	@mkdir -p $(dir $@)
	rm -f $@
	ar rcs $@ $^

# -z nodelete: keys point into the library's registry; it must never be unmapped.
# What every process that links the library pays at load (kk-bench guest):
# -Bsymbolic-functions: calls between the library's own functions are direct,
#   no PLT slot and no symbol lookup on first use (nothing public changes:
#   the same symbols are exported, only the library's own calls skip them);
# -z separate-code stays (the default): -z noseparate-code would save two
#   mappings and about 3% of a hello world's start-up, but makes .rodata
#   executable; a library does not give up its users' hardening for that.
KK_SO_LDFLAGS := -Wl,-Bsymbolic-functions
# The version script lists every export (KERNELKIT_1); everything else is local.
KK_MAP := src/libkernelkit.map
$(B)/$(KK_LIB_REAL): $(LIB_OBJS) $(KK_MAP) $(B)/.flags
	$(CC) -shared -Wl,-soname,$(KK_SONAME) -Wl,-z,nodelete $(KK_SO_LDFLAGS) $(KK_LDFLAGS) \
		-Wl,--version-script,$(KK_MAP) -o $@ $(filter %.o,$^) $(LIB_LDLIBS)

# Relative links, so that the build directory can be moved or copied.  make
# follows a link to its target's time: a link stays up to date with its file.
$(B)/$(KK_SONAME): $(B)/$(KK_LIB_REAL)
	ln -sf $(KK_LIB_REAL) $@
$(B)/libkernelkit.so: $(B)/$(KK_SONAME)
	ln -sf $(KK_SONAME) $@

# Objects depend on the flags they were built with: $(B)/.flags holds them and
# is rewritten only when they change (a build with other EXTRA_CFLAGS, SAN, CC,
# ... into the same $(B) rebuilds everything; the same flags rebuild nothing,
# and `make -q` stays exact).
KK_FLAGS_NOW := $(strip CC=$(CC) ARCH=$(ARCH) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) $(KK_LIB_CFLAGS) \
	LD: $(KK_SO_LDFLAGS) $(KK_LDFLAGS) $(LIB_LDLIBS))
ifneq ($(KK_FLAGS_NOW),$(strip $(file <$(B)/.flags)))
$(B)/.flags: FORCE
endif
$(B)/.flags:
	@mkdir -p $(dir $@)
	@printf '%s\n' '$(subst ','\'',$(KK_FLAGS_NOW))' > $@
	@echo "$@: the build flags changed, objects in $(B) will be rebuilt"
FORCE:

# kkctl does not link the library (it must not start an endpoint of its own);
# it shares only the socket-path rules.  tools/kkctl.c is its entry point,
# tools/kkctl/ the rest (one file per job, kkctl/kkctl.h their header).
# (and the query parser, pure functions over strings: kkctl checks a long
# dynamic_debug/control write before it sends the first piece; and the
# parse of a printf conversion, by which record decodes trace_pipe_raw)
KKCTL_SRCS := tools/kkctl.c $(sort $(wildcard tools/kkctl/*.c)) src/control_path.c \
	src/dynamic_debug/query.c src/dynamic_debug/printf_conv.c
$(B)/kkctl: $(KKCTL_SRCS) $(wildcard tools/kkctl/*.h) src/control_path.h src/dynamic_debug/query.h \
		src/dynamic_debug/printf_conv.h \
		$(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -DKK_VERSION='"$(VERSION)"' $(CFLAGS) $(KK_CFLAGS) -o $@ \
		$(KKCTL_SRCS) $(KK_LDFLAGS)

$(B)/kk-bench: $(BENCH_SRCS) bench/bench.h $(B)/libkernelkit.so $(HDRS)
	$(CC) $(KK_CPPFLAGS) -Ibench $(CFLAGS) $(KK_CFLAGS) -rdynamic -o $@ $(BENCH_SRCS) \
		$(LINK_KK) $(KK_LDFLAGS) $(BENCH_LDLIBS) -ldl

# The preload library as installed: the build tree's copy
# (mk/debugobjects.mk) finds libkernelkit through an rpath into $(B), which an
# installed object must not carry; this one finds it where the loader looks.
# Like that copy, it has its own hidden env.o and exports only what its
# version script lists.
$(B)/inst/libkernelkit-odebug.so: src/debugobjects/preload/odebug_preload.c $(B)/obj/src/common/env.o \
		$(DEBUGOBJECTS_PRELOAD_MAP) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -fvisibility=hidden -shared -o $@ $< \
		$(B)/obj/src/common/env.o -Wl,--version-script,$(DEBUGOBJECTS_PRELOAD_MAP) \
		-L$(B) -lkernelkit $(KK_LDFLAGS) -ldl

# ---- tests ---------------------------------------------------------------
$(B)/test/lib/lib%.so: test/lib/%.c $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -shared -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

$(B)/test/unit/%: test/unit/%.c test/kktest.h $(HDRS) $(B)/libkernelkit.so $(TLIBS)
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itest $(CFLAGS) $(KK_CFLAGS) -rdynamic -o $@ $< \
		$(LINK_KK) -lcriterion $(KK_LDFLAGS) -ldl $(TEST_LDLIBS_$*)

$(B)/test/stress/%: test/stress/%.c test/kktest.h $(HDRS) $(B)/libkernelkit.so $(TLIBS)
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itest $(CFLAGS) $(KK_CFLAGS) -rdynamic -o $@ $< \
		$(LINK_KK) $(KK_LDFLAGS) -ldl $(TEST_LDLIBS_$*)

# What the tests need: the test programs, and what they load or drive
# (kkctl, the preload library, the gdb helper, the timer-wheel demo, the
# 16154-site modules, the guest hello worlds).  Not `all`: kk-bench, its peers
# and liburcu/libck, the demo's dynamic-debug modules and the 16000-site guest
# objects are the benchmarks' and the demo's.
TEST_RUN_DEPS = lib $(B)/kkctl $(B)/libkernelkit-odebug.so $(B)/$(KK_LIB_REAL)-gdb.py \
	$(DEBUGOBJECTS_TW_DEMO) $(JUMP_LABEL_MOD_LIBS) $(GUEST_DIR)/hello-plain $(GUEST_DIR)/hello-kk
TEST_BUILD = $(TEST_RUN_DEPS) $(TLIBS) $(UNIT_BINS) $(STRESS_BINS) $(EXTRA_TESTS)
tests: $(TEST_BUILD)

deps:
	@sh scripts/ensure-deps.sh

# ---- running the tests ---------------------------------------------------
# Every test program is a target: $(B)/test-logs/<group>_<program>.res, made
# by scripts/run-one.sh (always: FORCE), next to its .log and report.  A
# group or a pass depends on its programs' targets, so make -j2 runs them
# side by side, and scripts/tally.sh adds them up into $(B)/results.txt.
#   make check-quick              the default build's suite (the edit-test loop)
#   make check-unit, check-stress, check-conformance, check-dialect,
#        check-scripts            one group (of $(B), label $(CHECK_LABEL))
#   make check-one T=unit/dynamic_debug_output   one program (or several: T="a b")
#   make check-test/unit/dynamic_debug_output    the same, as a target name
# Names are group/program as in the tally: unit/X, stress/X, conformance/test_X,
# dialect/X, script/X.sh.  B= and the build flags pick the build as for `tests`.
CHECK_LABEL ?= default
TEST_LOGS := $(B)/test-logs
UNIT_TESTS   := $(patsubst $(B)/test/%,%,$(UNIT_BINS))
STRESS_TESTS := $(patsubst $(B)/test/%,%,$(STRESS_BINS))
CONF_TESTS   := $(patsubst $(B)/test/%,%,$(CONF_BINS))
DIALECT_TESTS := $(patsubst $(B)/test/%,%,$(DIALECT_BINS) $(DIALECT_CXX_BINS))
SCRIPT_TESTS := $(patsubst test/scripts/%,script/%,$(wildcard test/scripts/*.sh))
ALL_TESTS := $(UNIT_TESTS) $(STRESS_TESTS) $(CONF_TESTS) $(DIALECT_TESTS) $(SCRIPT_TESTS)
test_res = $(patsubst %,$(TEST_LOGS)/%.res,$(subst /,_,$(1)))

# Run one after another, never two at once (in one make; see docs/testing.md
# for why each is here): one job runs them in a row, beside the others.
SERIAL_TESTS_WANTED := script/text_poke_torture.sh stress/jump_label_stress \
	script/jump_label_stress_stop_machine.sh script/jump_label_stress_sync_signal.sh \
	script/jump_label_stress_remap.sh stress/jump_label_signal stress/jump_label_failed_enable \
	stress/jump_label_16154 stress/jump_label_threads stress/text_poke_torture \
	script/jump_label_stress_handler_mask.sh stress/jump_label_blocking_workers
SERIAL_TESTS = $(filter $(ALL_TESTS),$(SERIAL_TESTS_WANTED))
# The longest first, so that no long program is left running alone at the end.
FIRST_TESTS := script/valgrind_check.sh script/valgrind_flip.sh

# group/program -> the command that runs it.  A Criterion program runs two
# cases at a time (TEST_JOBS_<unit/program> to change).
test_cmd = $(if $(filter script/%,$(1)),sh test/scripts/$(notdir $(1)),$(B)/test/$(1)$(if \
	$(filter unit/%,$(1)), --jobs $(or $(TEST_JOBS_$(1)),2) --verbose))
# Criterion 2.4.1's runner leaks 48 bytes (calloc under
# criterion_run_all_tests) when its two workers end close together, which
# LeakSanitizer reports in the ASan pass (rc 1, every case passed).  A 4 s
# sleep in the stalled-client case used to keep the workers apart.
TEST_JOBS_unit/control_endpoint := 1
TEST_JOBS_unit/text_sync_sigmask := 1
# group/program -> what must be built before it runs: the program, and what
# it loads (TEST_NEEDS_<group/program>); a script may use anything the tests
# build (SCRIPT_DEPS: scripts/mutate.sh builds less, for speed).
SCRIPT_DEPS ?= $(TEST_BUILD)
test_deps = $(if $(filter script/%,$(1)),test/scripts/$(notdir $(1)) $(SCRIPT_DEPS),$(B)/test/$(1)) \
	$(TEST_NEEDS_$(1))
TEST_NEEDS_unit/jump_label_registry := $(JUMP_LABEL_MOD_LIBS)
TEST_NEEDS_stress/jump_label_16154  := $(JUMP_LABEL_MOD_LIBS)
TEST_NEEDS_unit/settings_env := $(B)/test/progs/kk_env_state $(B)/libkernelkit-odebug.so
TEST_NEEDS_unit/threads_stop := $(B)/test/progs/threads_prog
run_test = sh scripts/run-one.sh $(B) $(CHECK_LABEL) $(1) $(call test_cmd,$(1))

define TEST_RULE
$(call test_res,$(1)): $(call test_deps,$(1)) FORCE
	@$(call run_test,$(1))
.PHONY: check-test/$(1)
check-test/$(1): $(call test_res,$(1))
	@$(call tally,$(1))
endef
$(foreach t,$(ALL_TESTS),$(eval $(call TEST_RULE,$(t))))

# The serial programs' own rules (above) serve check-one; a pass runs them
# through this one target, one after another.
$(TEST_LOGS)/serial.stamp: $(foreach t,$(SERIAL_TESTS),$(call test_deps,$(t))) FORCE
	@$(foreach t,$(SERIAL_TESTS),$(call run_test,$(t));) true

# $(1): the programs; the serial ones go through serial.stamp.
check_res = $(call test_res,$(filter $(FIRST_TESTS),$(1))) \
	$(if $(filter $(SERIAL_TESTS),$(1)),$(TEST_LOGS)/serial.stamp) \
	$(call test_res,$(filter-out $(SERIAL_TESTS) $(FIRST_TESTS),$(1)))
# KK_TALLY_STATUS: a group or program run alone fails make when a test fails;
# check runs every pass and lets scripts/summary.sh decide at the end.
KK_TALLY_STATUS ?= 1
tally = KK_TALLY_STATUS=$(KK_TALLY_STATUS) sh scripts/tally.sh $(B) $(CHECK_LABEL) $(call test_res,$(1))

.PHONY: check-quick check-pass check-unit check-stress check-conformance check-dialect \
	check-scripts check-one
check-pass: $(call check_res,$(ALL_TESTS))
	@$(call tally,$(ALL_TESTS))
check-unit: $(call check_res,$(UNIT_TESTS))
	@$(call tally,$(UNIT_TESTS))
check-stress: $(call check_res,$(STRESS_TESTS))
	@$(call tally,$(STRESS_TESTS))
check-conformance: $(call check_res,$(CONF_TESTS))
	@$(call tally,$(CONF_TESTS))
check-dialect: $(call check_res,$(DIALECT_TESTS))
	@$(call tally,$(DIALECT_TESTS))
check-scripts: $(call check_res,$(SCRIPT_TESTS))
	@$(call tally,$(SCRIPT_TESTS))
ifneq ($(filter check-one,$(MAKECMDGOALS)),)
ifeq ($(strip $(T)),)
$(error usage: make check-one T=group/program, e.g. T=unit/dynamic_debug_output)
endif
ifneq ($(filter-out $(ALL_TESTS),$(T)),)
$(error no such test: $(filter-out $(ALL_TESTS),$(T)) (names: unit/X, stress/X, conformance/test_X, dialect/X, script/X.sh))
endif
endif
check-one: $(call test_res,$(T))
	@$(call tally,$(T))

# The README's test command: every pass, each built and run with make -j
# (-j$(CHECK_JOBS) unless make was given a -j), into one tally:
#   default     gcc -Werror                          $(B)
#   asan+ubsan  -fsanitize=address,undefined         $(B)/san
#   fallback    -DKK_NO_JUMP_LABEL                   $(B)/nojl
#   clang       clang -Wall -Wextra -Werror, built only  $(B)/clang
#   aarch64     the guest (mk/aarch64.mk)            $(B)/aarch64
# A pipeline: the passes' tests run one pass after the other (so that no two
# passes' serial programs run at once), and each build runs beside the
# previous pass's tests, where a pass's last long programs leave a job free:
#   build default | tests default + build san | tests san + build fallback
#   | tests fallback + clang build | the arm64 guest, alone
CHECK_JOBS ?= 2
CHECK_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(CHECK_JOBS))
CHECK_SAN := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
PASS_default := B=$(B) EXTRA_CFLAGS=-Werror CHECK_LABEL=default
PASS_san     := B=$(B)/san SAN="$(CHECK_SAN)" CHECK_LABEL=asan+ubsan
PASS_nojl    := B=$(B)/nojl EXTRA_CFLAGS=-DKK_NO_JUMP_LABEL CHECK_LABEL=fallback
check: deps
	+@$(call timed,$(MAKE) $(CHECK_J) check-all)
	sh scripts/summary.sh $(B)

# The default pass of check alone, built as check builds it.
check-quick:
	+$(MAKE) $(CHECK_J) $(PASS_default) check-pass

.PHONY: check-all check-clang check-build-default check-build-san \
	check-build-nojl check-run-default check-run-san check-run-nojl check-guest
check-all: check-run-default check-run-san check-run-nojl check-clang check-guest
# $(call timed,command): run it, then say how long the step took (docs/testing.md).
timed = t0=$$(date +%s); $(1); rc=$$?; echo "[check] $@: $$(($$(date +%s) - t0)) s"; exit $$rc
# Explicit rules: make applies no pattern rule to a .PHONY target.
check-build-default check-build-san check-build-nojl:
	+@$(call timed,$(MAKE) $(PASS_$(@:check-build-%=%)) tests)
check-build-san: check-build-default
check-build-nojl: check-run-default
check-clang: check-run-san
check-run-default: check-build-default
	+@$(call timed,$(MAKE) $(PASS_default) KK_TALLY_STATUS=0 check-pass)
check-run-san: check-build-san check-run-default
	+@$(call timed,$(MAKE) $(PASS_san) KK_TALLY_STATUS=0 check-pass)
check-run-nojl: check-build-nojl check-run-san
	+@$(call timed,$(MAKE) $(PASS_nojl) KK_TALLY_STATUS=0 check-pass)
check-clang:
	+@$(call timed,$(MAKE) B=$(B)/clang CC=clang EXTRA_CFLAGS=-Werror all)
	@echo "clang -Wall -Wextra -Werror build: ok"
# The guest last, alone: its timing-sensitive stress programs run under TCG.
# Its failure reaches scripts/summary.sh through its results.txt.
check-guest: check-run-nojl check-clang
	-+@$(call timed,$(MAKE) check-aarch64)

bench: deps all peers
	$(B)/kk-bench all --json $(B)/bench.json

demo: deps all
	sh examples/demo.sh $(B)

# ---- install -------------------------------------------------------------
# What `make install` puts in place, computed from the tree: the same list
# drives install and uninstall, so uninstall removes exactly what install put.
INST_HDRS := $(wildcard include/kernelkit/*.h)
# Every architecture's part goes in (a cross compiler uses the same tree).
INST_ARCH_HDRS := $(wildcard include/kernelkit/arch/*/*.h)
INST_ARCHES := $(notdir $(patsubst %/,%,$(dir $(INST_ARCH_HDRS))))
# man/manN/*.N (and pages still at the top of man/), into $(MANDIR)/manN/.
MAN_SECTIONS := 1 2 3 4 5 6 7 8
MAN_PAGES := $(sort $(foreach n,$(MAN_SECTIONS),$(wildcard man/man$(n)/*.$(n) man/*.$(n))))
man_pages_of = $(filter %.$(1),$(MAN_PAGES))
INST_DOCS := README.md $(sort $(wildcard docs/*.md))
# Installed docs keep the tree's layout (README.md, docs/*.md), so their links
# between each other hold; a link to what is not installed beside them (a man
# page's source, an example) becomes its text (test/scripts/docs_links.sh).
DOC_UNLINK := -e 's@\[([^]]*)\]\((\.\./)?(man|examples)/[^)]*\)@\1@g'
KK_GDB_SCRIPT := $(KK_LIB_REAL)-gdb.py
# A directory below $(PREFIX) is written ${prefix}/... in the pkg-config file.
pc_dir = $(patsubst $(PREFIX)/%,$${prefix}/%,$(1))
# The CMake package (find_package(kernelkit CONFIG)): in $(LIBDIR)/cmake/kernelkit,
# finding the headers relative to its own place.
CMAKEDIR = $(LIBDIR)/cmake/kernelkit
CMAKE_SUBST = -e 's|@VERSION@|$(VERSION)|g' -e 's|@VERSION_MAJOR@|$(firstword $(subst ., ,$(VERSION)))|g' \
	-e 's|@ABI_MAJOR@|$(ABI_MAJOR)|g' -e 's|@KK_LIB_REAL@|$(KK_LIB_REAL)|g' \
	-e 's|@KK_SONAME@|$(KK_SONAME)|g' \
	-e "s|@INCLUDE_FROM_LIBDIR@|$$(realpath -m --relative-to=$(LIBDIR) $(INCLUDEDIR))|g"

INST_FILES = \
	$(addprefix $(DESTDIR)$(INCLUDEDIR)/kernelkit/,$(notdir $(INST_HDRS))) \
	$(patsubst include/%,$(DESTDIR)$(INCLUDEDIR)/%,$(INST_ARCH_HDRS)) \
	$(addprefix $(DESTDIR)$(LIBDIR)/,libkernelkit.a $(KK_LIB_REAL) $(KK_SONAME) libkernelkit.so) \
	$(DESTDIR)$(PKGLIBDIR)/libkernelkit-odebug.so \
	$(DESTDIR)$(PKGCONFIGDIR)/kernelkit.pc \
	$(DESTDIR)$(CMAKEDIR)/kernelkitConfig.cmake $(DESTDIR)$(CMAKEDIR)/kernelkitConfigVersion.cmake \
	$(DESTDIR)$(BINDIR)/kkctl \
	$(foreach n,$(MAN_SECTIONS),$(addprefix $(DESTDIR)$(MANDIR)/man$(n)/,$(notdir $(call man_pages_of,$(n))))) \
	$(DESTDIR)$(BASHCOMPDIR)/kkctl \
	$(DESTDIR)$(GDBAUTOLOADDIR)$(LIBDIR)/$(KK_GDB_SCRIPT) \
	$(addprefix $(DESTDIR)$(DOCDIR)/,$(INST_DOCS))
# Directories that only kernelkit uses: uninstall removes them when empty.
INST_OWN_DIRS = $(addprefix $(DESTDIR)$(INCLUDEDIR)/kernelkit/arch/,$(sort $(INST_ARCHES))) \
	$(DESTDIR)$(INCLUDEDIR)/kernelkit/arch $(DESTDIR)$(INCLUDEDIR)/kernelkit \
	$(DESTDIR)$(PKGLIBDIR) $(DESTDIR)$(DOCDIR)/docs $(DESTDIR)$(DOCDIR) $(DESTDIR)$(CMAKEDIR)

# What install needs built: the library, the preload library and kkctl.  Not
# `all`, which builds the benchmarks (liburcu, libck) and generated modules.
install-build: lib $(B)/inst/libkernelkit-odebug.so $(B)/kkctl

install: install-build
	install -d $(DESTDIR)$(INCLUDEDIR)/kernelkit $(DESTDIR)$(LIBDIR) $(DESTDIR)$(PKGLIBDIR) \
		$(DESTDIR)$(PKGCONFIGDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(BASHCOMPDIR) \
		$(DESTDIR)$(GDBAUTOLOADDIR)$(LIBDIR) $(DESTDIR)$(DOCDIR)
	install -m 644 $(INST_HDRS) $(DESTDIR)$(INCLUDEDIR)/kernelkit/
	$(foreach a,$(sort $(INST_ARCHES)),install -d $(DESTDIR)$(INCLUDEDIR)/kernelkit/arch/$(a) && \
		install -m 644 $(wildcard include/kernelkit/arch/$(a)/*.h) \
		$(DESTDIR)$(INCLUDEDIR)/kernelkit/arch/$(a)/ &&) true
	install -m 644 $(B)/libkernelkit.a $(DESTDIR)$(LIBDIR)/
	install -m 755 $(B)/$(KK_LIB_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(KK_LIB_REAL) $(DESTDIR)$(LIBDIR)/$(KK_SONAME)
	ln -sf $(KK_SONAME) $(DESTDIR)$(LIBDIR)/libkernelkit.so
	install -m 755 $(B)/inst/libkernelkit-odebug.so $(DESTDIR)$(PKGLIBDIR)/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(call pc_dir,$(LIBDIR))|g' \
		-e 's|@INCLUDEDIR@|$(call pc_dir,$(INCLUDEDIR))|g' -e 's|@VERSION@|$(VERSION)|g' \
		mk/kernelkit.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/kernelkit.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/kernelkit.pc
	install -d $(DESTDIR)$(CMAKEDIR)
	sed $(CMAKE_SUBST) mk/kernelkitConfig.cmake.in > $(DESTDIR)$(CMAKEDIR)/kernelkitConfig.cmake
	sed $(CMAKE_SUBST) mk/kernelkitConfigVersion.cmake.in > \
		$(DESTDIR)$(CMAKEDIR)/kernelkitConfigVersion.cmake
	chmod 644 $(DESTDIR)$(CMAKEDIR)/kernelkitConfig.cmake $(DESTDIR)$(CMAKEDIR)/kernelkitConfigVersion.cmake
	install -m 755 $(B)/kkctl $(DESTDIR)$(BINDIR)/
	$(foreach n,$(MAN_SECTIONS),$(if $(call man_pages_of,$(n)),install -d $(DESTDIR)$(MANDIR)/man$(n) && \
		install -m 644 $(call man_pages_of,$(n)) $(DESTDIR)$(MANDIR)/man$(n)/ &&)) true
	install -m 644 tools/kkctl.bash-completion $(DESTDIR)$(BASHCOMPDIR)/kkctl
	install -m 644 tools/gdb/libkernelkit.so-gdb.py $(DESTDIR)$(GDBAUTOLOADDIR)$(LIBDIR)/$(KK_GDB_SCRIPT)
	install -d $(DESTDIR)$(DOCDIR)/docs
	$(foreach d,$(INST_DOCS),sed -E $(DOC_UNLINK) $(d) > $(DESTDIR)$(DOCDIR)/$(d) && \
		chmod 644 $(DESTDIR)$(DOCDIR)/$(d) &&) true

# Shared directories ($(LIBDIR), $(MANDIR)/man3, ...) stay, even when empty.
uninstall:
	rm -f $(INST_FILES)
	for d in $(INST_OWN_DIRS); do [ ! -d "$$d" ] || rmdir --ignore-fail-on-non-empty "$$d"; done

help:
	@echo 'kernelkit $(VERSION) (libkernelkit.so.$(ABI_MAJOR).$(ABI_MINOR).$(ABI_PATCH)).  Targets:'
	@echo '  all            library, kkctl, kk-bench, demo and bench modules (needs liburcu, libck)'
	@echo '  lib            $(B)/libkernelkit.a and $(B)/$(KK_LIB_REAL) with its links'
	@echo '  tests          the test programs and what they load (needs criterion)'
	@echo '  check          the suite: gcc -Werror, ASan+UBSan, fallback, clang and arm64 (make -j2)'
	@echo '  check-quick    the suite on the default build only'
	@echo '  check-unit, check-stress, check-conformance, check-dialect, check-scripts'
	@echo '                 one group of tests (B=, EXTRA_CFLAGS= pick the build)'
	@echo '  check-one T=unit/dynamic_debug_output   one test program (or check-test/unit/dynamic_debug_output)'
	@echo '  deps           install missing Debian packages (apt-get, as root) or print the command'
	@echo '  demo           build, then walk through the facilities (examples/demo.sh)'
	@echo '  bench          run kk-bench, results in $(B)/bench.json'
	@echo '  peers          the kk-bench peers programs (LTTng-UST, USDT, spdlog: when installed)'
	@echo '  install        build and install library, preload library, kkctl, headers, pkg-config'
	@echo '                 file, man pages, bash completion, gdb helper and docs'
	@echo '  install-build  build only what install needs (no benchmark dependencies)'
	@echo '  uninstall      remove what install put in place'
	@echo '  clean          remove $(B)'
	@echo 'Variables (current value):'
	@echo '  B=$(B)  CC=$(CC)  CFLAGS=$(CFLAGS)  CPPFLAGS=$(CPPFLAGS)  LDFLAGS=$(LDFLAGS)'
	@echo '  EXTRA_CFLAGS=$(EXTRA_CFLAGS)  SAN=$(SAN)   (a change rebuilds the objects in B)'
	@echo '  DESTDIR=$(DESTDIR)  PREFIX=$(PREFIX)  BINDIR=$(BINDIR)  LIBDIR=$(LIBDIR)'
	@echo '  INCLUDEDIR=$(INCLUDEDIR)  DATADIR=$(DATADIR)  MANDIR=$(MANDIR)  DOCDIR=$(DOCDIR)'
	@echo '  PKGCONFIGDIR=$(PKGCONFIGDIR)  PKGLIBDIR=$(PKGLIBDIR) (the preload library)'
	@echo '  BASHCOMPDIR=$(BASHCOMPDIR)  GDBAUTOLOADDIR=$(GDBAUTOLOADDIR)'
	@echo 'After installing into a directory the loader does not search by default'
	@echo '(/usr/local/lib), run ldconfig.  Debian packages: dpkg-buildpackage -b (docs/packaging.md).'

clean:
	rm -rf $(B)
