// SPDX-License-Identifier: MIT
/* INTERIM (lead's branch only): membarrier-only sync, replaced by the sync helper's file at merge. */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common.h"
#include "text_sync.h"

static int membarrier_ok, armed;
static unsigned long long rounds;

static int membarrier(int cmd) { return (int)syscall(__NR_membarrier, cmd, 0, 0); }

void kk_sync_arm(void)
{
	int cmds;

	if (armed)
		return;
	armed = 1;
	cmds = membarrier(MEMBARRIER_CMD_QUERY);
	membarrier_ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
}

void kk_sync_atfork_child(void) { armed = 0; membarrier_ok = 0; }

static int nthreads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

int kk_sync_plan(char *err, size_t errlen)
{
	kk_sync_arm();
	if (membarrier_ok || nthreads() == 1)
		return KK_PATCH_INT3;
	snprintf(err, errlen, "membarrier SYNC_CORE is unavailable and other threads run");
	return -ENOTSUP;
}

int kk_sync_round(void)
{
	if (!membarrier_ok)
		return 0;
	rounds++;
	return membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) ? -errno : 0;
}

int kk_stop_machine(int (*fn)(void *), void *arg, char *err, size_t errlen)
{
	(void)fn; (void)arg;
	snprintf(err, errlen, "stop_machine not implemented");
	return -ENOTSUP;
}

pid_t kk_tracer_pid(void) { return 0; }
#include <valgrind/valgrind.h>
bool kk_under_valgrind(void) { return RUNNING_ON_VALGRIND; }
void kk_sync_get_stats(struct kk_sync_stats *st) { memset(st, 0, sizeof(*st)); st->membarrier_rounds = rounds; }
const char *kk_sync_method(void) { return "membarrier"; }
void kk_gdb_stop_signal(int sig) { (void)sig; }
