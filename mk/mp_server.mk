# SPDX-License-Identifier: MIT
# kk-bench guest's nginx-shaped server (test/progs/mp_server.c), built with the
# same flags twice: linked to kernelkit, and -DMP_PLAIN (pr_debug a runtime
# level check, no kernelkit).  The tests use $(B)/test/progs/mp_server.
MP_SERVER_BINS := $(B)/guest/mp_server-kk $(B)/guest/mp_server-plain
EXTRA_ALL += $(MP_SERVER_BINS)

$(B)/guest/mp_server-kk: test/progs/mp_server.c $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

$(B)/guest/mp_server-plain: test/progs/mp_server.c $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -DMP_PLAIN $(CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(KK_LDFLAGS)
