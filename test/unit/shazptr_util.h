/* SPDX-License-Identifier: MIT */
/* Helpers shared by the shazptr unit tests.  Every wait is bounded. */
#ifndef KK_TEST_SHAZPTR_UTIL_H
#define KK_TEST_SHAZPTR_UTIL_H

#include <pthread.h>
#include <stdbool.h>
#include <time.h>

#include <kernelkit/shazptr.h>

/* How long a blocked synchronize must stay blocked before we let it go. */
#define SHZT_HOLD_MS	100
/* Upper bound for anything that must finish. */
#define SHZT_BOUND_MS	5000

static inline void shzt_sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

/* Wait until *flag becomes non-zero, at most @ms milliseconds. */
static inline bool shzt_wait_flag(const int *flag, long ms)
{
	for (long i = 0; i < ms; i++) {
		if (__atomic_load_n(flag, __ATOMIC_ACQUIRE))
			return true;
		shzt_sleep_ms(1);
	}
	return __atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0;
}

/* synchronize_shazptr(ptr) in a thread of its own. */
struct shzt_syncer {
	void *ptr;
	int done;
	pthread_t thread;
};

static inline void *shzt_syncer_fn(void *arg)
{
	struct shzt_syncer *s = (struct shzt_syncer *)arg;

	synchronize_shazptr(s->ptr);
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static inline int shzt_syncer_start(struct shzt_syncer *s, void *ptr)
{
	s->ptr = ptr;
	s->done = 0;
	return pthread_create(&s->thread, NULL, shzt_syncer_fn, s);
}

/* Join if it finished within the bound; false (and no join) otherwise. */
static inline bool shzt_syncer_finish(struct shzt_syncer *s)
{
	if (!shzt_wait_flag(&s->done, SHZT_BOUND_MS))
		return false;
	pthread_join(s->thread, NULL);
	return true;
}

static inline void *shzt_slot_value(void)
{
	return __kk_shazptr_slot ? __atomic_load_n(__kk_shazptr_slot, __ATOMIC_RELAXED) : NULL;
}

static inline unsigned long long shzt_handoffs(void)
{
	struct kk_shazptr_stats st;

	kk_shazptr_get_stats(&st);
	return (unsigned long long)st.sync_scan_thread;
}

/* Wait until @n synchronize calls have handed their wait to the scan
 * thread, at most SHZT_BOUND_MS: a syncer started a moment ago may not have
 * reached its scan yet on a busy machine. */
static inline bool shzt_wait_handoffs(unsigned long long n)
{
	for (long i = 0; i < SHZT_BOUND_MS; i++) {
		if (shzt_handoffs() >= n)
			return true;
		shzt_sleep_ms(1);
	}
	return shzt_handoffs() >= n;
}

#endif
