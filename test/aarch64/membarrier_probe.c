/* SPDX-License-Identifier: MIT */
/*
 * make check-aarch64, guest fact: can this kernel make other threads
 * serialize their instruction stream (membarrier
 * PRIVATE_EXPEDITED_SYNC_CORE), the barrier cross-modifying code needs on
 * arm64?  Prints one line; exit 0 when registration succeeded, 1 when not.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long membarrier(int cmd, unsigned int flags)
{
	return syscall(__NR_membarrier, cmd, flags, 0);
}

int main(void)
{
	long q = membarrier(MEMBARRIER_CMD_QUERY, 0);

	if (q < 0) {
		printf("membarrier: QUERY failed: %s\n", strerror(errno));
		return 1;
	}
	if (!(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE)) {
		printf("membarrier: PRIVATE_EXPEDITED_SYNC_CORE not offered (commands 0x%lx)\n", q);
		return 1;
	}
	if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0) ||
	    membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0)) {
		printf("membarrier: PRIVATE_EXPEDITED_SYNC_CORE offered but fails: %s\n",
		       strerror(errno));
		return 1;
	}
	printf("membarrier: PRIVATE_EXPEDITED_SYNC_CORE available (commands 0x%lx)\n", q);
	return 0;
}
