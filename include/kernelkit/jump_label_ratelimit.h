/* SPDX-License-Identifier: MIT */
/*
 * Deferred static keys: the last decrement is carried out only after a
 * timeout, so a key that is incremented and decremented in quick succession
 * does not patch code every time (the kernel's jump_label_ratelimit.h).
 * Timeouts are in milliseconds.  The delayed decrement runs on the library's
 * worker thread ("kk-worker"), started on first use.  While the library's
 * threads are stopped (kk_threads_stop()) a pending decrement waits;
 * static_key_deferred_flush() then carries it out in the caller.  A pending
 * decrement whose work lives in a shared object is cancelled when the object
 * is unloaded.
 */
#ifndef KERNELKIT_JUMP_LABEL_RATELIMIT_H
#define KERNELKIT_JUMP_LABEL_RATELIMIT_H

#include <kernelkit/jump_label.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* The analogue of the kernel's delayed_work for one deferred key. */
struct kk_delayed_work {
	struct static_key *key;		/* set by the first deferred decrement */
	unsigned long long __work[4];	/* the library's work item: opaque */
};

struct static_key_deferred {
	struct static_key key;
	unsigned long timeout;		/* ms */
	struct kk_delayed_work work;
};

struct static_key_true_deferred {
	struct static_key_true key;
	unsigned long timeout;
	struct kk_delayed_work work;
};

struct static_key_false_deferred {
	struct static_key_false key;
	unsigned long timeout;
	struct kk_delayed_work work;
};

#define DEFINE_STATIC_KEY_DEFERRED_TRUE(name, rl)				\
	struct static_key_true_deferred name = {				\
		__KK_KEY_INIT(1, #name), (rl), { 0, { 0, 0, 0, 0 } } }
#define DEFINE_STATIC_KEY_DEFERRED_FALSE(name, rl)				\
	struct static_key_false_deferred name = {				\
		__KK_KEY_INIT(0, #name), (rl), { 0, { 0, 0, 0, 0 } } }

int __static_key_slow_dec_deferred(struct static_key *key, struct kk_delayed_work *work,
				   unsigned long timeout);
void __static_key_deferred_flush(struct static_key *key, struct kk_delayed_work *work);
void jump_label_rate_limit(struct static_key_deferred *key, unsigned long rl);

#define static_branch_deferred_inc(x)	static_branch_inc(&(x)->key)
#define static_branch_slow_dec_deferred(x)					\
	__static_key_slow_dec_deferred(&(x)->key.key, &(x)->work, (x)->timeout)
#define static_key_slow_dec_deferred(x)						\
	__static_key_slow_dec_deferred(&(x)->key, &(x)->work, (x)->timeout)
#define static_key_deferred_flush(x)						\
	__static_key_deferred_flush((struct static_key *)&(x)->key, &(x)->work)

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif
