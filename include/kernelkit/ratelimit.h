/* SPDX-License-Identifier: MIT */
/*
 * Rate limiting, the kernel's <linux/ratelimit.h>: allow @burst events per
 * @interval, count the rest, and report "<func>: N callbacks suppressed" when
 * the interval rolls over with suppressed calls.
 *
 *	static DEFINE_RATELIMIT_STATE(rs, DEFAULT_RATELIMIT_INTERVAL,
 *				      DEFAULT_RATELIMIT_BURST);
 *	if (__ratelimit(&rs))
 *		fprintf(stderr, "something happened\n");
 *
 * Differences from the kernel: intervals are in milliseconds (not jiffies),
 * and the "callbacks suppressed" report of __ratelimit() goes to stderr
 * (pr_debug_ratelimited() sends its report through the dynamic-debug sink).
 * A call that finds the state locked by another thread is suppressed and
 * counted, as in the kernel.
 */
#ifndef KERNELKIT_RATELIMIT_H
#define KERNELKIT_RATELIMIT_H

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

#define DEFAULT_RATELIMIT_INTERVAL	5000	/* ms */
#define DEFAULT_RATELIMIT_BURST		10

/* Report the suppressed count only at ratelimit_state_exit(). */
#define RATELIMIT_MSG_ON_RELEASE	1

struct ratelimit_state {
	int lock;			/* a trylock; 0 = free */
	int interval;			/* ms; 0 = no limit */
	int burst;
	int printed;
	int missed;
	unsigned int flags;
	unsigned long long begin;	/* ms, CLOCK_MONOTONIC; 0 = not started */
};

/* Positional, so that C++ before C++20 accepts it too. */
#define RATELIMIT_STATE_INIT_FLAGS(name, interval_init, burst_init, flags_init) \
	{ 0, (interval_init), (burst_init), 0, 0, (flags_init), 0 }
#define RATELIMIT_STATE_INIT(name, interval_init, burst_init)			\
	RATELIMIT_STATE_INIT_FLAGS(name, interval_init, burst_init, 0)
#define RATELIMIT_STATE_INIT_DISABLED						\
	RATELIMIT_STATE_INIT(ratelimit_state, 0, DEFAULT_RATELIMIT_BURST)

#define DEFINE_RATELIMIT_STATE(name, interval_init, burst_init)		\
	struct ratelimit_state name = RATELIMIT_STATE_INIT(name, interval_init, burst_init)

void ratelimit_state_init(struct ratelimit_state *rs, int interval, int burst);
void ratelimit_set_flags(struct ratelimit_state *rs, unsigned long flags);
/* With RATELIMIT_MSG_ON_RELEASE: report what is still suppressed. */
void ratelimit_state_exit(struct ratelimit_state *rs);

/* 1: go ahead; 0: suppressed.  Reports under the name @func. */
int ___ratelimit(struct ratelimit_state *rs, const char *func);
#define __ratelimit(state) ___ratelimit(state, __func__)

/*
 * The decision alone, for callers that report elsewhere: returns 1 or 0 like
 * ___ratelimit() and stores in *@report the suppressed count to report now
 * (0: nothing to report).
 */
int kk_ratelimit_check(struct ratelimit_state *rs, int *report);

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* KERNELKIT_RATELIMIT_H */
