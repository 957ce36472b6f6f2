# SPDX-License-Identifier: MIT
#
# kernelkit build.  Everything goes under $(B) (default: build/).  The same rules
# build the sanitizer, fallback and clang variants into other directories, e.g.
#   make B=build/san SAN="-fsanitize=address,undefined" tests
#
# Layout conventions (so that facilities can be added without editing this file):
#   src/*.c, src/<facility>/*.c      -> libkernelkit.{a,so}
#   src/arch/$(ARCH)/*.c              -> arch code (src/arch/generic/ when there is none)
#   test/unit/*.c                     -> one Criterion program per behaviour
#   test/stress/*.c                   -> one plain program each (exit 0 = pass)
#   test/lib/*.c                      -> $(B)/test/lib/lib<name>.so helper objects for tests
#   test/scripts/*.sh                 -> shell tests (exit 0 pass, 77 skip)
#   bench/*.c                         -> linked into kk-bench
#   mk/*.mk                           -> extra rules a facility needs (included below)

B        ?= build
PREFIX   ?= /usr/local
DESTDIR  ?=
CC       ?= cc
ARCH     ?= $(shell uname -m)
CFLAGS   ?= -O2 -g
SAN      ?=
EXTRA_CFLAGS ?=
VERSION  := 0.1.0

ifeq ($(origin CC),default)
CC := cc
endif

KK_CPPFLAGS := -D_GNU_SOURCE -Iinclude -Isrc
KK_CFLAGS   := -std=gnu11 -Wall -Wextra -fPIC -pthread $(SAN) $(EXTRA_CFLAGS)
KK_LDFLAGS  := -pthread $(SAN)
ABS_B        = $(abspath $(B))

ARCH_DIR := $(if $(wildcard src/arch/$(ARCH)/*.c),src/arch/$(ARCH),src/arch/generic)
LIB_SRCS := $(filter-out src/arch/%,$(wildcard src/*.c src/*/*.c)) $(wildcard $(ARCH_DIR)/*.c)
LIB_OBJS := $(patsubst %.c,$(B)/obj/%.o,$(LIB_SRCS))
LIB_LDLIBS := -ldl -lpthread

HDRS := $(wildcard include/kernelkit/*.h) $(wildcard src/*.h src/*/*.h)

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

.PHONY: all lib tests check check-variants demo bench install uninstall clean deps
# Keep generated sources (bench and demo modules) for reading and debugging.
.SECONDARY:
all: lib $(B)/kkctl $(B)/kk-bench $(B)/kernelkit.pc

lib: $(B)/libkernelkit.a $(B)/libkernelkit.so

-include mk/*.mk

all: $(EXTRA_ALL)

# KK_LIBRARY_BUILD: the library's own units skip the per-object constructors
# of the public headers (the library has no sites of its own).
# -fvisibility=hidden: only what src/ marks KK_EXPORT (or a public header
# declares) leaves an object; src/libkernelkit.map decides (docs/abi.md).
$(B)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -DKK_LIBRARY_BUILD $(CFLAGS) $(KK_CFLAGS) -fvisibility=hidden -c -o $@ $<

# In the shared library only: wrappers that find the real function with
# dlsym(RTLD_NEXT), which a static program cannot do.
LIB_SO_ONLY := $(B)/obj/src/dynamic_debug/inherit_spawn.o
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
$(B)/libkernelkit.so: $(LIB_OBJS) $(KK_MAP)
	$(CC) -shared -Wl,-soname,libkernelkit.so -Wl,-z,nodelete $(KK_SO_LDFLAGS) $(KK_LDFLAGS) \
		-Wl,--version-script,$(KK_MAP) -o $@ $(LIB_OBJS) $(LIB_LDLIBS)

# kkctl does not link the library (it must not start an endpoint of its own);
# it shares only the socket-path rules.
$(B)/kkctl: tools/kkctl.c src/control_path.c src/control_path.h
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -DKK_VERSION='"$(VERSION)"' $(CFLAGS) $(KK_CFLAGS) -o $@ \
		tools/kkctl.c src/control_path.c $(KK_LDFLAGS)

$(B)/kk-bench: $(BENCH_SRCS) bench/bench.h $(B)/libkernelkit.so $(HDRS)
	$(CC) $(KK_CPPFLAGS) -Ibench $(CFLAGS) $(KK_CFLAGS) -rdynamic -o $@ $(BENCH_SRCS) \
		$(LINK_KK) $(KK_LDFLAGS) $(BENCH_LDLIBS) -ldl

$(B)/kernelkit.pc: mk/kernelkit.pc.in
	@mkdir -p $(dir $@)
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' $< > $@

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

tests: all $(TLIBS) $(UNIT_BINS) $(STRESS_BINS) $(EXTRA_TESTS)

deps:
	@sh scripts/ensure-deps.sh

# The README's test command.  Runs the suite on the default build (gcc -Werror),
# then on the ASan+UBSan build, the KK_NO_JUMP_LABEL fallback build, and checks
# that clang -Wall -Wextra -Werror builds everything.
check: deps
	$(MAKE) EXTRA_CFLAGS=-Werror tests
	sh scripts/run-tests.sh $(B) default
	$(MAKE) check-variants
	sh scripts/summary.sh $(B)

check-variants:
	$(MAKE) B=$(B)/san SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" tests
	sh scripts/run-tests.sh $(B)/san asan+ubsan
	$(MAKE) B=$(B)/nojl EXTRA_CFLAGS=-DKK_NO_JUMP_LABEL tests
	sh scripts/run-tests.sh $(B)/nojl fallback
	$(MAKE) B=$(B)/clang CC=clang EXTRA_CFLAGS=-Werror all
	@echo "clang -Wall -Wextra -Werror build: ok"

bench: deps all
	$(B)/kk-bench all --json $(B)/bench.json

demo: deps all
	sh examples/demo.sh $(B)

install: all
	install -d $(DESTDIR)$(PREFIX)/include/kernelkit $(DESTDIR)$(PREFIX)/lib/pkgconfig \
		$(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 644 include/kernelkit/*.h $(DESTDIR)$(PREFIX)/include/kernelkit/
	install -m 644 $(B)/libkernelkit.a $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/libkernelkit.so $(DESTDIR)$(PREFIX)/lib/
	install -m 755 $(B)/kkctl $(DESTDIR)$(PREFIX)/bin/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' mk/kernelkit.pc.in \
		> $(DESTDIR)$(PREFIX)/lib/pkgconfig/kernelkit.pc
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 tools/kkctl.bash-completion \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/kkctl
	install -d $(DESTDIR)$(PREFIX)/share/gdb/auto-load$(PREFIX)/lib
	install -m 644 tools/gdb/libkernelkit.so-gdb.py \
		$(DESTDIR)$(PREFIX)/share/gdb/auto-load$(PREFIX)/lib/libkernelkit.so-gdb.py

# What install put in place (not the directories, which others may share).
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/kernelkit/*.h $(DESTDIR)$(PREFIX)/lib/libkernelkit.a \
		$(DESTDIR)$(PREFIX)/lib/libkernelkit.so $(DESTDIR)$(PREFIX)/bin/kkctl \
		$(DESTDIR)$(PREFIX)/lib/pkgconfig/kernelkit.pc \
		$(DESTDIR)$(PREFIX)/share/bash-completion/completions/kkctl \
		$(DESTDIR)$(PREFIX)/share/gdb/auto-load$(PREFIX)/lib/libkernelkit.so-gdb.py
	rm -f $(patsubst man/%,$(DESTDIR)$(PREFIX)/share/man/man1/%,$(wildcard man/*.1))
	-rmdir $(DESTDIR)$(PREFIX)/include/kernelkit

clean:
	rm -rf $(B)
