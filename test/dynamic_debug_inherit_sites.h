/* SPDX-License-Identifier: MIT */
/*
 * The two sites of the inherit tests (test/progs/dynamic_debug_inherit.c,
 * test/stress/dynamic_debug_inherit_stress.c), and how a program tells
 * whether one is on: with sink() as its kk_dyndbg_set_sink(), a call of a
 * site that is on reaches sink().  The tests' queries name the functions
 * ("func report_site +p"), so their names are part of the tests.  Included by
 * one file of a program: it defines the sites.
 */
#ifndef KK_DD_INHERIT_SITES_H
#define KK_DD_INHERIT_SITES_H

#include <stddef.h>

#include <kernelkit/dynamic_debug.h>

static int hits;

static void sink(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d; (void)msg; (void)len; (void)arg;
	hits++;
}

__attribute__((noinline)) void report_site(void)
{
	pr_debug("report site\n");
}

__attribute__((noinline)) void other_site(void)
{
	pr_debug("other site\n");
}

/* 1 when calling @f reached sink(): its site is on. */
static int site_on(void (*f)(void))
{
	int before = hits;

	f();
	return hits != before;
}

#endif
