// SPDX-License-Identifier: MIT
/*
 * kkctl: the bounds of one target (--timeout, --max-reply, --jobs), from the
 * options or the environment.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kkctl.h"

struct kkctl_bounds kkctl_bounds = { 10, 64 << 20, 8 };

/* The parsers: each sets its bound from @s, or returns -1 if @s is not a
 * valid value. */
static int parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v > 0 && v <= 86400))	/* NaN too */
		return -1;
	kkctl_bounds.timeout_s = v;
	return 0;
}

static int parse_jobs(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < 1 || v > 64)
		return -1;
	kkctl_bounds.jobs = (unsigned)v;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned shift;
} size_units[] = {
	{ "", 0 }, { "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 }, { "G", 30 }, { "GiB", 30 },
};

/* At most 1 GiB: a larger reply is not one anybody reads from a terminal. */
static int parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; !errno && i < sizeof(size_units) / sizeof(size_units[0]); i++)
		if (!strcmp(end, size_units[i].suffix)) {
			if (v == 0 || v > (1ull << 30) >> size_units[i].shift)
				return -1;
			kkctl_bounds.max_reply = (size_t)(v << size_units[i].shift);
			return 0;
		}
	return -1;
}

static const struct bound {
	int opt;			/* what getopt_long() returns for it */
	const char *option, *env, *what;
	int (*parse)(const char *s);	/* sets it: 0, or -1 if invalid */
} bound_opts[] = {
	{ 't', "--timeout", "KKCTL_TIMEOUT",
	  "a number of seconds, more than 0 and at most 86400", parse_timeout },
	{ KKCTL_OPT_MAX_REPLY, "--max-reply", "KKCTL_MAX_REPLY",
	  "a size in bytes (suffix K, M or G), from 1 byte to 1 GiB", parse_size },
	{ KKCTL_OPT_JOBS, "--jobs", "KKCTL_JOBS", "a number from 1 to 64", parse_jobs },
};
#define NR_BOUNDS (sizeof(bound_opts) / sizeof(bound_opts[0]))

/* Which bounds an option gave: the environment does not override them. */
static bool given[NR_BOUNDS];

/* Set bound @i from @value, an option's or (@env) the environment's.  0, or 2
 * (usage) after saying why in one line. */
static int set_bound(size_t i, const char *value, bool env)
{
	const struct bound *b = &bound_opts[i];

	if (!b->parse(value))
		return 0;
	fprintf(stderr, "%s: bad %s%s", kkctl_prog, env ? b->env : b->option, env ? "=" : " ");
	kkctl_put_escaped(stderr, value, strlen(value), "");
	fprintf(stderr, ": %s\n", b->what);
	return 2;
}

/* The bound option @key (what getopt_long() returned) is @value.  0, or 2
 * (usage) after saying why. */
int kkctl_bound_option(int key, const char *value)
{
	for (size_t i = 0; i < NR_BOUNDS; i++)
		if (bound_opts[i].opt == key) {
			if (set_bound(i, value, false))
				return 2;
			given[i] = true;
		}
	return 0;
}

/* The bounds no option gave, from the environment (an empty value is unset).
 * 0, or 2 (usage) after saying why. */
int kkctl_bounds_from_env(void)
{
	for (size_t i = 0; i < NR_BOUNDS; i++) {
		const char *v = getenv(bound_opts[i].env);

		if (!given[i] && v && *v && set_bound(i, v, true))
			return 2;
	}
	return 0;
}

/* A remote kkctl (-H) gets the bounds of our environment as options: the
 * same command, whichever host runs it.  -1: out of memory. */
int kkctl_bounds_forward(void)
{
	for (size_t i = 0; i < NR_BOUNDS; i++) {
		const char *v = getenv(bound_opts[i].env);

		if (!given[i] && v && *v && kkctl_remote_arg(bound_opts[i].option, v))
			return -1;
	}
	return 0;
}
