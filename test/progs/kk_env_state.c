// SPDX-License-Identifier: MIT
/*
 * Prints, one "name=value" a line, the state that kernelkit's settings
 * (KK_* environment variables) control, so that a test can tell which ones
 * were honoured: test/scripts/setuid_env.sh (a set-user-ID copy must honour
 * none) and test/unit/settings_env.c (the one boolean grammar).
 *
 *   secure          getauxval(AT_SECURE): 1 in a set-user-ID run
 *   dyndbg          1 if this program's pr_debug site printed (KK_DYNDBG='+p')
 *   debug_objects   1 if tracking is on (KK_DEBUG_OBJECTS)
 *   odebug_policy   the tracker pool policy (KK_DEBUG_OBJECTS_POLICY)
 *   control         the endpoint's socket path, or "none" (KK_CONTROL)
 *   panic_timeout   (KK_PANIC_TIMEOUT)
 *   shazptr_skip    the skip_synchronize_self_scan setting (KK_SHAZPTR_SKIP_SELF_SCAN)
 *
 * With an argument "active", it also leaves one debug object active at exit
 * (for the exit report).
 */
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>

#include <kernelkit/control.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/panic.h>
#include <kernelkit/shazptr.h>

static int printed;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)msg;
	(void)len;
	(void)arg;
	printed = 1;
}

void env_state_site(void);
void env_state_site(void)
{
	pr_debug("env state site\n");
}

static const struct debug_obj_descr state_descr = { .name = "env_state" };
static long obj;

int main(int argc, char **argv)
{
	const char *sock = kk_control_socket_path();

	kk_dyndbg_set_sink(sink, NULL);
	env_state_site();
	printf("secure=%lu\n", getauxval(AT_SECURE));
	printf("dyndbg=%d\n", printed);
	printf("debug_objects=%d\n", kk_debug_objects_enabled());
	printf("odebug_policy=%s\n", kk_debug_objects_policy());
	printf("control=%s\n", sock ? sock : "none");
	printf("panic_timeout=%d\n", kk_panic_get_timeout());
	printf("shazptr_skip=%d\n", kk_shazptr_get_skip_synchronize_self_scan());
	fflush(stdout);
	if (argc > 1 && !strcmp(argv[1], "active")) {
		debug_object_init(&obj, &state_descr);
		debug_object_activate(&obj, &state_descr);
	}
	return 0;
}
