// SPDX-License-Identifier: MIT
/* A timer wheel checked by debug objects; see timerwheel.h. */
#include <errno.h>
#include <stddef.h>

#include "timerwheel.h"

/* ---- debug-objects glue: the type's description and its fixups --------------- */

static void *tw_debug_hint(void *addr)
{
	return (void *)((struct tw_timer *)addr)->fn;
}

static bool tw_is_static_object(void *addr)
{
	return ((struct tw_timer *)addr)->flags & TW_TIMER_STATIC;
}

/* What an uninitialised timer runs once the fixup has set it up. */
static void tw_stub_timer(struct tw_timer *t)
{
	(void)t;
}

/* init of a pending timer: take it off the wheel, then initialise it. */
static bool tw_fixup_init(void *addr, enum debug_obj_state state)
{
	struct tw_timer *t = addr;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	tw_del_timer(t);
	debug_object_init(t, &tw_timer_debug_descr);
	return true;
}

/*
 * add of an unknown timer: set it up with a stub callback (the kernel's
 * timer does the same), then let the add go on.  add of a pending timer:
 * not fixable, refuse.
 */
static bool tw_fixup_activate(void *addr, enum debug_obj_state state)
{
	struct tw_timer *t = addr;

	if (state != ODEBUG_STATE_NOTAVAILABLE)
		return false;
	t->next = NULL;
	t->pprev = NULL;
	t->fn = tw_stub_timer;
	t->flags = 0;
	debug_object_init(t, &tw_timer_debug_descr);
	debug_object_activate(t, &tw_timer_debug_descr);
	return true;
}

/* destroy or free of a pending timer: take it off the wheel first. */
static bool tw_fixup_destroy(void *addr, enum debug_obj_state state)
{
	struct tw_timer *t = addr;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	tw_del_timer(t);
	debug_object_destroy(t, &tw_timer_debug_descr);
	return true;
}

static bool tw_fixup_free(void *addr, enum debug_obj_state state)
{
	struct tw_timer *t = addr;

	if (state != ODEBUG_STATE_ACTIVE)
		return false;
	tw_del_timer(t);
	debug_object_free(t, &tw_timer_debug_descr);
	return true;
}

/* deleting or re-arming a timer nobody set up */
static bool tw_fixup_assert_init(void *addr, enum debug_obj_state state)
{
	struct tw_timer *t = addr;

	if (state != ODEBUG_STATE_NOTAVAILABLE)
		return false;
	t->next = NULL;
	t->pprev = NULL;
	t->fn = tw_stub_timer;
	t->flags = 0;
	debug_object_init(t, &tw_timer_debug_descr);
	return true;
}

const struct debug_obj_descr tw_timer_debug_descr = {
	.name = "timer_list",
	.debug_hint = tw_debug_hint,
	.is_static_object = tw_is_static_object,
	.fixup_init = tw_fixup_init,
	.fixup_activate = tw_fixup_activate,
	.fixup_destroy = tw_fixup_destroy,
	.fixup_free = tw_fixup_free,
	.fixup_assert_init = tw_fixup_assert_init,
};

/* ---- the wheel ----------------------------------------------------------------- */

void tw_wheel_init(struct tw_wheel *w)
{
	pthread_mutex_init(&w->lock, NULL);
	w->now = 0;
	w->pending = 0;
	for (int i = 0; i < TW_SLOTS; i++)
		w->slot[i] = NULL;
}

static void setup(struct tw_timer *t, void (*fn)(struct tw_timer *t), bool onstack)
{
	if (onstack)
		debug_object_init_on_stack(t, &tw_timer_debug_descr);
	else
		debug_object_init(t, &tw_timer_debug_descr);
	t->next = NULL;
	t->pprev = NULL;
	t->expires = 0;
	t->fn = fn;
	t->wheel = NULL;
	t->flags = 0;
}

void tw_timer_setup(struct tw_timer *t, void (*fn)(struct tw_timer *t))
{
	setup(t, fn, false);
}

void tw_timer_setup_on_stack(struct tw_timer *t, void (*fn)(struct tw_timer *t))
{
	setup(t, fn, true);
}

bool tw_timer_pending(const struct tw_timer *t)
{
	return t->pprev != NULL;
}

static void enqueue(struct tw_wheel *w, struct tw_timer *t)
{
	struct tw_timer **head = &w->slot[t->expires % TW_SLOTS];

	t->next = *head;
	if (t->next)
		t->next->pprev = &t->next;
	t->pprev = head;
	*head = t;
	t->wheel = w;
	w->pending++;
}

static void dequeue(struct tw_wheel *w, struct tw_timer *t)
{
	*t->pprev = t->next;
	if (t->next)
		t->next->pprev = t->pprev;
	t->next = NULL;
	t->pprev = NULL;
	w->pending--;
}

int tw_add_timer(struct tw_wheel *w, struct tw_timer *t, uint64_t expires)
{
	int ret;

	pthread_mutex_lock(&w->lock);
	/* the check comes first: a fixup may set the timer up */
	ret = debug_object_activate(t, &tw_timer_debug_descr);
	if (!ret && tw_timer_pending(t))
		ret = -EBUSY;		/* caught by the line above when debugging */
	if (!ret) {
		t->expires = expires < w->now ? w->now : expires;
		enqueue(w, t);
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int tw_mod_timer(struct tw_wheel *w, struct tw_timer *t, uint64_t expires)
{
	int ret;

	debug_object_assert_init(t, &tw_timer_debug_descr);
	pthread_mutex_lock(&w->lock);
	if (tw_timer_pending(t)) {
		dequeue(t->wheel, t);
		debug_object_deactivate(t, &tw_timer_debug_descr);
	}
	ret = debug_object_activate(t, &tw_timer_debug_descr);
	if (!ret) {
		t->expires = expires < w->now ? w->now : expires;
		enqueue(w, t);
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

int tw_del_timer(struct tw_timer *t)
{
	struct tw_wheel *w;
	int ret = 0;

	debug_object_assert_init(t, &tw_timer_debug_descr);
	w = t->wheel;
	if (!w)
		return 0;
	pthread_mutex_lock(&w->lock);
	if (tw_timer_pending(t)) {
		dequeue(w, t);
		debug_object_deactivate(t, &tw_timer_debug_descr);
		ret = 1;
	}
	pthread_mutex_unlock(&w->lock);
	return ret;
}

void tw_timer_destroy(struct tw_timer *t)
{
	debug_object_destroy(t, &tw_timer_debug_descr);
}

void tw_timer_free(struct tw_timer *t)
{
	debug_object_free(t, &tw_timer_debug_descr);
}

void tw_destroy_timer_on_stack(struct tw_timer *t)
{
	destroy_object_on_stack(t, &tw_timer_debug_descr);
}

unsigned int tw_advance(struct tw_wheel *w, uint64_t now)
{
	unsigned int ran = 0;

	pthread_mutex_lock(&w->lock);
	while (w->now < now) {
		struct tw_timer **pp = &w->slot[++w->now % TW_SLOTS];

		while (*pp) {
			struct tw_timer *t = *pp;
			void (*fn)(struct tw_timer *t) = t->fn;

			if (t->expires > w->now) {
				pp = &t->next;
				continue;
			}
			dequeue(w, t);
			debug_object_deactivate(t, &tw_timer_debug_descr);
			pthread_mutex_unlock(&w->lock);
			fn(t);			/* may re-arm or free the timer */
			ran++;
			pthread_mutex_lock(&w->lock);
			pp = &w->slot[w->now % TW_SLOTS];	/* the slot may have changed */
		}
	}
	pthread_mutex_unlock(&w->lock);
	return ran;
}
