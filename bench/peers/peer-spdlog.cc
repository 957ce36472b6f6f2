// SPDX-License-Identifier: MIT
/*
 * kk-bench peers: spdlog in the shared workloads (peer.h).  A debug message
 * on a logger at level info: a run-time level check per call.  Switched on
 * from inside (set_level(debug)), to a stderr sink as its natural sink.
 */
#include <spdlog/spdlog.h>
#include <spdlog/sinks/stdout_sinks.h>

static std::shared_ptr<spdlog::logger> peer_log;
#define PEER_HOT(i) peer_log->debug("bench message {}: {}", (i), "some payload text")
#define PEER_SITE(c, n) peer_log->debug("site " #n " {}", i);
static int peer_on(const char *mode)
{
	(void)mode;
	peer_log->set_level(spdlog::level::debug);
	return 0;
}
#include "peer.h"

int main(int argc, char **argv)
{
	peer_log = spdlog::stderr_logger_st("kkpeer");
	peer_log->set_level(spdlog::level::info);
	return peer_main(argc, argv);
}
