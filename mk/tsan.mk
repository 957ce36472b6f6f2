# SPDX-License-Identifier: MIT
# ThreadSanitizer builds: a facility's sources and its stress test, alone,
# compiled by clang with -fsanitize=thread (mk/debugobjects.mk,
# mk/shazptr.mk).  What such a build leaves out of kernelkit comes from
# test/stubs/<part>.c, so src/ has no mode for it.
TSAN_CC     ?= clang
TSAN_CFLAGS := -D_GNU_SOURCE -Iinclude -Isrc -Itest -std=gnu11 -O1 -g -Wall -Wextra \
	-fsanitize=thread -fno-omit-frame-pointer -pthread
# test/stubs/jump_label.c: static keys as plain loads (KK_NO_JUMP_LABEL);
# test/stubs/control.c: library files registered nowhere.

$(B)/test/tsan/stubs/%.o: test/stubs/%.c $(HDRS)
	@mkdir -p $(dir $@)
	$(TSAN_CC) $(TSAN_CFLAGS) -c -o $@ $<
