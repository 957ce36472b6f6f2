// SPDX-License-Identifier: MIT
/*
 * Writers flat out, for kkctl record's flood test
 * (test/scripts/kkctl_record_flood.sh): record_flood THREADS N.  It prints
 * "ready" once its threads wait; each line "go" on stdin makes every thread
 * run flood_tick() N times as fast as it can (no pause between events), and
 * is answered "done" once all have; "quit" (or EOF) exits.  Each event says
 * which round and index it is, so that the script can tell a record read
 * twice, or one missing, from the counts.
 */
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

#include "rounds.h"

void flood_tick(int round, long i)
{
	pr_debug("flood round=%d i=%ld pad=%s\n", round, i, "0123456789abcdef0123456789abcdef");
}

static void flood_round(int thread, int round, long n)
{
	(void)thread;
	for (long i = 0; i < n; i++)
		flood_tick(round, i);
}

int main(int argc, char **argv)
{
	return rounds_main(argc, argv, "record_flood", flood_round);
}
