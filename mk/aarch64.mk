# SPDX-License-Identifier: MIT
# make check-aarch64: the suite on a second architecture.  The unit, stress
# and conformance tests are cross-built for arm64 and run in an arm64 Debian
# kernel under qemu-system-aarch64 (TCG, 2 CPUs); docs/testing.md.
#   scripts/aarch64/fetch.sh      host packages, arm64 debs, sysroot, kernel
#   scripts/aarch64/check.sh      cross build, initramfs, boot, tally
#   scripts/aarch64/init          the guest's /init
#   test/aarch64/*_probe.c        guest facts printed before the suite
# Everything goes under $(AARCH64_DIR); the cross build is $(AARCH64_DIR)/b.
# Not qemu-user: it does not see code written through /proc/self/mem.
# make check runs it last and ignores its exit status: the failure reaches
# scripts/summary.sh through $(AARCH64_DIR)/results.txt, which counts one
# failure until the guest has reported.
AARCH64_DIR ?= $(B)/aarch64
# Which groups of scripts/run-tests.sh the guest runs (the shell tests need
# host tools: gdb, valgrind, strace, a compiler, ...).
AARCH64_GROUPS ?= unit stress conformance

.PHONY: check-aarch64 aarch64-guest-build aarch64-guest-programs
check-aarch64:
	+MAKE="$(MAKE)" AARCH64_GROUPS="$(AARCH64_GROUPS)" sh scripts/aarch64/check.sh $(AARCH64_DIR)

# Run by check.sh with CC=aarch64-linux-gnu-gcc B=$(AARCH64_DIR)/b: what the
# guest runs, and what those tests load from the build tree.  Not `tests`,
# which builds `all` (kk-bench and its liburcu/libck, the demo modules) and
# the host-only programs (dialect matrix with clang and g++, fuzzer, TSan).
# Expanded in the recipe: the facility fragments that set these variables
# are read after this one.
AARCH64_GUEST_BUILD = lib $(TLIBS) $(UNIT_BINS) $(STRESS_BINS) $(PROG_BINS) \
	$(CONF_LIBS) $(CONF_BINS) $(KK_INTERNAL_SO) $(B)/libkernelkit-odebug.so \
	$(JUMP_LABEL_MOD_LIBS) $(AARCH64_PROBES)
AARCH64_PROBES = $(patsubst test/aarch64/%.c,$(B)/test/aarch64/%,$(wildcard test/aarch64/*.c))

aarch64-guest-build:
	+$(MAKE) $(AARCH64_GUEST_BUILD)

# The test programs the guest should run: one that failed to build counts as
# a failure (check.sh builds with -k and runs the rest).
aarch64-guest-programs:
	@printf '%s\n' $(patsubst $(B)/test/%,%,$(UNIT_BINS) $(STRESS_BINS) $(CONF_BINS))

$(B)/test/aarch64/%: test/aarch64/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Wall -Wextra $(EXTRA_CFLAGS) -o $@ $<
