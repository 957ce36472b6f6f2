// SPDX-License-Identifier: MIT
/*
 * An object's sites become reachable together.  The headers register an
 * object in two constructors: its static-key sites at priority 101, its
 * pr_debug sites at 102.  This program stops in a constructor of its own at
 * 101, defined after the headers' (so run after theirs: the check below
 * tells if not), reports, and waits for a line on stdin; then main reports
 * and waits for end of input.
 *   "paused sites=<N> endpoint=<0|1>"  N: static-key sites registered, 1 if
 *                                      the control endpoint listens already
 *   "main"
 * A query that reached the process in the pause would match none of its
 * pr_debug sites though they are compiled in: the endpoint must not listen
 * before the object's last table is registered.
 */
#include <stdio.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

#include "kktest.h"

__attribute__((__noinline__)) void window_fn(int i)
{
	pr_debug("window %d\n", i);
}

static void wait_line(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != '\n')
		;
}

__attribute__((__constructor__(101))) static void pause_between(void)
{
	struct kk_jump_label_stats st;

	kk_jump_label_get_stats(&st);
	printf("paused sites=%llu endpoint=%d\n", st.sites, kk_control_socket_path() != NULL);
	fflush(stdout);
	wait_line();
}

int main(void)
{
	printf("main\n");
	fflush(stdout);
	wait_line();
	window_fn(1);
	return 0;
}
