// SPDX-License-Identifier: MIT
/*
 * Settings from the environment (src/common/env.c): the one boolean grammar,
 * kk_env_bool() and kk_env_ulong() defaults, range checks and their one-line
 * warnings on stderr, and kk_getenv() name matching.  (That a set-user-ID
 * program gets no KK_* value is test/scripts/setuid_env.sh.)
 *
 * These are internal functions: libkernelkit.so exports them, and the test
 * includes src/common/internal.h (the build passes -Isrc).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/internal.h"

/* ---- capturing stderr -------------------------------------------------------------- */

static int cap_pipe[2] = { -1, -1 }, saved_err = -1;

static void cap_begin(void)
{
	cr_assert_eq(pipe(cap_pipe), 0);
	saved_err = dup(2);
	cr_assert_geq(saved_err, 0);
	dup2(cap_pipe[1], 2);
	close(cap_pipe[1]);
}

/* What was written to stderr since cap_begin() (static buffer). */
static const char *cap_end(void)
{
	static char buf[4096];
	ssize_t n, got = 0;

	dup2(saved_err, 2);
	close(saved_err);
	while ((n = read(cap_pipe[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	close(cap_pipe[0]);
	buf[got] = '\0';
	return buf;
}

static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* ---- kk_parse_bool ------------------------------------------------------------------- */

Test(common_env, parse_bool_accepts_every_spelling_in_any_case)
{
	static const char *const yes[] = { "1", "y", "Y", "yes", "YES", "Yes", "on", "ON", "On",
					   "true", "TRUE", "True", "tRuE" };
	static const char *const no[] = { "0", "n", "N", "no", "NO", "No", "off", "OFF", "Off",
					  "false", "FALSE", "False", "fAlSe" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		bool b = false;

		cr_assert_eq(kk_parse_bool(yes[i], &b), 0, "%s", yes[i]);
		cr_assert(b, "%s", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		bool b = true;

		cr_assert_eq(kk_parse_bool(no[i], &b), 0, "%s", no[i]);
		cr_assert(!b, "%s", no[i]);
	}
}

Test(common_env, parse_bool_rejects_everything_else_and_leaves_the_output)
{
	static const char *const bad[] = { "2", "", "yes please", " yes", "yes ", "10", "-1",
					   "01", "enable", "nope", "t", "f", "ye", "o", "maybe" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool b = true;

		cr_assert_eq(kk_parse_bool(bad[i], &b), -EINVAL, "\"%s\"", bad[i]);
		cr_assert(b, "\"%s\" changed the output", bad[i]);
		b = false;
		kk_parse_bool(bad[i], &b);
		cr_assert(!b, "\"%s\" changed the output", bad[i]);
	}
	cr_assert_eq(kk_parse_bool(NULL, &(bool){ false }), -EINVAL);
}

/* ---- kk_env_bool ------------------------------------------------------------------------- */

Test(common_env, env_bool_unset_gives_the_default_quietly)
{
	const char *err;

	unsetenv("KK_TEST_BOOL");
	cap_begin();
	cr_assert(kk_env_bool("KK_TEST_BOOL", true));
	cr_assert(!kk_env_bool("KK_TEST_BOOL", false));
	err = cap_end();
	cr_assert_str_empty(err);
}

Test(common_env, env_bool_reads_the_grammar_quietly)
{
	const char *err;

	cap_begin();
	setenv("KK_TEST_BOOL", "On", 1);
	cr_assert(kk_env_bool("KK_TEST_BOOL", false));
	setenv("KK_TEST_BOOL", "no", 1);
	cr_assert(!kk_env_bool("KK_TEST_BOOL", true));
	setenv("KK_TEST_BOOL", "TRUE", 1);
	cr_assert(kk_env_bool("KK_TEST_BOOL", false));
	err = cap_end();
	cr_assert_str_empty(err);
}

Test(common_env, env_bool_unknown_value_warns_one_line_and_keeps_the_default)
{
	static const char *const bad[] = { "maybe", "2", "", "yes please" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];
		const char *err;
		bool t, f;

		setenv("KK_TEST_BOOL", bad[i], 1);
		cap_begin();
		t = kk_env_bool("KK_TEST_BOOL", true);
		f = kk_env_bool("KK_TEST_BOOL", false);
		err = cap_end();
		cr_assert(t && !f, "\"%s\": the default is kept", bad[i]);
		/* one line per call */
		cr_assert_eq(count_lines(err), 2, "\"%s\": %s", bad[i], err);
		snprintf(want, sizeof(want), "kernelkit: ignoring KK_TEST_BOOL=%s: ", bad[i]);
		cr_assert(!strncmp(err, want, strlen(want)), "\"%s\": %s", bad[i], err);
	}
}

Test(common_env, getenv_matches_the_whole_name)
{
	unsetenv("KK_TEST_X");
	setenv("KK_TEST_XY", "1", 1);
	setenv("KK_TEST_", "2", 1);
	cr_assert_null(kk_getenv("KK_TEST_X"));
	setenv("KK_TEST_X", "v=w", 1);
	cr_assert_str_eq(kk_getenv("KK_TEST_X"), "v=w");
	cr_assert_str_eq(kk_getenv("KK_TEST_XY"), "1");
	setenv("KK_TEST_X", "", 1);
	cr_assert_str_eq(kk_getenv("KK_TEST_X"), "", "set but empty is not unset");
}

/* ---- kk_env_ulong ---------------------------------------------------------------------------- */

static unsigned long ulong_of(const char *v, unsigned long def, unsigned long lo,
			      unsigned long hi, const char **err)
{
	unsigned long x;

	if (v)
		setenv("KK_TEST_NUM", v, 1);
	else
		unsetenv("KK_TEST_NUM");
	cap_begin();
	x = kk_env_ulong("KK_TEST_NUM", def, lo, hi);
	*err = cap_end();
	return x;
}

Test(common_env, env_ulong_accepts_numbers_in_range)
{
	const char *err;

	cr_assert_eq(ulong_of(NULL, 5, 1, 10, &err), 5);
	cr_assert_str_empty(err);
	cr_assert_eq(ulong_of("7", 5, 1, 10, &err), 7);
	cr_assert_str_empty(err);
	cr_assert_eq(ulong_of("1", 5, 1, 10, &err), 1, "the low end is in range");
	cr_assert_eq(ulong_of("10", 5, 1, 10, &err), 10, "the high end is in range");
	cr_assert_eq(ulong_of("0x10", 5, 0, 100, &err), 16);
	cr_assert_str_empty(err);
	cr_assert_eq(ulong_of("18446744073709551615", 5, 0, ULONG_MAX, &err), ULONG_MAX);
	cr_assert_str_empty(err);
}

Test(common_env, env_ulong_rejects_with_one_line_and_keeps_the_default)
{
	static const char *const bad[] = { "0", "11", "-1", "", "12abc", "abc", " 7",
					   "+7", " -1", "99999999999999999999999" };

	const char *err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char want[128];

		cr_assert_eq(ulong_of(bad[i], 5, 1, 10, &err), 5, "\"%s\"", bad[i]);
		cr_assert_eq(count_lines(err), 1, "\"%s\": %s", bad[i], err);
		snprintf(want, sizeof(want), "kernelkit: ignoring KK_TEST_NUM=%s: ", bad[i]);
		cr_assert(!strncmp(err, want, strlen(want)), "\"%s\": %s", bad[i], err);
		cr_assert(strstr(err, "1..10"), "the range is named: %s", err);
	}
	/* strtoul() reads " -1" as ULONG_MAX: not a number of ours either */
	cr_assert_eq(ulong_of(" -1", 5, 0, ULONG_MAX, &err), 5);
	cr_assert_eq(ulong_of("-0", 5, 0, ULONG_MAX, &err), 5);
}
