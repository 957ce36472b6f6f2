# SPDX-License-Identifier: MIT
# Dynamic debug: the demo's modules and machine, the parser's
# libFuzzer target.
#
# The demo modules are generated at build time into $(B)/dynamic_debug-mods/ by
# scripts/gen-dynamic_debug-module.sh: the per-module site counts of Jim Cromie's queued static-key series for the DRM stack, virtio
# and the serial core (with pr_debug_ratelimited), and other modules up to
# 16154 sites in all.  modules.list gives the load order.
#   name:sites:source-dir[:ratelimited]
DYNAMIC_DEBUG_MODULES := \
	i2c_core:25:drivers/i2c \
	drm:340:drivers/gpu/drm \
	drm_kms_helper:89:drivers/gpu/drm \
	drm_display_helper:155:drivers/gpu/drm/display \
	ttm:2:drivers/gpu/drm/ttm \
	i915:1801:drivers/gpu/drm/i915 \
	amdgpu:4532:drivers/gpu/drm/amd/amdgpu \
	virtio:96:drivers/virtio:96 \
	serial_core:64:drivers/tty/serial:1 \
	snd_hda_core:905:sound/hda \
	usbcore:905:drivers/usb/core \
	xhci_hcd:905:drivers/usb/host \
	ext4:905:fs/ext4 \
	nvme_core:905:drivers/nvme/host \
	e1000e:905:drivers/net/ethernet/intel/e1000e \
	iwlwifi:905:drivers/net/wireless/intel/iwlwifi \
	bluetooth:905:net/bluetooth \
	cfg80211:905:net/wireless \
	mac80211:905:net/mac80211

DYNAMIC_DEBUG_MOD_NAMES := $(foreach m,$(DYNAMIC_DEBUG_MODULES),$(word 1,$(subst :, ,$(m))))
DYNAMIC_DEBUG_MOD_LIBS  := $(patsubst %,$(B)/dynamic_debug-mods/lib%.so,$(DYNAMIC_DEBUG_MOD_NAMES))
dynamic_debug_mod_field = $(word $(2),$(subst :, ,$(filter $(1):%,$(DYNAMIC_DEBUG_MODULES))))

EXTRA_ALL += $(DYNAMIC_DEBUG_MOD_LIBS) $(B)/dynamic_debug-mods/modules.list $(B)/dynamic_debug-machine

# The generated sources are kept for reading by the Makefile's bare
# ".SECONDARY:" (every target).  Do not list targets after .SECONDARY here: a
# .SECONDARY with prerequisites anywhere turns the bare one off (GNU make), and
# make then deletes build/bench-mods/jump_label_mod*.c at the end of every build that
# made them, the stray "rm build/bench-mods/..." line at the end of make demo.

$(B)/dynamic_debug-mods/%.c: scripts/gen-dynamic_debug-module.sh mk/dynamic_debug.mk
	@mkdir -p $(dir $@)
	sh scripts/gen-dynamic_debug-module.sh $* $(call dynamic_debug_mod_field,$*,2) $(call dynamic_debug_mod_field,$*,3) \
		$(or $(call dynamic_debug_mod_field,$*,4),0) > $@

$(B)/dynamic_debug-mods/lib%.so: $(B)/dynamic_debug-mods/%.c $(HDRS) $(B)/libkernelkit.so
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -shared -o $@ $< $(LINK_KK) $(KK_LDFLAGS)

$(B)/dynamic_debug-mods/modules.list: mk/dynamic_debug.mk
	@mkdir -p $(dir $@)
	printf '%s\n' $(DYNAMIC_DEBUG_MOD_NAMES) > $@

$(B)/dynamic_debug-machine: examples/machine.c $(HDRS) $(B)/libkernelkit.so
	$(CC) $(KK_CPPFLAGS) $(CFLAGS) $(KK_CFLAGS) -o $@ $< $(LINK_KK) $(KK_LDFLAGS) -ldl

# The parser under libFuzzer + ASan (clang).  test/scripts/dynamic_debug_fuzz.sh runs
# it for a bounded time; it is skipped when clang cannot build it.
DYNAMIC_DEBUG_FUZZ_CC := clang
DYNAMIC_DEBUG_FUZZ    := $(B)/test/fuzz/dynamic_debug_parser
EXTRA_TESTS += $(DYNAMIC_DEBUG_FUZZ)

$(DYNAMIC_DEBUG_FUZZ): test/fuzz/dynamic_debug_parser.c src/dynamic_debug/query.c src/dynamic_debug/query.h \
		src/common/internal.h
	@mkdir -p $(dir $@)
	$(DYNAMIC_DEBUG_FUZZ_CC) -D_GNU_SOURCE -Isrc -g -O1 -fsanitize=fuzzer,address,undefined \
		-o $@ test/fuzz/dynamic_debug_parser.c src/dynamic_debug/query.c \
	|| { echo "dyndbg: cannot build the fuzzer with $(DYNAMIC_DEBUG_FUZZ_CC); its test will skip"; \
	     rm -f $@; }

# The kernel-conformance module links a second module built with DEBUG.
CONF_LDLIBS_test_dynamic_debug := -ldynamic_debug_debug

# The inherit tests define their two sites in one header; the pattern rules
# know only test/kktest.h, so a change to it rebuilds them through this line.
$(B)/test/progs/dynamic_debug_inherit $(B)/test/stress/dynamic_debug_inherit_stress: \
		test/dynamic_debug_inherit_sites.h
# The ring's floor is the bench's (instruction counts of dynamic_debug_line_cost.sh).
$(B)/test/progs/dynamic_debug_line_cost: bench/dd_ring_floor.h
