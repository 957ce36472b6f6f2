/* SPDX-License-Identifier: MIT */
/*
 * The README's debugobjects idiom, as C++ writes it in each dialect (built
 * with -Wall -Wextra -Werror -pedantic: g++ once failed C++20 with
 * -Wmissing-field-initializers): C++20 and later the kernel's designated
 * form, C++14/17 `{ "name" }`, C++11 every field.  Then the README's
 * sequence: freeing an active object is reported once, with the name.
 */
#include <string.h>
#include <kernelkit/debugobjects.h>

#if __cplusplus >= 202002L
static const struct debug_obj_descr timer_descr = { .name = "cxx_timer" };
#elif __cplusplus >= 201402L
static const struct debug_obj_descr timer_descr = { "cxx_timer" };
#else
static const struct debug_obj_descr timer_descr = { "cxx_timer", 0, 0, 0, 0, 0, 0, 0 };
#endif

static int reports;

static void printer(const char *text, void *arg)
{
	(void)arg;
	if (strstr(text, "ODEBUG: free active") && strstr(text, "cxx_timer"))
		reports++;
}

int debugobjects_idiom_check(void);

int debugobjects_idiom_check(void)
{
	struct timer {
		int armed;
	} t = { 0 };

	if (timer_descr.debug_hint || timer_descr.is_static_object || timer_descr.fixup_init ||
	    timer_descr.fixup_activate || timer_descr.fixup_destroy || timer_descr.fixup_free ||
	    timer_descr.fixup_assert_init)
		return 1;
	kk_debug_objects_set_printer(printer, NULL);
	if (kk_debug_objects_enable())
		return 1;
	debug_object_init(&t, &timer_descr);
	debug_object_activate(&t, &timer_descr);	/* armed */
	debug_object_free(&t, &timer_descr);		/* freed while active: reported */
	debug_object_deactivate(&t, &timer_descr);	/* still tracked: end it quietly */
	debug_object_free(&t, &timer_descr);
	kk_debug_objects_set_printer(NULL, NULL);
	return reports == 1 ? 0 : 1;
}
