/* SPDX-License-Identifier: MIT */
/* Debug objects from every dialect: an active object freed is reported. */
#include <string.h>
#include <kernelkit/debugobjects.h>
#include "dialect.h"

struct dialect_timer {
	int armed;
};

static int reports;

static void printer(const char *text, void *arg)
{
	(void)arg;
	if (strstr(text, "ODEBUG: free active"))
		reports++;
}

static bool fixup_free(void *addr, enum debug_obj_state state)
{
	if (state == ODEBUG_STATE_ACTIVE) {
		debug_object_deactivate(addr, NULL);
		return true;
	}
	return false;
}

static struct debug_obj_descr timer_descr;

int dialect_debugobjects(void)
{
	struct dialect_timer t;

	memset(&timer_descr, 0, sizeof(timer_descr));
	timer_descr.name = "dialect_timer";
	timer_descr.fixup_free = fixup_free;
	kk_debug_objects_set_printer(printer, NULL);
	DIALECT_CHECK(kk_debug_objects_enable() == 0);
	debug_object_init(&t, &timer_descr);
	DIALECT_CHECK(debug_object_activate(&t, &timer_descr) == 0);
	debug_object_free(&t, &timer_descr);
	DIALECT_CHECK(reports == 1);
	DIALECT_CHECK(kk_debug_objects_disable() == 0);
	kk_debug_objects_set_printer(NULL, NULL);
	return 0;
}
