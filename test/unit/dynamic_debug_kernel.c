// SPDX-License-Identifier: MIT
/*
 * The kernel's behaviour for a module's sites: `#define DEBUG` starts them
 * enabled, KBUILD_MODNAME names their module, a hex dump's format is its
 * prefix (or "hexdump" when the prefix is not a constant), and the listing
 * shows each file's sites in ascending line order.
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug_util.h"
#include "kktest.h"

static void *load(void)
{
	void *h = dlopen(kkt_build_path("test/lib/libdynamic_debug_kdebug.so"), RTLD_NOW | RTLD_LOCAL);

	cr_assert_not_null(h, "%s", dlerror());
	return h;
}

Test(dynamic_debug_kernel, debug_sites_start_enabled)
{
	void *h = load();
	void (*run)(int) = (void (*)(int))dlsym(h, "kdebug_run");
	struct dynamic_debug_capture c;

	cr_assert_not_null(run);
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug first"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug third"), "p");
	dynamic_debug_capture_start(&c);
	run(1);
	cr_assert_eq(c.n, 3, "%d lines: %s", c.n, c.buf);
	cr_assert(strstr(c.buf, "kdebug second 1"), "%s", c.buf);
	/* queries see them as enabled: -p changes all of them, +p none */
	char *r;

	cr_assert_eq(dynamic_debug_write("module kdebug_mod format kdebug +p", &r), 0);
	cr_assert(strstr(r, "matched 3 changed 0"), "%s", r);
	free(r);
	cr_assert_eq(dynamic_debug_write("module kdebug_mod format kdebug -p", &r), 0);
	cr_assert(strstr(r, "matched 3 changed 3"), "%s", r);
	free(r);
	run(2);
	cr_assert_eq(c.n, 3, "%s", c.buf);
	cr_assert_eq(dynamic_debug_write("module kdebug_mod format second +p", NULL), 0);
	run(3);
	cr_assert_eq(c.n, 4, "%s", c.buf);
	cr_assert(strstr(c.buf, "kdebug second 3"), "%s", c.buf);
	kk_dyndbg_set_sink(NULL, NULL);
	dlclose(h);
}

Test(dynamic_debug_kernel, kbuild_modname)
{
	void *h = load();

	cr_assert_eq(kk_dyndbg_count_sites("kdebug_mod"), 5);
	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_kdebug"), 0);
	char *l = dynamic_debug_listing();

	cr_assert(strstr(l, "[kdebug_mod]kdebug_run =p \"kdebug first %d\\n\""), "%s", l);
	free(l);
	dlclose(h);
}

Test(dynamic_debug_kernel, hexdump_format_is_the_prefix)
{
	void *h = load();
	void (*hex)(const char *, const void *, size_t) =
		(void (*)(const char *, const void *, size_t))dlsym(h, "kdebug_hex");
	struct dynamic_debug_capture c;
	char *l = dynamic_debug_listing();

	cr_assert(strstr(l, "[kdebug_mod]kdebug_hex =p \"kdhex: \""), "%s", l);
	cr_assert(strstr(l, "[kdebug_mod]kdebug_hex =p \"hexdump\""), "%s", l);
	cr_assert_null(strstr(l, "dynamic_debug_kdebug.c\"\n"), "%s", l);
	free(l);
	/* "format" queries select them by prefix */
	cr_assert_eq(dynamic_debug_write("format hexdump -p", NULL), 0);
	dynamic_debug_capture_start(&c);
	hex("vpfx ", "ABCD", 4);
	cr_assert_eq(c.n, 1, "%s", c.buf);
	cr_assert(strstr(c.buf, "kdhex: 00000000: 41 42 43 44"), "%s", c.buf);
	kk_dyndbg_set_sink(NULL, NULL);
	dlclose(h);
}

Test(dynamic_debug_kernel, listing_lines_ascend)
{
	void *h = load();
	char *l = dynamic_debug_listing();
	char *a = strstr(l, "kdebug first"), *b = strstr(l, "kdebug second");
	char *c = strstr(l, "kdebug third"), *x = strstr(l, "kdhex: ");

	cr_assert(a && b && c && x, "%s", l);
	cr_assert(a < b && b < c && c < x, "%s", l);
	free(l);
	dlclose(h);
}

/*
 * The kernel applies the good queries of a write and returns the last error;
 * kernelkit's default is all or nothing.  dynamic_debug/all_or_nothing = 0
 * (kk_dyndbg_set_all_or_nothing(0)) gives the kernel's behaviour.
 */
Test(dynamic_debug_kernel, query_by_query_mode)
{
	void *h = load();
	const char *w = "module kdebug_mod format first -p; frobnicate x +p\n"
			"module kdebug_mod format third -p";
	char *r = NULL, *t = NULL;
	size_t n;

	cr_assert_eq(dynamic_debug_write(w, &r), -EINVAL);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug first"), "p");
	cr_assert_eq(kk_control_read("dynamic_debug/all_or_nothing", &t, &n), 0);
	cr_assert_str_eq(t, "1\n");
	free(t);
	cr_assert_eq(kk_control_write("dynamic_debug/all_or_nothing", "0\n", 2, &r), 0);
	free(r);
	cr_assert_eq(dynamic_debug_write(w, &r), -EINVAL);
	cr_assert(strstr(r, "unknown keyword \"frobnicate\""), "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug first"), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug second"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug third"), "_");
	/* the exported call too: good queries applied, the error returned */
	cr_assert_eq(dynamic_debug_exec_queries("format kdebug +p; line x-y +p", "kdebug_mod"),
		     -EINVAL);
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug first"), "p");
	cr_assert_eq(kk_dyndbg_set_all_or_nothing(1), 0);
	cr_assert_eq(dynamic_debug_exec_queries("format kdebug -p; line x-y +p", "kdebug_mod"),
		     -EINVAL);
	cr_assert_str_eq(dynamic_debug_flags_of("kdebug first"), "p");
	dlclose(h);
}
