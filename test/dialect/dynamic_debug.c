/* SPDX-License-Identifier: MIT */
/* pr_debug() from every dialect: off by default, on after a query. */
#include <string.h>
#include <kernelkit/dynamic_debug.h>
#include "dialect.h"

static char last[256];
static int lines;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)arg;
	if (len >= sizeof(last))
		len = sizeof(last) - 1;
	memcpy(last, msg, len);
	last[len] = 0;
	lines++;
}

static void __attribute__((__noinline__)) say(int n)
{
	pr_debug("dialect says %d\n", n);
}

int dialect_dynamic_debug(void)
{
	kk_dyndbg_set_sink(sink, NULL);
	say(1);
	DIALECT_CHECK(lines == 0);
	DIALECT_CHECK(dynamic_debug_exec_queries("func say +p", NULL) >= 1);
	say(2);
	DIALECT_CHECK(lines == 1);
	DIALECT_CHECK(strstr(last, "dialect says 2") != NULL);
	DIALECT_CHECK(dynamic_debug_exec_queries("func say -p", NULL) >= 1);
	say(3);
	DIALECT_CHECK(lines == 1);
	kk_dyndbg_set_sink(NULL, NULL);
	return 0;
}
