# SPDX-License-Identifier: MIT
# Debug objects: the preload library, the timer-wheel example and
# its demo, and a ThreadSanitizer build of the multi-thread stress test.

# LD_PRELOAD library: free/realloc/munmap call debug_check_no_obj_freed().
# Not part of libkernelkit (it interposes libc); it links libkernelkit.so
# for the public API, and has its own hidden copy of the settings grammar
# (env.o: kk_getenv(), kk_parse_bool(), internal to libkernelkit).  It
# exports only the three functions it replaces (its version script).
DEBUGOBJECTS_PRELOAD_MAP := src/debugobjects/preload/libkernelkit-odebug.map
$(B)/libkernelkit-odebug.so: src/debugobjects/preload/odebug_preload.c $(B)/obj/src/common/env.o \
		$(DEBUGOBJECTS_PRELOAD_MAP) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -fvisibility=hidden -shared -o $@ $< \
		$(B)/obj/src/common/env.o -Wl,--version-script,$(DEBUGOBJECTS_PRELOAD_MAP) \
		$(LINK_KK) $(KK_LDFLAGS) -ldl

EXTRA_ALL += $(B)/libkernelkit-odebug.so

# The timer-wheel example and its demo program.
DEBUGOBJECTS_TW_OBJ  := $(B)/obj/examples/timerwheel/timerwheel.o
DEBUGOBJECTS_TW_DEMO := $(B)/examples/timerwheel/tw-demo

$(DEBUGOBJECTS_TW_OBJ): examples/timerwheel/timerwheel.c examples/timerwheel/timerwheel.h $(HDRS) $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -c -o $@ $<

$(DEBUGOBJECTS_TW_DEMO): examples/timerwheel/tw-demo.c $(DEBUGOBJECTS_TW_OBJ) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Iexamples/timerwheel $(CFLAGS) $(KK_CFLAGS) -rdynamic -o $@ $< \
		$(DEBUGOBJECTS_TW_OBJ) $(LINK_KK) $(KK_LDFLAGS)

EXTRA_ALL += $(DEBUGOBJECTS_TW_DEMO)

TEST_LDLIBS_debugobjects_timerwheel := -Iexamples/timerwheel $(DEBUGOBJECTS_TW_OBJ)
$(B)/test/unit/debugobjects_timerwheel: $(DEBUGOBJECTS_TW_OBJ)

# ThreadSanitizer build of the stress test (mk/tsan.mk): the stress program
# and the debug-objects sources, without static-key patching or the control
# endpoint (test/stubs/jump_label.c, control.c stand in).  Run by
# test/scripts/debugobjects_tsan.sh.
DEBUGOBJECTS_TSAN_BIN := $(B)/test/tsan/debugobjects_stress
DEBUGOBJECTS_TSAN_SRC := test/stress/debugobjects_stress.c $(wildcard src/debugobjects/*.c) \
		$(wildcard src/common/*.c)
DEBUGOBJECTS_TSAN_STUBS := $(B)/test/tsan/stubs/jump_label.o $(B)/test/tsan/stubs/control.o

$(DEBUGOBJECTS_TSAN_BIN): $(DEBUGOBJECTS_TSAN_SRC) $(DEBUGOBJECTS_TSAN_STUBS) src/debugobjects/internal.h src/common/internal.h \
		include/kernelkit/debugobjects.h include/kernelkit/jump_label.h test/kktest.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(TSAN_CFLAGS) -DKK_NO_JUMP_LABEL -o $@ $(DEBUGOBJECTS_TSAN_SRC) $(DEBUGOBJECTS_TSAN_STUBS) -ldl

EXTRA_TESTS += $(DEBUGOBJECTS_TSAN_BIN)

# The same for the signal stress (hooks in handlers that interrupt hooks).
DEBUGOBJECTS_TSAN_SIG_BIN := $(B)/test/tsan/debugobjects_signal
DEBUGOBJECTS_TSAN_SIG_SRC := test/stress/debugobjects_signal.c $(filter-out test/stress/%,$(DEBUGOBJECTS_TSAN_SRC))

$(DEBUGOBJECTS_TSAN_SIG_BIN): $(DEBUGOBJECTS_TSAN_SIG_SRC) $(DEBUGOBJECTS_TSAN_STUBS) src/debugobjects/internal.h \
		src/common/internal.h include/kernelkit/debugobjects.h include/kernelkit/jump_label.h
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(TSAN_CFLAGS) -DKK_NO_JUMP_LABEL -o $@ $(DEBUGOBJECTS_TSAN_SIG_SRC) $(DEBUGOBJECTS_TSAN_STUBS) -ldl

EXTRA_TESTS += $(DEBUGOBJECTS_TSAN_SIG_BIN)
