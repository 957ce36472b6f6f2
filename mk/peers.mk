# SPDX-License-Identifier: MIT
# kk-bench peers (bench/peers.c): the same workloads (bench/peers/peer.h) with
# kernelkit, LTTng-UST, USDT and spdlog, one program each in $(B)/peers/.
# A peer is built only when its headers are installed (mk/debian-packages.txt
# lists them), so that `make all` and `make tests` pass without them; kk-bench
# peers says "skipped: why" for a program that is not there.
PEERS_DIR  := $(B)/peers
PEERS_CXX  := $(if $(findstring clang,$(CC)),clang++,g++)
PEERS_DEPS := bench/peers/peer.h bench/peers/peer_rep.h $(B)/.flags
PEERS_CC   := $(CC) -D_GNU_SOURCE -O2 -g -Wall -Wextra $(EXTRA_CFLAGS) -pthread $(SAN)
PEERS_HAVE_LTTNG  := $(shell pkg-config --exists lttng-ust 2>/dev/null && echo y)
PEERS_HAVE_SDT    := $(shell echo '\#include <sys/sdt.h>' | $(CC) -E -x c - >/dev/null 2>&1 && echo y)
PEERS_HAVE_SPDLOG := $(shell pkg-config --exists spdlog 2>/dev/null && \
	echo '\#include <spdlog/spdlog.h>' | $(PEERS_CXX) -E -x c++ - >/dev/null 2>&1 && echo y)

EXTRA_ALL += $(PEERS_DIR)/peer-kk
$(PEERS_DIR)/peer-kk: bench/peers/peer-kk.c $(PEERS_DEPS) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(PEERS_CC) -Iinclude -o $@ $< $(LINK_KK)

ifeq ($(PEERS_HAVE_LTTNG),y)
EXTRA_ALL += $(PEERS_DIR)/peer-lttng
# The provider's generated code is not -Wextra clean; it is not ours to fix.
$(PEERS_DIR)/peer-lttng: bench/peers/peer-lttng.c bench/peers/kkpeer_tp.h $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -Wno-unused-parameter -Ibench/peers -o $@ $< $(shell pkg-config --libs lttng-ust) -ldl
endif

ifeq ($(PEERS_HAVE_SDT),y)
EXTRA_ALL += $(PEERS_DIR)/peer-usdt $(PEERS_DIR)/peer-usdt-sem
$(PEERS_DIR)/peer-usdt: bench/peers/peer-usdt.c $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -o $@ $<
$(PEERS_DIR)/peer-usdt-sem: bench/peers/peer-usdt.c $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -DPEER_SEM -o $@ $<
endif

ifeq ($(PEERS_HAVE_SPDLOG),y)
EXTRA_ALL += $(PEERS_DIR)/peer-spdlog
$(PEERS_DIR)/peer-spdlog: bench/peers/peer-spdlog.cc $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CXX) -O2 -g -std=c++17 -Wall -Wextra $(EXTRA_CFLAGS) -pthread $(SAN) \
		$(shell pkg-config --cflags spdlog) -o $@ $< $(shell pkg-config --libs spdlog)
endif
