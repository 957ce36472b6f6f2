/* SPDX-License-Identifier: MIT */
/*
 * A small timer wheel that checks its timers with kernelkit's debug objects,
 * the way the kernel's timer_list does: setup = debug_object_init, arming =
 * activate, expiry or deletion = deactivate, freeing = debug_object_free.
 *
 * One level of TW_SLOTS slots, one tick per slot; a timer further away than
 * TW_SLOTS ticks just waits for its slot to come round again.  Callbacks run
 * from tw_advance() without the wheel's lock held.
 */
#ifndef KK_EXAMPLE_TIMERWHEEL_H
#define KK_EXAMPLE_TIMERWHEEL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <kernelkit/debugobjects.h>

#define TW_SLOTS	64
#define TW_TIMER_STATIC	0x1u	/* set by TW_TIMER_INITIALIZER: needs no setup */

struct tw_wheel;

struct tw_timer {
	struct tw_timer *next, **pprev;		/* pprev != NULL: pending */
	uint64_t expires;
	void (*fn)(struct tw_timer *t);
	struct tw_wheel *wheel;			/* the wheel it was last added to */
	unsigned int flags;
};

#define TW_TIMER_INITIALIZER(_fn) { .fn = (_fn), .flags = TW_TIMER_STATIC }

struct tw_wheel {
	pthread_mutex_t lock;
	uint64_t now;
	unsigned long pending;
	struct tw_timer *slot[TW_SLOTS];
};

extern const struct debug_obj_descr tw_timer_debug_descr;

void tw_wheel_init(struct tw_wheel *w);
void tw_timer_setup(struct tw_timer *t, void (*fn)(struct tw_timer *t));
void tw_timer_setup_on_stack(struct tw_timer *t, void (*fn)(struct tw_timer *t));
/* 0; -EBUSY when already pending; -EINVAL when debug objects refused it. */
int tw_add_timer(struct tw_wheel *w, struct tw_timer *t, uint64_t expires);
/* Re-arm, pending or not.  0 or -EINVAL. */
int tw_mod_timer(struct tw_wheel *w, struct tw_timer *t, uint64_t expires);
/* 1 when it was pending, 0 when not. */
int tw_del_timer(struct tw_timer *t);
bool tw_timer_pending(const struct tw_timer *t);
/* Never to be used again (e.g. a module going away). */
void tw_timer_destroy(struct tw_timer *t);
/* Before the memory holding @t is freed. */
void tw_timer_free(struct tw_timer *t);
/* An on-stack timer going out of scope. */
void tw_destroy_timer_on_stack(struct tw_timer *t);
/* Move the wheel to @now and run what expired.  Returns how many ran. */
unsigned int tw_advance(struct tw_wheel *w, uint64_t now);

#endif
