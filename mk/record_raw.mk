# SPDX-License-Identifier: MIT
# kkctl record's raw path fed hostile replies by a test program built with
# its sources (test/scripts/kkctl_record_raw_fuzz.sh); in place of
# test/progs/'s pattern rule (mk/jump_label.mk), as mk/record_writers.mk.
RECORD_RAW_FUZZ_SRCS := test/progs/record_raw_fuzz.c tools/kkctl/record_raw.c \
	tools/kkctl/record_ctf.c tools/kkctl/record_out.c
$(B)/test/progs/record_raw_fuzz: $(RECORD_RAW_FUZZ_SRCS) $(wildcard tools/kkctl/*.h) \
		test/progs/raw_reply.h test/progs/record_stubs.h src/dynamic_debug/trace_raw.h $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itools/kkctl $(CFLAGS) $(KK_CFLAGS) -o $@ $(RECORD_RAW_FUZZ_SRCS) \
		$(KK_LDFLAGS) -lm

# (the harness the record test programs share)
$(B)/test/progs/record_flood $(B)/test/progs/record_raw: test/progs/rounds.h
