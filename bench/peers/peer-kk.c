// SPDX-License-Identifier: MIT
/* kk-bench peers: kernelkit's pr_debug in the shared workloads (peer.h). */
#define KK_MODNAME "kkpeer"
#include <kernelkit/dynamic_debug.h>

static void peer_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg);
#define PEER_HOT(i) pr_debug("bench message %d: %s\n", (i), "some payload text")
#define PEER_SITE(c, n) pr_debug("site " #n " %d\n", i);
static int peer_on(const char *mode);
#include "peer.h"

static void peer_sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)msg;
	(void)len;
	(void)arg;
	peer_fired = 1;
}

/* stderr: the default sink (+p); ring: the trace ring (+T). */
static int peer_on(const char *mode)
{
	if (!strcmp(mode, "ring"))
		return dynamic_debug_exec_queries("func peer_main =T", "kkpeer") > 0 ? 0 : -2;
	if (!strcmp(mode, "stderr"))
		return dynamic_debug_exec_queries("func peer_main =p", "kkpeer") > 0 ? 0 : -2;
	return -1;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "first"))
		kk_dyndbg_set_sink(peer_sink, NULL);
	return peer_main(argc, argv);
}
