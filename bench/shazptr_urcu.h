/* SPDX-License-Identifier: MIT */
/*
 * The liburcu side of kk-bench shazptr, instantiated once per flavour (its
 * static inline read side needs one translation unit each):
 *   #define SHZB_FL(x) urcu_memb_##x   and   SHZB_NAME shzb_urcu_memb
 */
#include <stdint.h>

#include "bench.h"
#include "shazptr_bench.h"

static void fl_online(void)
{
	SHZB_FL(register_thread)();
}

static void fl_offline(void)
{
	SHZB_FL(unregister_thread)();
}

static double fl_read_ns(long iters)
{
	uint64_t t0;

	SHZB_FL(register_thread)();
	t0 = kkb_now_ns();
	for (long i = 0; i < iters; i++) {
		SHZB_FL(read_lock)();
		__asm__ __volatile__("" ::: "memory");
		SHZB_FL(read_unlock)();
	}
	t0 = kkb_now_ns() - t0;
	SHZB_FL(unregister_thread)();
	return (double)t0 / (double)iters;
}

static void fl_reader(struct shzb_reader *r, const int *objs)
{
	unsigned long n = 0, sink = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_RELAXED)) {
		for (int k = 0; k < SHZB_NOBJS; k++) {
			SHZB_FL(read_lock)();
			sink += (unsigned long)__atomic_load_n(&objs[k], __ATOMIC_RELAXED);
			SHZB_FL(read_unlock)();
			__atomic_store_n(&r->count, ++n, __ATOMIC_RELAXED);
		}
	}
	r->sink = sink;
}

static void fl_sync(void *p)
{
	(void)p;
	SHZB_FL(synchronize_rcu)();
}

const struct shzb_method SHZB_NAME = {
	SHZB_LABEL, fl_online, fl_offline, fl_read_ns, fl_reader, fl_sync,
};
