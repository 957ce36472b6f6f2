/* SPDX-License-Identifier: MIT */
/*
 * A program's own log macro with a level, adopted in its header with
 * pr_debug_if() (issue 40, item 5): mylog(LOG_DEBUG, ...) is a site,
 * mylog(LOG_NOTICE, ...) prints through the program's function as before and
 * makes no site, nor does a level that is not a compile-time constant.
 */
#include <stdarg.h>
#include <string.h>
#include <syslog.h>
#include <kernelkit/dynamic_debug.h>
#include "dialect.h"

static int own_calls, own_level;
static char own_msg[128];

/* The program's own log function (Valkey's _serverLog, PostgreSQL's elog_finish). */
static void my_log_fn(int level, const char *fmt, ...)
	__attribute__((__format__(__printf__, 2, 3)));
static void my_log_fn(int level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(own_msg, sizeof(own_msg), fmt, ap);
	va_end(ap);
	own_level = level;
	own_calls++;
}

/* Its header, adopted: a debug level is a site, every other level its function. */
#define mylog(level, ...) \
	pr_debug_if((level) == LOG_DEBUG, my_log_fn(level, __VA_ARGS__), __VA_ARGS__)

static char sunk[128];
static int sunk_lines;

static void level_sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)arg;
	if (len >= sizeof(sunk))
		len = sizeof(sunk) - 1;
	memcpy(sunk, msg, len);
	sunk[len] = 0;
	sunk_lines++;
}

static void log_all(int level)
{
	mylog(LOG_NOTICE, "lvl:notice %d", 1);
	mylog(LOG_DEBUG, "lvl:debug %d", 2);
	mylog(LOG_DEBUG, "lvl:debug-noargs");
	mylog(level, "lvl:var %d", level);	/* not a constant: never a site */
}

static int sites(const char *fmt)
{
	char q[64];

	snprintf(q, sizeof(q), "format \"%s\" =_", fmt);
	return dynamic_debug_exec_queries(q, NULL);
}

int dialect_dynamic_debug_level(void)
{
	kk_dyndbg_set_sink(level_sink, NULL);
	/* the listing: only the two LOG_DEBUG lines are sites */
	DIALECT_CHECK(sites("lvl:notice") == 0);
	DIALECT_CHECK(sites("lvl:var") == 0);
	DIALECT_CHECK(sites("lvl:debug ") == 1);
	DIALECT_CHECK(sites("lvl:debug-noargs") == 1);

	/* off: NOTICE and the variable level print through the program's function */
	log_all(LOG_DEBUG);
	DIALECT_CHECK(own_calls == 2 && sunk_lines == 0);
	DIALECT_CHECK(own_level == LOG_DEBUG && !strcmp(own_msg, "lvl:var 7"));

	/* on: the debug sites print through kernelkit, the others as before */
	DIALECT_CHECK(dynamic_debug_exec_queries("format lvl:debug +p", NULL) == 2);
	own_calls = 0;
	log_all(LOG_INFO);
	DIALECT_CHECK(own_calls == 2 && own_level == LOG_INFO);
	DIALECT_CHECK(sunk_lines == 2 && !strcmp(sunk, "lvl:debug-noargs\n"));
	DIALECT_CHECK(dynamic_debug_exec_queries("format lvl:debug -p", NULL) == 2);
	kk_dyndbg_set_sink(NULL, NULL);
	return 0;
}
