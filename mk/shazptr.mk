# SPDX-License-Identifier: MIT
# shazptr: the key-registry consumer in two flavours, the bench's
# comparison libraries, and a ThreadSanitizer build of the reclamation stress.

# The registry (examples/shazptr/keyreg.c) built once per flavour.  Only the
# RCU object needs liburcu; libkernelkit itself never links it.
SHAZPTR_KEYREG_HP   := $(B)/obj/examples/shazptr/keyreg_shazptr.o
SHAZPTR_KEYREG_RCU  := $(B)/obj/examples/shazptr/keyreg_rcu.o
SHAZPTR_KEYREG_OBJS := $(SHAZPTR_KEYREG_HP) $(SHAZPTR_KEYREG_RCU)

$(SHAZPTR_KEYREG_HP): examples/shazptr/keyreg.c examples/shazptr/keyreg.h $(HDRS) $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -DKEYREG_FLAVOR_SHAZPTR -c -o $@ $<

$(SHAZPTR_KEYREG_RCU): examples/shazptr/keyreg.c examples/shazptr/keyreg.h $(HDRS) $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -DKEYREG_FLAVOR_RCU -c -o $@ $<

# kk-bench: liburcu (memb, mb), ck_hp and both registry flavours.
BENCH_LDLIBS += $(SHAZPTR_KEYREG_OBJS) -lurcu-memb -lurcu-mb -lck
$(B)/kk-bench: $(SHAZPTR_KEYREG_OBJS)

# Tests that use the registry.
TEST_LDLIBS_shazptr_keyreg := $(SHAZPTR_KEYREG_OBJS) -lurcu-memb
$(B)/test/unit/shazptr_keyreg: $(SHAZPTR_KEYREG_OBJS)
TEST_LDLIBS_shazptr_reclaim := $(SHAZPTR_KEYREG_HP)
$(B)/test/stress/shazptr_reclaim: $(SHAZPTR_KEYREG_HP)

# ThreadSanitizer build of the reclamation stress test (mk/tsan.mk): the
# stress program, src/shazptr.c and the shazptr registry, without the control
# endpoint (test/stubs/control.c stands in).  Run by test/scripts/shazptr_tsan.sh.
SHAZPTR_TSAN_BIN := $(B)/test/tsan/shazptr_reclaim
SHAZPTR_TSAN_SRC := test/stress/shazptr_reclaim.c src/shazptr.c examples/shazptr/keyreg.c \
		$(wildcard src/common/*.c)
SHAZPTR_TSAN_STUBS := $(B)/test/tsan/stubs/control.o

$(SHAZPTR_TSAN_BIN): $(SHAZPTR_TSAN_SRC) $(SHAZPTR_TSAN_STUBS) examples/shazptr/keyreg.h \
		include/kernelkit/shazptr.h test/kktest.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(TSAN_CFLAGS) -DKEYREG_FLAVOR_SHAZPTR -o $@ $(SHAZPTR_TSAN_SRC) $(SHAZPTR_TSAN_STUBS)

EXTRA_TESTS += $(SHAZPTR_TSAN_BIN)
