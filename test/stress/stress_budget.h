/* SPDX-License-Identifier: MIT */
/*
 * A stress program's time budget.  A stress loop does a fixed amount of work
 * (toggles, flips), each step of which waits for every thread to run: on a
 * quiet 2-core machine the programs take seconds, but with a CPU hog on each
 * core they took 8 to 10 times as long and one ran past the runner's 600 s
 * (issue 37: "make check passes with a CPU hog on each core").  So the loop
 * also stops once KK_STRESS_SECONDS (default: the program's own) of wall time
 * have passed, after at least a minimum of steps, and says so: the checks
 * then hold for the steps that ran.  The amount of work is what load
 * changes, never what is asserted.
 */
#ifndef KK_STRESS_BUDGET_H
#define KK_STRESS_BUDGET_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double stress_budget_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Called from the loop with the steps done so far; the first call starts the
 * clock.  True once @done >= @min and the budget (KK_STRESS_SECONDS, else
 * @def_s seconds; 0: none) has passed since the first call.
 */
static inline bool stress_budget_spent(long done, long min, double def_s)
{
	static double start, budget = -1;

	if (budget < 0) {
		const char *v = getenv("KK_STRESS_SECONDS");

		budget = v ? atof(v) : def_s;
		start = stress_budget_now();
	}
	if (budget <= 0 || done < min || stress_budget_now() - start < budget)
		return false;
	printf("time budget of %g s spent after %ld steps: stopping there (fewer steps, the same checks)\n",
	       budget, done);
	return true;
}

#endif
