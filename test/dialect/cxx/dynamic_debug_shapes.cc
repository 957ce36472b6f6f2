/* SPDX-License-Identifier: MIT */
/*
 * pr_debug() in every shape C++ code takes, in ONE translation unit (g++
 * once refused an inline and a static site in one unit: "section type
 * conflict"; template sites were never registered; clang++ 14 refused sites
 * on both sides of an object with a destructor, or in try/catch), plus the header-only
 * library dynamic_debug_lib.h shared with two -fPIC shared objects.  Checks, through
 * dynamic_debug/control and the sink: every site is listed exactly once (one
 * per template instantiation), "+p" prints every one of them wherever the
 * code runs, "func NAME" sees the unqualified name, and "-p" silences them;
 * a third copy of the shared object, dlopen'ed, adds only its own site and
 * dlclose takes only that away; the library's C++17 inline key, defined by
 * every object, is one key; KK_DYNDBG at start-up reaches template sites
 * (a re-exec of this program).  Plus the debugobjects idiom (debugobjects_idiom.cc).
 * Built with g++ and clang++ for C++11 .. C++23 (mk/dialect.mk).
 */
#include <dlfcn.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <string>
#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include "dynamic_debug_lib.h"

extern "C" int dynamic_debug_lib_so_a(int x);
extern "C" int dynamic_debug_lib_so_b(int x);
int debugobjects_idiom_check(void);	/* debugobjects_idiom.cc */

/* ---- the shapes -------------------------------------------------------------------- */

static int f_static(int x)
{
	pr_debug("S:static %d\n", x);
	return x;
}

inline int f_inline(int x)
{
	pr_debug("S:inline %d\n", x);
	return x;
}

template <class T> T twice(T x)
{
	pr_debug("S:template %d\n", (int)x);
	return 2 * x;
}

template <class T> struct holder {
	T v;
	T fetch() const
	{
		pr_debug("S:classtmpl %d\n", (int)v);
		return v;
	}
};

/* Issue 40 item 4: Ring<int>::push and Ring<std::string>::push, told apart. */
template <class T> struct ring {
	unsigned n;
	void push(const T &v)
	{
		pr_debug("S:ring %u\n", (unsigned)sizeof(v));
		n++;
	}
};

struct widget {
	int n;
	int poke()	/* defined in the class: implicitly inline */
	{
		pr_debug("S:member %d\n", n);
		return n;
	}
};

namespace {
int f_anon(int x)
{
	pr_debug("S:anon %d\n", x);
	return x;
}
}	/* namespace */

namespace named {
int f_named(int x)
{
	pr_debug("S:named %d\n", x);
	return x;
}
}	/* namespace named */

/*
 * Sites on both sides of an object with a destructor, and in a try block
 * and its handler: what most C++ functions look like.  clang++ before 17
 * checked every asm goto of a function against every asm-goto label of it,
 * and refused the function ("cannot jump from this asm goto statement to one
 * of its possible targets") when a label sat in a scope the other asm goto
 * was outside of.
 */
struct counted {
	int *n;
	~counted() { ++*n; }
};

static int f_scopes(int x)
{
	int n = 0;

	pr_debug("S:scope before %d\n", x);
	{
		counted c = { &n };
		pr_debug("S:scope raii %d\n", *c.n);
	}
	try {
		pr_debug("S:scope try %d\n", x);
		if (x > 0)
			throw x;
	} catch (int e) {
		pr_debug("S:scope catch %d\n", e);
		n += e;
	}
	switch (x % 2) {	/* a switch made clang check the function's lambdas too */
	case 1: {
		counted c = { &n };
		pr_debug("S:scope case %d\n", *c.n);
		break;
	}
	default:
		pr_debug("S:scope default %d\n", x);
	}
	return n - 1;
}

static int run_shapes(int x)
{
	holder<int> hi = { x };
	holder<char> hc = { 'c' };
	widget w = { x };
	ring<int> ri = { 0 };
	ring<std::string> rs = { 0 };
	int (*lam)(int) = [](int y) {
		pr_debug("S:lambda %d\n", y);
		return y;
	};

	ri.push(x);
	rs.push(std::string("s"));
	return f_static(x) + f_inline(x) + twice(x) + (int)twice(2L) + hi.fetch() + hc.fetch() +
	       w.poke() + f_anon(x) + named::f_named(x) + lam(x) + dynamic_debug_lib::hdr_all(x) +
	       (int)dynamic_debug_lib::hdr_twice(1.5) + f_scopes(x);
}

static int run_all(int x)
{
	return run_shapes(x) + dynamic_debug_lib_so_a(x) + dynamic_debug_lib_so_b(x);
}

/* ---- what we expect ---------------------------------------------------------------- */

struct expect {
	const char *token;	/* in the site's format */
	int sites;		/* lines of the listing */
	int prints;		/* messages of one run_all() */
};

static const struct expect expects[] = {
	{ "S:static", 1, 1 },
	{ "S:inline", 1, 1 },
	{ "S:template", 2, 2 },		/* twice<int>, twice<long> */
	{ "S:classtmpl", 2, 2 },	/* holder<int>, holder<char> */
	{ "S:member", 1, 1 },
	{ "S:ring", 2, 2 },		/* ring<int>, ring<std::string> */
	{ "S:anon", 1, 1 },
	{ "S:named", 1, 1 },
	{ "S:lambda", 1, 1 },
	{ "S:scope", 6, 5 },		/* around a destructor, in try, catch, switch */
	/* the header-only library: one copy per process, run from 3 objects */
	{ "dynamic_debug_lib:inline", 1, 3 },
	{ "dynamic_debug_lib:twice", 2, 4 },	/* <int> from 3 objects, <double> from 1 */
	{ "dynamic_debug_lib:box", 1, 3 },
	{ "so:own", 2, 2 },		/* static: one per shared object */
};
#define NEXPECT (sizeof(expects) / sizeof(expects[0]))

static char out[16384];
static size_t out_len;

static void sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)arg;
	if (out_len + len < sizeof(out)) {
		memcpy(out + out_len, msg, len);
		out_len += len;
		out[out_len] = 0;
	}
}

static int count(const char *text, const char *token)
{
	int n = 0;

	for (const char *p = text; (p = strstr(p, token)) != NULL; p += strlen(token))
		n++;
	return n;
}

static int fail(const char *what, const char *token, int got, int want)
{
	fprintf(stderr, "dynamic_debug_shapes: %s of \"%s\": %d, expected %d\n", what, token, got, want);
	return 1;
}

/* Every site listed exactly once (per instantiation). */
static int check_listing(void)
{
	char *text = NULL;
	size_t len = 0;
	int bad = 0;

	if (kk_control_read("dynamic_debug/control", &text, &len)) {
		fprintf(stderr, "dynamic_debug_shapes: cannot read dynamic_debug/control\n");
		return 1;
	}
	for (size_t i = 0; i < NEXPECT; i++) {
		int n = count(text, expects[i].token);

		if (n != expects[i].sites)
			bad |= fail("listed sites", expects[i].token, n, expects[i].sites);
	}
	if (bad)
		fprintf(stderr, "%s", text);
	free(text);
	return bad;
}

/* One run_all() prints each site's expected number of messages (0 when off). */
static int check_prints(int on)
{
	int bad = 0;

	out_len = 0;
	out[0] = 0;
	run_all(3);
	for (size_t i = 0; i < NEXPECT; i++) {
		int n = count(out, expects[i].token);

		if (n != (on ? expects[i].prints : 0))
			bad |= fail(on ? "messages (+p)" : "messages (-p)", expects[i].token, n,
				    on ? expects[i].prints : 0);
	}
	return bad;
}

static int check_query(const char *q, int want)
{
	int n = dynamic_debug_exec_queries(q, NULL);

	if (n != want)
		return fail("matched sites of query", q, n, want);
	return 0;
}

/* The listing line of the site whose format has @token and whose C++ name is @name. */
static int listing_line(const char *token, const char *name, char *line, size_t size)
{
	char *text = NULL, want[128];
	size_t len = 0;
	int found = 0;

	if (kk_control_read("dynamic_debug/control", &text, &len))
		return 0;
	snprintf(want, sizeof(want), " func:\"%s\"", name);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n"))
		if (strstr(l, token) && strstr(l, want) && !found++)
			snprintf(line, size, "%s", l);
	free(text);
	if (found != 1)
		fprintf(stderr, "dynamic_debug_shapes: %d listing lines with %s and%s\n", found, token, want);
	return found == 1;
}

/*
 * Issue 40 item 4: each instantiation is listed with its name (func:"..."),
 * a func query on that name selects it alone, and its listing line written
 * back matches it alone.  func NAME still selects all of them.
 */
static int check_instantiations(void)
{
	static const struct { const char *query; int sites; } q[] = {
		{ "func 'twice<int>'", 1 },
		{ "func 'twice<long*>'", 1 },
		{ "func 'twice<*>'", 2 },
		{ "func 'holder<char>::fetch'", 1 },
		{ "func 'ring<int>::push'", 1 },
		{ "func 'ring<std::*>::push'", 1 },
		{ "func ring*", 2 },
		{ "func !ring<int>::push format S:ring", 1 },
		{ "func push", 2 },
		{ "func 'named::f_named'", 1 },
		{ "func 'widget::poke'", 1 },
		{ "func 'run_shapes(int)::*'", 1 },	/* the lambda */
		{ "func 'dynamic_debug_lib::hdr_twice<int>'", 1 },
		{ "func 'dynamic_debug_lib::hdr_twice<double>'", 1 },
		{ "func 'dynamic_debug_lib::box<int>::get'", 1 },
	};
	char line[512], *eq;
	int bad = 0;

	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		char text[160];

		snprintf(text, sizeof(text), "%s +p", q[i].query);
		bad |= check_query(text, q[i].sites);
		snprintf(text, sizeof(text), "%s -p", q[i].query);
		bad |= check_query(text, q[i].sites);
	}
	/* only ring<int>'s message */
	bad |= check_query("func 'ring<int>::push' +p", 1);
	out_len = 0;
	out[0] = 0;
	run_shapes(3);
	if (count(out, "S:ring 4") != 1 || count(out, "S:ring") != 1)
		bad |= fail("messages of ring<int> alone", "S:ring", count(out, "S:ring"), 1);
	bad |= check_query("-p", (int)kk_dyndbg_count_sites(NULL));
	/* a listing line written back is its one instantiation */
	if (!listing_line("S:template", "twice<int>", line, sizeof(line)) || !(eq = strstr(line, " =_ ")))
		return 1;
	eq[2] = 'p';
	bad |= check_query(line, 1);
	bad |= check_query("-p", (int)kk_dyndbg_count_sites(NULL));
	return bad;
}

/* dlopen a third copy: the library's sites are not listed again. */
static int check_dlopen(void)
{
	void *h = dlopen(DYNAMIC_DEBUG_LIB_C_PATH, RTLD_NOW | RTLD_LOCAL);
	int (*fn)(int);
	int bad = 0;

	if (!h) {
		fprintf(stderr, "dynamic_debug_shapes: dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&fn = dlsym(h, "dynamic_debug_lib_so_c");
	if (!fn)
		bad |= fail("dlsym", "dynamic_debug_lib_so_c", 0, 1);
	bad |= check_query("format so:own -t", 3);
	bad |= check_query("format dynamic_debug_lib:inline -t", 1);
	bad |= check_query("format dynamic_debug_lib:box -t", 1);
	bad |= check_query("format dynamic_debug_lib: +p", 4);
	out_len = 0;
	out[0] = 0;
	if (fn)
		fn(5);
	dynamic_debug_lib::hdr_all(6);
	if (count(out, "dynamic_debug_lib:inline 5") != 1 || count(out, "dynamic_debug_lib:box 6") != 1)
		bad |= fail("messages of the dlopen'ed copy", out, 0, 1);
	bad |= check_query("format dynamic_debug_lib: -p", 4);
	dlclose(h);
	bad |= check_query("format so:own -t", 2);
	bad |= check_query("format dynamic_debug_lib:inline -t", 1);
	return bad;
}

/*
 * KK_DYNDBG='format S:template +p' at start-up: the child prints the
 * template's messages before any query.  Inherit is off so the child starts
 * from the variable alone.
 */
static int run_child(void)
{
	out_len = 0;
	out[0] = 0;
	twice(7);
	twice(8L);
	f_static(9);
	return count(out, "S:template 7") == 1 && count(out, "S:template 8") == 1 &&
	       count(out, "S:static") == 0 ? 0 : 1;
}

static int check_startup_env(void)
{
	char *argv[] = { (char *)"dynamic_debug_shapes", (char *)"child", NULL };
	char *envp[] = { (char *)"KK_DYNDBG=format S:template +p", NULL };
	pid_t pid;
	int st = 0;

	kk_dyndbg_set_inherit(0);
	if (posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp) ||
	    waitpid(pid, &st, 0) != pid)
		return fail("spawning the KK_DYNDBG child", "", 0, 1);
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return fail("KK_DYNDBG at start-up: child status", "format S:template +p", st, 0);
	return 0;
}

/* C++17: the header's inline key, flipped here, flips the copies of all three objects. */
static int check_inline_key(void)
{
#if __cplusplus >= 201703L
	int off = run_all(1), on;

	if (static_branch_enable(&dynamic_debug_lib::hdr_key))
		return fail("static_branch_enable", "hdr_key", 1, 0);
	on = run_all(1);
	static_branch_disable(&dynamic_debug_lib::hdr_key);
	if (on - off != 3000)
		return fail("objects that saw the inline key on", "hdr_key", (on - off) / 1000, 3);
	if (run_all(1) != off)
		return fail("objects that still see the inline key on", "hdr_key", (run_all(1) - off) / 1000, 0);
#endif
	return 0;
}

int main(int argc, char **argv)
{
	int bad = 0;

	kk_dyndbg_set_sink(sink, NULL);
	if (argc > 1 && !strcmp(argv[1], "child"))
		return run_child();
	bad |= check_listing();
	bad |= check_prints(0);
	bad |= check_query("+p", (int)kk_dyndbg_count_sites(NULL));
	bad |= check_prints(1);
	bad |= check_query("-p", (int)kk_dyndbg_count_sites(NULL));
	bad |= check_prints(0);
	/* func: the unqualified name, every instantiation; a lambda is operator() */
	bad |= check_query("func twice +p", 2);
	bad |= check_query("func fetch +p", 2);
	bad |= check_query("func poke +p", 1);
	bad |= check_query("func f_named +p", 1);
	bad |= check_query("func operator() +p", 1);
	bad |= check_query("func hdr_twice +p", 2);
	bad |= check_query("-p", (int)kk_dyndbg_count_sites(NULL));
	bad |= check_instantiations();
	/* the library's inline site, switched once, prints from all three objects */
	bad |= check_query("format dynamic_debug_lib:inline +p", 1);
	out_len = 0;
	run_all(4);
	if (count(out, "dynamic_debug_lib:inline 4") != 3)
		bad |= fail("messages after one query", "dynamic_debug_lib:inline 4", count(out, "dynamic_debug_lib:inline 4"), 3);
	bad |= check_query("format dynamic_debug_lib:inline -p", 1);
	bad |= check_inline_key();
	bad |= check_dlopen();
	bad |= check_startup_env();
	if (debugobjects_idiom_check()) {
		fprintf(stderr, "dynamic_debug_shapes: the debugobjects idiom of debugobjects_idiom.cc failed\n");
		bad = 1;
	}
	printf("dynamic_debug_shapes C++ %ld: %s\n", (long)__cplusplus, bad ? "FAILED" : "ok");
	return bad;
}
