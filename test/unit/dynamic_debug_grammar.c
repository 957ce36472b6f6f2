// SPDX-License-Identifier: MIT
/*
 * The query language, accepted and rejected input, with the kernel's error
 * messages; per-query counts; all-or-nothing writes; the seed's negation.
 * The sites are this program's own (module dynamic_debug_grammar).
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug_util.h"

__attribute__((noinline)) void alpha(int v)
{
	pr_debug("alpha one %d\n", v);
	pr_debug("alpha two\n");
}

__attribute__((noinline)) void beta(int v)
{
	pr_debug("beta \"quoted\"\ttab %d\n", v);
}

__attribute__((noinline)) void gamma_fn(int v)
{
	pr_debug("middle alpha %d\n", v);
}

__attribute__((noinline)) void delta(int v)
{
	pr_debug("!bang %d\n", v);
}

/* The line of the site whose listing line contains @needle. */
static unsigned line_of(const char *needle)
{
	char *l = dynamic_debug_listing(), *p;
	unsigned line = 0;

	for (p = strtok(l, "\n"); p; p = strtok(NULL, "\n")) {
		char *c;

		if (p[0] == '#' || !strstr(p, needle))
			continue;
		c = strchr(p, ' ');
		*c = '\0';
		line = (unsigned)atoi(strrchr(p, ':') + 1);
		break;
	}
	free(l);
	return line;
}

/* Apply @q (must succeed) and return query 1's match count. */
static long matched(const char *q)
{
	char *r;
	long m = -1, c = -1;
	int ret = dynamic_debug_write(q, &r);

	cr_assert_eq(ret, 0, "'%s' failed: %d: %s", q, ret, r);
	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0, "no counts in: %s", r);
	free(r);
	return m;
}

/* @q must fail with -EINVAL and a reply containing @msg; nothing changes. */
static void rejected(const char *q, const char *msg)
{
	char *before = dynamic_debug_listing(), *after, *r;
	int ret = dynamic_debug_write(q, &r);

	cr_assert_eq(ret, -EINVAL, "'%s' returned %d: %s", q, ret, r);
	cr_assert(strstr(r, msg), "'%s': expected \"%s\" in: %s", q, msg, r);
	cr_assert(strstr(r, "nothing was changed"), "reply: %s", r);
	after = dynamic_debug_listing();
	cr_assert_str_eq(before, after, "'%s' changed something", q);
	free(before);
	free(after);
	free(r);
}

static void reset(void)
{
	cr_assert_eq(dynamic_debug_write("=_", NULL), 0);
}

#define MOD "module dynamic_debug_grammar "

Test(dynamic_debug_grammar, flags_ops_and_listing_order)
{
	reset();
	cr_assert_eq(matched(MOD "func alpha +pflmt"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "pmflt");
	cr_assert_eq(matched(MOD "func alpha -fm"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "plt");
	cr_assert_eq(matched(MOD "func alpha =s"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "s");
	cr_assert_eq(matched(MOD "func alpha +_"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "s");
	cr_assert_eq(matched(MOD "func alpha ="), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "_");
	cr_assert_eq(matched(MOD "func alpha =pmfsltd"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "pmfsltd");
	cr_assert_eq(matched(MOD "func alpha =_"), 2);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "_");
}

Test(dynamic_debug_grammar, no_keywords_select_every_site)
{
	reset();
	cr_assert_geq(matched("+p"), 5);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha two"), "p");
	cr_assert_str_eq(dynamic_debug_flags_of("!bang"), "p");
}

Test(dynamic_debug_grammar, func_globs)
{
	reset();
	cr_assert_eq(matched(MOD "func alpha +p"), 2);
	cr_assert_eq(matched(MOD "func al* +p"), 2);
	cr_assert_eq(matched(MOD "func ?lpha +p"), 2);
	cr_assert_eq(matched(MOD "func *a +p"), 4);	/* alpha beta delta */
	cr_assert_eq(matched(MOD "func a?pha* +p"), 2);
	cr_assert_eq(matched(MOD "func nosuch +p"), 0);
	cr_assert_eq(matched(MOD "func * +p"), 5);
}

Test(dynamic_debug_grammar, module_globs)
{
	reset();
	cr_assert_eq(matched("module dynamic_debug_grammar func beta +p"), 1);
	cr_assert_eq(matched("module dynamic_debug_gr* func beta +p"), 1);
	cr_assert_eq(matched("module dynamic_debug_grammar? func beta +p"), 0);
	cr_assert_eq(matched("module other func beta +p"), 0);
}

Test(dynamic_debug_grammar, file_full_base_relative_and_shorthands)
{
	unsigned l1 = line_of("alpha one"), l2 = line_of("alpha two");
	char q[256];

	cr_assert(l1 && l2 == l1 + 1);
	reset();
	cr_assert_eq(matched(MOD "file dynamic_debug_grammar.c func beta +p"), 1);	/* basename */
	cr_assert_eq(matched(MOD "file test/unit/dynamic_debug_grammar.c func beta +p"), 1);
	cr_assert_eq(matched(MOD "file */unit/dynamic_debug_gram*.c func beta +p"), 1);
	cr_assert_eq(matched(MOD "file unit/dynamic_debug_grammar.c func beta +p"), 0);
	cr_assert_eq(matched(MOD "file dynamic_debug_grammar.c:alpha +p"), 2);
	cr_assert_eq(matched(MOD "file dynamic_debug_grammar.c:al* +p"), 2);
	snprintf(q, sizeof(q), MOD "file dynamic_debug_grammar.c:%u-%u +p", l1, l1);
	cr_assert_eq(matched(q), 1);
	snprintf(q, sizeof(q), MOD "file dynamic_debug_grammar.c:%u +p", l2);
	cr_assert_eq(matched(q), 1);
	/* the shorthand and a func keyword: "func" twice */
	rejected(MOD "file dynamic_debug_grammar.c:alpha func beta +p",
		 "match-spec:func val:alpha overridden by beta");
}

Test(dynamic_debug_grammar, line_ranges)
{
	unsigned l1 = line_of("alpha one"), lb = line_of("beta");
	char q[256];

	cr_assert(l1 && lb > l1);
	reset();
	snprintf(q, sizeof(q), MOD "line %u +p", l1);
	cr_assert_eq(matched(q), 1);
	snprintf(q, sizeof(q), MOD "line %u-%u +p", l1, lb);
	cr_assert_eq(matched(q), 3);
	snprintf(q, sizeof(q), MOD "line -%u +p", lb);
	cr_assert_eq(matched(q), 3);
	snprintf(q, sizeof(q), MOD "line %u- +p", lb);
	cr_assert_eq(matched(q), 3);	/* beta, gamma_fn, delta */
	snprintf(q, sizeof(q), MOD "line +%u +p", l1);
	cr_assert_eq(matched(q), 1);
	cr_assert_eq(matched(MOD "line 0 +p"), 5);	/* 0: don't care */
	cr_assert_eq(matched(MOD "line - +p"), 5);
}

Test(dynamic_debug_grammar, format_substring_anchor_quotes_escapes)
{
	reset();
	cr_assert_eq(matched(MOD "format alpha +p"), 3);	/* substring */
	cr_assert_eq(matched(MOD "format ^alpha +p"), 2);	/* anchored */
	cr_assert_eq(matched(MOD "format \"alpha two\" +p"), 1);
	cr_assert_eq(matched(MOD "format 'alpha two' +p"), 1);
	cr_assert_eq(matched(MOD "format \\\"quoted\\\"\\ttab +p"), 1);	/* \" and \t */
	cr_assert_eq(matched(MOD "format \\042quoted\\042 +p"), 1);	/* octal */
	cr_assert_eq(matched(MOD "format 'tab %d\\n' +p"), 1);		/* \n */
	cr_assert_eq(matched(MOD "format \\041bang +p"), 1);		/* a literal ! */
	cr_assert_eq(matched(MOD "format ^nothing +p"), 0);
}

Test(dynamic_debug_grammar, negation)
{
	reset();
	cr_assert_eq(matched(MOD "func !alpha +p"), 3);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("beta"), "p");
	reset();
	cr_assert_eq(matched(MOD "format !alpha +p"), 2);		/* beta, delta */
	cr_assert_eq(matched(MOD "format !^alpha +p"), 3);
	cr_assert_eq(matched(MOD "file !dynamic_debug_grammar.c +p"), 0);
	cr_assert_eq(matched(MOD "file !nosuch.c +p"), 5);
	cr_assert_eq(matched("module !dynamic_debug_grammar func alpha +p"), 0);
	cr_assert_eq(matched("module !dynamic_debug_gram* +p"), 0);
	cr_assert_eq(matched("module !virtio* func alpha +p"), 2);
	/* negation combines with the other terms (AND) */
	cr_assert_eq(matched(MOD "func !alpha format tab +p"), 1);
	cr_assert_eq(matched(MOD "file !nosuch.c:alpha +p"), 2);	/* only the file negated */
}

Test(dynamic_debug_grammar, separators_and_comments)
{
	char *r;
	long m, c;

	reset();
	cr_assert_eq(dynamic_debug_write(MOD "func alpha +p;" MOD "func beta +p\n" MOD "func delta +p", &r), 0);
	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0);
	cr_assert_eq(m, 2);
	cr_assert_eq(dynamic_debug_counts(r, 2, &m, &c), 0);
	cr_assert_eq(m, 1);
	cr_assert_eq(dynamic_debug_counts(r, 3, &m, &c), 0);
	cr_assert_eq(m, 1);
	free(r);
	reset();
	cr_assert_eq(dynamic_debug_write("# a comment\n  # another\n\n ; ;" MOD "func beta +p # trailing", &r), 0);
	cr_assert(strstr(r, "total: queries 1 "), "%s", r);
	cr_assert_str_eq(dynamic_debug_flags_of("beta"), "p");
	free(r);
	/* '#' only starts a comment at the start of a word */
	cr_assert_eq(matched(MOD "format a#b +p"), 0);
	cr_assert_eq(dynamic_debug_write("", &r), 0);
	cr_assert(strstr(r, "total: queries 0 "), "%s", r);
	free(r);
}

Test(dynamic_debug_grammar, word_limit)
{
	reset();
	/* 4 pairs + flags = 9 words: accepted */
	cr_assert_eq(matched(MOD "func alpha file dynamic_debug_grammar.c format one +p"), 1);
	rejected(MOD "func alpha file dynamic_debug_grammar.c format one line 0 +p",
		 "too many words, legal max <=9");
}

Test(dynamic_debug_grammar, kernel_error_messages)
{
	reset();
	rejected("+x", "unknown flag 'x'");
	rejected("+x", "flags parse failed");
	rejected("p", "bad flag-op p, at start of p");
	rejected("func +p", "expecting pairs of match-spec <value>");
	rejected("foo bar +p", "unknown keyword \"foo\"");
	rejected("foo bar +p", "query parse failed");
	rejected("func a func b +p", "match-spec:func val:a overridden by b");
	rejected("module a module b +p", "match-spec:module val:a overridden by b");
	rejected("file a file b +p", "match-spec:file val:a overridden by b");
	rejected("format a format b +p", "match-spec:format val:a overridden by b");
	rejected("class A class B +p", "match-spec:class val:A overridden by B");
	rejected("line 1 line 2 +p", "match-spec: line used 2x");
	rejected("line 5-3 +p", "last-line:3 < 1st-line:5");
	rejected("line x +p", "bad line-number: x");
	rejected("line 1-y +p", "bad line-number: y");
	rejected("line 99999999999 +p", "bad line-number: 99999999999");
	rejected("file f.c:12x +p", "bad line-number: 12x");
	rejected("format \"abc +p", "unclosed quote: abc +p");
	rejected("format 'abc +p", "unclosed quote: abc +p");
	/* the flags word is parsed first: its error hides a keyword error */
	rejected("foo bar +z", "unknown flag 'z'");
	char *r;

	dynamic_debug_write("foo bar +z", &r);
	cr_assert_null(strstr(r, "unknown keyword"), "%s", r);
	free(r);
}

Test(dynamic_debug_grammar, all_or_nothing)
{
	reset();
	rejected(MOD "func alpha +p; " MOD "func beta +p; bogus x +p", "unknown keyword \"bogus\"");
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("beta"), "_");
	char *r;

	dynamic_debug_write(MOD "func alpha +p\n" MOD "func beta +p\n" MOD "func beta +q", &r);
	cr_assert(strstr(r, "query 3 is malformed: nothing was changed"), "%s", r);
	free(r);
}

Test(dynamic_debug_grammar, per_query_counts_are_sequential)
{
	char *r;
	long m, c;

	reset();
	cr_assert_eq(dynamic_debug_write(MOD "func alpha +p;" MOD "func alpha +p;" MOD "func * +p;" MOD "-p", &r), 0);
	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0);
	cr_assert(m == 2 && c == 2, "%s", r);
	cr_assert_eq(dynamic_debug_counts(r, 2, &m, &c), 0);
	cr_assert(m == 2 && c == 0, "%s", r);
	cr_assert_eq(dynamic_debug_counts(r, 3, &m, &c), 0);
	cr_assert(m == 5 && c == 3, "%s", r);
	cr_assert_eq(dynamic_debug_counts(r, 4, &m, &c), 0);
	cr_assert(m == 5 && c == 5, "%s", r);
	/* the net effect: nothing flipped */
	cr_assert(strstr(r, "flipped 0 "), "%s", r);
	free(r);
}

Test(dynamic_debug_grammar, unknown_class_matches_nothing)
{
	reset();
	cr_assert_eq(matched(MOD "class NOSUCH +p"), 0);
	cr_assert_str_eq(dynamic_debug_flags_of("alpha one"), "_");
}

Test(dynamic_debug_grammar, api_exec_queries)
{
	reset();
	cr_assert_eq(dynamic_debug_exec_queries("func alpha +p", "dynamic_debug_grammar"), 2);
	cr_assert_eq(dynamic_debug_exec_queries("func alpha +p", "othermod"), 0);
	cr_assert_eq(dynamic_debug_exec_queries("func alpha +p; nonsense", NULL), -EINVAL);
	/* an explicit module overrides the default one */
	cr_assert_eq(dynamic_debug_exec_queries("module dynamic_debug_grammar func beta +p", "othermod"), 1);
	/* the API has no 4096-byte limit (only the control file has) */
	char *big = malloc(8192);

	memset(big, ' ', 8191);
	memcpy(big + 8000, "func beta -p", 12);
	big[8191] = '\0';
	cr_assert_eq(dynamic_debug_exec_queries(big, "dynamic_debug_grammar"), 1);
	free(big);
	cr_assert_str_eq(dynamic_debug_flags_of("beta"), "_");
}

/* The listing line of the site whose line contains @needle (malloc'ed). */
static char *listing_line_of(const char *needle)
{
	char *l = dynamic_debug_listing(), *p, *line = NULL;

	for (p = strtok(l, "\n"); p && !line; p = strtok(NULL, "\n"))
		if (p[0] != '#' && strstr(p, needle))
			line = strdup(p);
	free(l);
	cr_assert(line, "no listing line with %s", needle);
	return line;
}

/*
 * Issue 40 item 4: a C++ site's listing line ends in func:"<qualified name>"
 * (test/dialect/cxx); a C site has none, so a line that names one matches no
 * C site, and a broken func: term is a malformed line.
 */
Test(dynamic_debug_grammar, listing_line_func_term)
{
	char *line = listing_line_of("beta"), *all = dynamic_debug_listing(), q[512];

	reset();
	cr_assert_null(strstr(all, " func:\""), "a C site has a C++ name: %s", all);
	free(all);
	cr_assert_eq(matched(line), 1, "%s", line);
	snprintf(q, sizeof(q), "%s func:\"beta\"", line);
	cr_assert_eq(matched(q), 0, "%s", q);
	snprintf(q, sizeof(q), "%s func:\"beta", line);
	rejected(q, "malformed control line");
	snprintf(q, sizeof(q), "%s func:\"\"", line);
	rejected(q, "malformed control line");
	free(line);
}
