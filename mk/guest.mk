# SPDX-License-Identifier: MIT
# The guest benchmark (bench/guest.c): a hello world built with and without
# the library, and a 16000-site object built with and without
# -DKK_NO_JUMP_LABEL, the fork loop with and without the library, all into
# $(B)/guest/.
GUEST_DIR  := $(B)/guest
GUEST_BINS := $(GUEST_DIR)/hello-plain $(GUEST_DIR)/hello-kk $(GUEST_DIR)/hello-empty \
	      $(GUEST_DIR)/libkkguest.so $(GUEST_DIR)/libkkguest-nojl.so \
	      $(GUEST_DIR)/forkwait-kk $(GUEST_DIR)/forkwait-plain
EXTRA_ALL  += $(GUEST_BINS)

$(GUEST_DIR)/hello-plain: bench/progs/hello.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $<

# --no-as-needed: the program uses nothing of the library, and must load it.
$(GUEST_DIR)/hello-kk: bench/progs/hello.c $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $< -Wl,--no-as-needed $(LINK_KK)

# The floor for the start-up ratio: the same program linked to an empty library.
$(GUEST_DIR)/libkkempty.so:
	@mkdir -p $(dir $@)
	echo 'int kk_guest_empty(void); int kk_guest_empty(void) { return 0; }' | \
		$(CC) $(CFLAGS) -fPIC -shared -x c -o $@ -

$(GUEST_DIR)/hello-empty: bench/progs/hello.c $(GUEST_DIR)/libkkempty.so
	$(CC) $(CFLAGS) -o $@ $< -Wl,--no-as-needed -L$(GUEST_DIR) -lkkempty -Wl,-rpath,$(abspath $(GUEST_DIR))

$(GUEST_DIR)/kkguest.c: bench/gen-sites.sh
	@mkdir -p $(dir $@)
	sh bench/gen-sites.sh 16000 > $@

$(GUEST_DIR)/libkkguest.so: $(GUEST_DIR)/kkguest.c $(HDRS) $(B)/libkernelkit.so
	$(CC) $(KK_CPPFLAGS) -O2 $(KK_CFLAGS) -shared -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

$(GUEST_DIR)/libkkguest-nojl.so: $(GUEST_DIR)/kkguest.c $(HDRS) $(B)/libkernelkit.so
	$(CC) $(KK_CPPFLAGS) -O2 $(KK_CFLAGS) -DKK_NO_JUMP_LABEL -shared -o $@ $< \
		$(LINK_KK) $(KK_LDFLAGS)

# fork()+waitpid() with kernelkit (one pr_debug site: the endpoint runs) and without.
$(GUEST_DIR)/forkwait-kk: bench/progs/forkwait.c $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

$(GUEST_DIR)/forkwait-plain: bench/progs/forkwait.c $(B)/.flags
	@mkdir -p $(dir $@)
	$(CC) -D_GNU_SOURCE -DFORKWAIT_PLAIN $(CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(KK_LDFLAGS)
