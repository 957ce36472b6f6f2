# SPDX-License-Identifier: MIT
# kk-bench peers (bench/peers.c): the same workloads (bench/peers/peer.h) with
# kernelkit, LTTng-UST, USDT and spdlog, one program each in $(B)/peers/.
# A peer is built only when its headers are installed (mk/debian-packages.txt
# lists them); kk-bench peers says "skipped: why" for a program that is not
# there.  They are built by `make peers` (and `make bench`), not by `all`:
# 16154 sites per program take minutes to compile (LTTng's 17 providers most).
PEERS_DIR  := $(B)/peers
PEERS_CXX  := $(if $(findstring clang,$(CC)),clang++,g++)
PEERS_DEPS := bench/peers/peer.h bench/peers/peer_rep.h $(B)/.flags
PEERS_CC   := $(CC) -D_GNU_SOURCE -O2 -g -Wall -Wextra $(EXTRA_CFLAGS) -pthread $(SAN)
PEERS_HAVE_LTTNG  := $(shell pkg-config --exists lttng-ust 2>/dev/null && echo y)
PEERS_HAVE_SDT    := $(shell echo '\#include <sys/sdt.h>' | $(CC) -E -x c - >/dev/null 2>&1 && echo y)
PEERS_HAVE_SPDLOG := $(shell pkg-config --exists spdlog 2>/dev/null && \
	echo '\#include <spdlog/spdlog.h>' | $(PEERS_CXX) -E -x c++ - >/dev/null 2>&1 && echo y)

PEERS_PROGS := $(PEERS_DIR)/peer-kk
$(PEERS_DIR)/peer-kk: bench/peers/peer-kk.c $(PEERS_DEPS) $(HDRS) $(B)/libkernelkit.so
	@mkdir -p $(dir $@)
	$(PEERS_CC) -Iinclude -o $@ $< $(LINK_KK)

ifeq ($(PEERS_HAVE_LTTNG),y)
# One provider per chunk of sites (peer_rep.h), each in its own object: one
# provider of 16154 events takes gcc over 9 GB.  The chunk providers' probes
# are never timed, so they are built at -O1 without debug information.
PEERS_CHUNKS := 00 01 02 03 04 05 06 07 08 09 10 11 12 13 14 15 16
PEERS_GEN    := $(PEERS_DIR)/gen
PEERS_LTTNG_OBJS := $(PEERS_GEN)/kkpeer_hot.o $(PEERS_CHUNKS:%=$(PEERS_GEN)/kkpeer%_tp.o)
PEERS_PROGS += $(PEERS_DIR)/peer-lttng
$(PEERS_GEN)/kkpeer%_tp.h: bench/peers/kkpeer_chunk_tp.h.in
	@mkdir -p $(dir $@)
	sed 's/@C@/$*/g' $< >$@
$(PEERS_GEN)/kkpeer_chunks.h: mk/peers.mk
	@mkdir -p $(dir $@)
	printf '#include "kkpeer%s_tp.h"\n' $(PEERS_CHUNKS) >$@
# The provider's generated code is not -Wextra clean; it is not ours to fix.
$(PEERS_GEN)/kkpeer%_tp.o: bench/peers/kkpeer_tp.c $(PEERS_GEN)/kkpeer%_tp.h bench/peers/peer_rep.h
	$(CC) -D_GNU_SOURCE -O1 -Wall -Wextra -Wno-unused-parameter $(EXTRA_CFLAGS) \
		-I$(PEERS_GEN) -Ibench/peers -DKKPEER_TP_HEADER='"kkpeer$*_tp.h"' -c -o $@ $<
$(PEERS_GEN)/kkpeer_hot.o: bench/peers/kkpeer_tp.c bench/peers/kkpeer_tp.h $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -Wno-unused-parameter -Ibench/peers -DKKPEER_TP_HEADER='"kkpeer_tp.h"' -c -o $@ $<
$(PEERS_DIR)/peer-lttng: bench/peers/peer-lttng.c $(PEERS_GEN)/kkpeer_chunks.h $(PEERS_LTTNG_OBJS) \
		$(PEERS_CHUNKS:%=$(PEERS_GEN)/kkpeer%_tp.h) $(PEERS_DEPS)
	$(PEERS_CC) -Wno-unused-parameter -I$(PEERS_GEN) -Ibench/peers -o $@ $< $(PEERS_LTTNG_OBJS) \
		$(shell pkg-config --libs lttng-ust) -ldl
endif

ifeq ($(PEERS_HAVE_SDT),y)
PEERS_PROGS += $(PEERS_DIR)/peer-usdt $(PEERS_DIR)/peer-usdt-sem
$(PEERS_DIR)/peer-usdt: bench/peers/peer-usdt.c $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -o $@ $<
$(PEERS_DIR)/peer-usdt-sem: bench/peers/peer-usdt.c $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CC) -DPEER_SEM -o $@ $<
endif

ifeq ($(PEERS_HAVE_SPDLOG),y)
PEERS_PROGS += $(PEERS_DIR)/peer-spdlog
$(PEERS_DIR)/peer-spdlog: bench/peers/peer-spdlog.cc $(PEERS_DEPS)
	@mkdir -p $(dir $@)
	$(PEERS_CXX) -O2 -g -std=c++17 -Wall -Wextra $(EXTRA_CFLAGS) -pthread $(SAN) \
		$(shell pkg-config --cflags spdlog) -o $@ $< $(shell pkg-config --libs spdlog)
endif

.PHONY: peers
peers: $(PEERS_PROGS)
