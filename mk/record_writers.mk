# SPDX-License-Identifier: MIT
# kkctl record's ctf and perfetto writers, fed synthetic records by a test
# program built with their sources (test/scripts/record_writers.sh).  This
# rule takes the place of test/progs/'s pattern rule (mk/jump_label.mk).
RECORD_WRITERS_SRCS := test/progs/record_writers.c tools/kkctl/record_ctf.c \
	tools/kkctl/record_perfetto.c tools/kkctl/record_out.c
$(B)/test/progs/record_writers: $(RECORD_WRITERS_SRCS) $(wildcard tools/kkctl/*.h) \
		test/progs/record_stubs.h $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) -Itools/kkctl $(CFLAGS) $(KK_CFLAGS) -o $@ $(RECORD_WRITERS_SRCS) \
		$(KK_LDFLAGS) -lm

# (the unit test that builds record_json.c and record_out.c in, with the stubs)
$(B)/test/unit/kkctl_record_json: tools/kkctl/record_json.c tools/kkctl/record_out.c \
	test/progs/record_stubs.h
