# SPDX-License-Identifier: MIT
# kkctl record's raw decoder fed hostile replies by a test program built with
# its sources (test/scripts/kkctl_record_rawdec_fuzz.sh), as mk/record_raw.mk.
RECORD_RAWDEC_FUZZ_SRCS := test/progs/record_rawdec_fuzz.c tools/kkctl/record_rawdec.c \
	tools/kkctl/record_out.c src/dynamic_debug/printf_conv.c
$(B)/test/progs/record_rawdec_fuzz: $(RECORD_RAWDEC_FUZZ_SRCS) $(wildcard tools/kkctl/*.h) \
		test/progs/raw_reply.h test/progs/record_stubs.h src/dynamic_debug/trace_raw.h \
		src/dynamic_debug/printf_conv.h $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itools/kkctl $(CFLAGS) $(KK_CFLAGS) -o $@ $(RECORD_RAWDEC_FUZZ_SRCS) \
		$(KK_LDFLAGS) -lm

# (the listening socket the endpoint-playing test programs share)
$(B)/test/progs/control_refuse $(B)/test/progs/control_squat $(B)/test/progs/record_old_library: \
	test/progs/listen_abstract.h
