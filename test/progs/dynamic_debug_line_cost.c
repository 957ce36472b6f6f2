// SPDX-License-Identifier: MIT
/*
 * The loops test/scripts/dynamic_debug_line_cost.sh counts instructions of
 * (callgrind --toggle-collect=cost_loop), LINE_ITERS iterations each:
 *   print  a pr_debug with p, to stderr (the caller points it at /dev/null)
 *   bare   the same line by snprintf() and one write(): the baseline
 *   ring   the same pr_debug with T, into the thread's trace ring
 *   floor  the ring's floor: the stores of the same record and nothing
 *          else, the string folded by the compiler (bench/dd_ring_floor.h)
 *   floor_rt  the same with the string unknown to the compiler
 *   empty  the loop alone
 */
#define KK_MODNAME "linecost"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include "../../bench/dd_ring_floor.h"

#define LINE_ITERS 100000

static volatile int sink;

__attribute__((noinline)) static void site(int i)
{
	pr_debug("bench message %d: %s\n", i, "some payload text");
}

__attribute__((noinline)) static void bare(int i)
{
	char b[512];
	int n = snprintf(b, sizeof(b), "bench message %d: %s\n", i, "some payload text");

	if (n > 0 && write(2, b, (size_t)n) < 0)
		sink = 1;
}

__attribute__((noinline)) static void empty(int i)
{
	sink = i;
}

__attribute__((noinline)) void cost_loop(void (*fn)(int))
{
	for (int i = 0; i < LINE_ITERS; i++)
		fn(i);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	if (!strcmp(m, "print") || !strcmp(m, "ring")) {
		if (dynamic_debug_exec_queries(!strcmp(m, "print") ? "func site =p" : "func site =T",
					       KK_MODNAME) != 1)
			return 1;
		site(-1);		/* the first event maps the ring, out of the count */
		cost_loop(site);
	} else if (!strcmp(m, "bare")) {
		cost_loop(bare);
	} else if (!strcmp(m, "floor")) {
		cost_loop(kkb_dd_floor_site);
	} else if (!strcmp(m, "floor_rt")) {
		cost_loop(kkb_dd_floor_rt_site);
	} else if (!strcmp(m, "empty")) {
		cost_loop(empty);
	} else {
		fprintf(stderr, "usage: %s print|bare|ring|floor|floor_rt|empty\n", argv[0]);
		return 2;
	}
	printf("%d\n", LINE_ITERS);
	return 0;
}
