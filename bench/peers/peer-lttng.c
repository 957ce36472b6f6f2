// SPDX-License-Identifier: MIT
/* kk-bench peers: LTTng-UST tracepoints in the shared workloads (peer.h).
 * The providers' probes are in their own objects (kkpeer_tp.c); here only
 * the call sites. */
#include "kkpeer_tp.h"
#include "kkpeer_chunks.h"

#define PEER_HOT(i) tracepoint(kkpeer, hot, (i), "some payload text")
/* tracepoint_enabled() first, so that "first" sees which site fired. */
#define PEER_SITE(c, n) if (tracepoint_enabled(kkpeer##c, s##n)) { \
		do_tracepoint(kkpeer##c, s##n, i); peer_fired = 1; }
/* Always switched on from outside, by lttng enable-event + start. */
static int peer_on(const char *mode) { (void)mode; return -1; }
/* `lttng start` has returned: wait (bounded) until this process sees it. */
#define PEER_WAIT_ON() do { \
		unsigned long long end_ = peer_now_ns() + 10000000000ull; \
		while (!tracepoint_enabled(kkpeer, hot) && peer_now_ns() < end_) \
			; \
		if (!tracepoint_enabled(kkpeer, hot)) \
			return 1; \
	} while (0)
#include "peer.h"

int main(int argc, char **argv)
{
	return peer_main(argc, argv);
}
