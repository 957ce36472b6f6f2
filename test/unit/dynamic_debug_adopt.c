// SPDX-License-Identifier: MIT
/*
 * Decorations for sites whose function formats its own line
 * (docs/adoption.md): a function called through _dynamic_func_call() gets
 * the prefix the flags ask for from kk_dynamic_emit_prefix(); a query that
 * asks a _no_desc site (whose function gets no descriptor) for m f l s t d is
 * refused in one line and changes no site at all, however many others it
 * matched.
 */
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

#define MOD "dynamic_debug_adopt"

/* The program's own logger: what the sites call. */
static char own_out[1024];

__attribute__((format(printf, 1, 2))) static void own_log(const char *fmt, ...)
{
	size_t n = strlen(own_out);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(own_out + n, sizeof(own_out) - n, fmt, ap);
	va_end(ap);
}

/* The same with the descriptor: it asks for the decoration first. */
__attribute__((format(printf, 2, 3))) static void own_log_desc(const struct _ddebug *d,
							     const char *fmt, ...)
{
	char pre[KK_DYNDBG_PREFIX_SIZE];
	size_t n;
	va_list ap;

	own_log("%s", dynamic_emit_prefix(d, pre));
	n = strlen(own_out);
	va_start(ap, fmt);
	vsnprintf(own_out + n, sizeof(own_out) - n, fmt, ap);
	va_end(ap);
}

__attribute__((noinline)) void ad_plain_a(int v)
{
	pr_debug("ad plain a %d\n", v);
}

__attribute__((noinline)) void ad_plain_b(int v)
{
	pr_debug("ad plain b %d\n", v);
}

__attribute__((noinline)) void ad_nodesc(int v)
{
	_dynamic_func_call_no_desc("ad nodesc", own_log, "ad nodesc %d\n", v);
}

static int with_desc_line;

__attribute__((noinline)) void ad_with_desc(int v)
{
	with_desc_line = __LINE__ + 1;
	_dynamic_func_call("ad with desc", own_log_desc, "ad with desc %d\n", v);
}

static void reset(void)
{
	cr_assert_eq(dynamic_debug_exec_queries("=_", MOD), 4);
	own_out[0] = '\0';
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(dynamic_debug_adopt, nodesc_site_refuses_decoration_and_nothing_changes)
{
	char *before, *after, *reply = NULL;

	reset();
	/* a mix of states, so that "nothing changed" means something */
	cr_assert_eq(dynamic_debug_write("func ad_plain_a +p; func ad_plain_b +pf; func ad_with_desc +l", NULL), 0);
	before = dynamic_debug_listing();
	cr_assert_not_null(before);

	/* one site of four cannot decorate: the whole write is refused */
	cr_assert_eq(dynamic_debug_write("module " MOD " +pm", &reply), -EOPNOTSUPP);
	cr_assert_eq(count_lines(reply), 1, "one line: %s", reply);
	cr_assert(strstr(reply, "query 1 \"module " MOD " +pm\"") && strstr(reply, "'m'") &&
		  strstr(reply, "1 site ") && strstr(reply, "_dynamic_func_call_no_desc") &&
		  strstr(reply, "]ad_nodesc") && strstr(reply, "nothing was changed"), "%s", reply);
	free(reply);
	after = dynamic_debug_listing();
	cr_assert_str_eq(after, before);
	free(after);

	/* in a later query of the same write: the earlier queries do not stand either */
	cr_assert_eq(dynamic_debug_write("module " MOD " +p; func ad_plain_a +t; format \"ad nodesc\" +d", &reply),
		     -EOPNOTSUPP);
	cr_assert(strstr(reply, "query 3 ") && strstr(reply, "'d'"), "%s", reply);
	free(reply);
	after = dynamic_debug_listing();
	cr_assert_str_eq(after, before);
	free(after);

	/* "=" that adds a decoration is refused too; the API says so as well */
	cr_assert_eq(dynamic_debug_exec_queries("func ad_nodesc =pflst", NULL), -EOPNOTSUPP);
	cr_assert_eq(dynamic_debug_exec_queries("+mflst", MOD), -EOPNOTSUPP);
	after = dynamic_debug_listing();
	cr_assert_str_eq(after, before);
	free(after);
	free(before);

	/* what the site can honour goes through, and the mark stays */
	cr_assert_eq(dynamic_debug_exec_queries("module " MOD " +p", NULL), 4);
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_nodesc "), "p");
	cr_assert_eq(dynamic_debug_exec_queries("=p", MOD), 4);
	cr_assert_eq(dynamic_debug_exec_queries("func ad_nodesc +m", NULL), -EOPNOTSUPP);
	/* decorations on the other sites, the _no_desc one left out by name */
	cr_assert_eq(dynamic_debug_exec_queries("func !ad_nodesc +mf", MOD), 3);
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_plain_a "), "pmf");
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_nodesc "), "p");
	ad_nodesc(7);
	cr_assert_str_eq(own_out, "ad nodesc 7\n");
	/* taking flags away is always allowed */
	cr_assert_eq(dynamic_debug_exec_queries("-mf", MOD), 4);
	reset();
}

Test(dynamic_debug_adopt, nodesc_refusal_per_query_when_not_all_or_nothing)
{
	char *reply = NULL;
	int prev;

	reset();
	prev = kk_dyndbg_set_all_or_nothing(0);
	/* the kernel's mode: each query on its own, the refused one skipped */
	cr_assert_eq(dynamic_debug_write("func ad_plain_a +pm\nfunc ad_nodesc +pm\nfunc ad_plain_b +p", &reply),
		     -EOPNOTSUPP);
	kk_dyndbg_set_all_or_nothing(prev);
	cr_assert(strstr(reply, "nothing was changed"), "%s", reply);
	free(reply);
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_plain_a "), "pm");
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_nodesc "), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("]ad_plain_b "), "p");
	reset();
}

Test(dynamic_debug_adopt, with_desc_function_gets_the_prefix)
{
	char want[256];

	reset();
	cr_assert_eq(dynamic_debug_exec_queries("func ad_with_desc +p", NULL), 1);
	ad_with_desc(1);
	cr_assert_str_eq(own_out, "ad with desc 1\n");	/* no flag: no prefix */
	own_out[0] = '\0';
	cr_assert_eq(dynamic_debug_exec_queries("func ad_with_desc +mfl", NULL), 1);
	ad_with_desc(2);
	snprintf(want, sizeof(want), MOD ":ad_with_desc:%d: ad with desc 2\n", with_desc_line);
	cr_assert_str_eq(own_out, want);
	own_out[0] = '\0';
	/* the same prefix __dynamic_pr_debug() puts on its own lines */
	cr_assert_eq(dynamic_debug_exec_queries("func ad_with_desc =pts", NULL), 1);
	ad_with_desc(3);
	/* (__FILE__ is relative: the build compiles from the source root) */
	snprintf(want, sizeof(want), "[%d] %s: ad with desc 3\n", (int)gettid(), __FILE__);
	cr_assert_str_eq(own_out, want);
	reset();
}

Test(dynamic_debug_adopt, emit_prefix_sizes)
{
	struct _ddebug meta;
	char buf[8], big[KK_DYNDBG_PREFIX_SIZE];
	size_t full;

	/* any descriptor formats, registered or not: the fields are its own */
	memset(&meta, 0, sizeof(meta));
	meta.modname = "mymod";
	meta.function = "myfunc";
	meta.filename = "my.c";
	meta.format = "meta";
	meta.lineno = 42;
	meta.flags = _DPRINTK_FLAGS_PRINT | _DPRINTK_FLAGS_INCL_MODNAME |
		     _DPRINTK_FLAGS_INCL_FUNCNAME | _DPRINTK_FLAGS_INCL_SOURCENAME |
		     _DPRINTK_FLAGS_INCL_LINENO;
	full = kk_dynamic_emit_prefix(&meta, big, sizeof(big));
	cr_assert_str_eq(big, "mymod:myfunc:my.c:42: ");
	cr_assert_eq(full, strlen(big));
	/* truncated like snprintf: the length it needed, a terminated prefix of it */
	cr_assert_eq(kk_dynamic_emit_prefix(&meta, buf, sizeof(buf)), full);
	cr_assert_str_eq(buf, "mymod:m");
	cr_assert_eq(kk_dynamic_emit_prefix(&meta, NULL, 0), full);
	/* no decoration flag (p alone), or no site: "" */
	meta.flags = _DPRINTK_FLAGS_PRINT;
	strcpy(buf, "junk");
	cr_assert_eq(kk_dynamic_emit_prefix(&meta, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	strcpy(buf, "junk");
	cr_assert_eq(kk_dynamic_emit_prefix(NULL, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	cr_assert_eq(dynamic_emit_prefix(&meta, big), big);
	cr_assert_str_eq(big, "");
}
