// SPDX-License-Identifier: MIT
/*
 * tw-demo: a connection table with per-connection timeouts on the timer
 * wheel, and one classic bug: the connection is freed while its timeout is
 * still armed.  Run it under the preload library to see the bug caught:
 *
 *   KK_DEBUG_OBJECTS=1 LD_PRELOAD=build/libkernelkit-odebug.so \
 *       build/examples/timerwheel/tw-demo free-armed
 *
 * Modes: ok (no bug), free-armed (free()), realloc-armed (realloc() of a
 * table holding an armed timer), munmap-armed (munmap() of a page holding
 * one).  Exit 0 when the bug was caught (or there was none), 3 when it was not
 * caught: then the demo stops before the wheel would touch freed memory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "timerwheel.h"

struct conn {
	int fd;
	char name[20];
	struct tw_timer timeout;
};

static unsigned int fired;

void conn_timeout(struct tw_timer *t);
void conn_timeout(struct tw_timer *t)
{
	(void)t;
	fired++;
}

static unsigned long warnings(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st.warnings;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "ok";
	struct tw_wheel wheel;
	struct conn *c;

	tw_wheel_init(&wheel);
	if (!strcmp(mode, "ok")) {
		c = calloc(1, sizeof(*c));
		tw_timer_setup(&c->timeout, conn_timeout);
		tw_add_timer(&wheel, &c->timeout, 10);
		tw_del_timer(&c->timeout);
		tw_timer_free(&c->timeout);
		free(c);
	} else if (!strcmp(mode, "free-armed")) {
		c = calloc(1, sizeof(*c));
		tw_timer_setup(&c->timeout, conn_timeout);
		tw_add_timer(&wheel, &c->timeout, 10);
		free(c);			/* BUG: the timeout is still armed */
	} else if (!strcmp(mode, "realloc-armed")) {
		struct conn *tab = calloc(2, sizeof(*tab));

		tw_timer_setup(&tab[1].timeout, conn_timeout);
		tw_add_timer(&wheel, &tab[1].timeout, 10);
		/* BUG: growing the table may move the armed timer */
		tab = realloc(tab, 4096 * sizeof(*tab));
		free(tab);
	} else if (!strcmp(mode, "munmap-armed")) {
		c = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return 2;
		tw_timer_setup(&c->timeout, conn_timeout);
		tw_add_timer(&wheel, &c->timeout, 10);
		munmap(c, 4096);		/* BUG: the timeout is still armed */
	} else {
		fprintf(stderr, "usage: tw-demo [ok|free-armed|realloc-armed|munmap-armed]\n");
		return 2;
	}
	if (strcmp(mode, "ok") && !warnings()) {
		printf("%s: not caught (pending timers: %lu)\n", mode, wheel.pending);
		return 3;
	}
	tw_advance(&wheel, 100);
	printf("%s: warnings=%lu fired=%u pending=%lu\n", mode, warnings(), fired, wheel.pending);
	return wheel.pending == 0 && fired == 0 ? 0 : 1;
}
