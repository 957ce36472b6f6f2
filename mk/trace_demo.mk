# SPDX-License-Identifier: MIT
# make demo's tracing part (examples/trace-demo.sh) records this master and
# its two workers with kkctl record.
EXTRA_ALL += $(B)/examples/record-shop

$(B)/examples/record-shop: examples/record-shop.c $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(LINK_KK) $(KK_LDFLAGS) -pthread
