// SPDX-License-Identifier: MIT
/*
 * Settings from the environment, one grammar for the whole library.
 *
 * kk_getenv() walks environ itself instead of calling getenv(): it must work
 * in a constructor, a signal handler and a panic, and it must refuse every
 * KK_* variable in a set-user-ID program, as secure_getenv() does.  The
 * AT_SECURE check reads the auxiliary vector (no syscall).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "common/internal.h"

extern char **environ;

/* AT_SECURE does not change while the process runs: ask once. */
static int secure = -1;	/* .data: written at load */

KK_LOAD_TEXT static bool is_secure(void)
{
	int s = __atomic_load_n(&secure, __ATOMIC_RELAXED);

	if (s < 0) {
		s = getauxval(AT_SECURE) != 0;
		__atomic_store_n(&secure, s, __ATOMIC_RELAXED);
	}
	return s;
}

/* The rest of @e after @prefix, or NULL.  (No libc: constructors call this.) */
KK_LOAD_TEXT static const char *skip_prefix(const char *e, const char *prefix)
{
	while (*prefix)
		if (*e++ != *prefix++)
			return NULL;
	return e;
}

/* (AT_SECURE is looked at only when there is something to refuse.) */
KK_LOAD_TEXT const char *kk_getenv(const char *name)
{
	char **e = environ;
	const char *v;

	for (; e && *e; e++)
		if ((v = skip_prefix(*e, name)) && *v == '=')
			return is_secure() ? NULL : v + 1;
	return NULL;
}

KK_LOAD_TEXT bool kk_env_any(void)
{
	for (char **e = environ; e && *e; e++)
		if ((*e)[0] == 'K' && (*e)[1] == 'K' && (*e)[2] == '_')
			return true;
	return false;
}

KK_LOAD_TEXT bool kk_env_has_prefix(const char *prefix)
{
	char **e = environ;

	for (; e && *e; e++)
		if (skip_prefix(*e, prefix))
			return !is_secure();
	return false;
}

int kk_parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = { "1", "y", "yes", "on", "true" };
	static const char *const no[] = { "0", "n", "no", "off", "false" };

	if (!s)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcasecmp(s, yes[i])) {
			*out = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*out = false;
			return 0;
		}
	}
	return -EINVAL;
}

void kk_warn(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	int n = snprintf(line, sizeof(line), "kernelkit: ");

	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	if (write(STDERR_FILENO, line, (size_t)n) < 0)
		return;		/* nowhere else to say it */
}

bool kk_env_bool(const char *name, bool def)
{
	const char *v = kk_getenv(name);
	bool b;

	if (!v)
		return def;
	if (kk_parse_bool(v, &b) == 0)
		return b;
	kk_warn("ignoring %s=%.64s: not a boolean (use 1/0, y/n, yes/no, on/off, true/false)",
		name, v);
	return def;
}

int kk_env_choice(const char *name, const char *const *choices, int *warned)
{
	const char *v = kk_getenv(name);
	char list[160] = "";
	size_t len = 0;
	int n;

	if (!v || !*v)
		return 0;
	for (n = 0; choices[n]; n++)
		if (!strcmp(v, choices[n]))
			return n;
	if (__atomic_exchange_n(warned, 1, __ATOMIC_RELAXED))
		return 0;
	for (int i = 0; i < n && len < sizeof(list); i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s",
					i == 0 ? "" : i == n - 1 ? " or " : ", ", choices[i]);
	kk_warn("ignoring %s=%.32s: use %s", name, v, list);
	return 0;
}

unsigned long kk_env_ulong(const char *name, unsigned long def, unsigned long lo,
			   unsigned long hi)
{
	const char *v = kk_getenv(name);
	unsigned long x;
	char *end;

	if (!v)
		return def;
	errno = 0;
	x = strtoul(v, &end, 0);
	/* strtoul() would take " 7", "+7" and " -1" (as ULONG_MAX): digits only */
	if (!isdigit((unsigned char)v[0]) || *end || errno || x < lo || x > hi) {
		kk_warn("ignoring %s=%.64s: not a number in %lu..%lu", name, v, lo, hi);
		return def;
	}
	return x;
}
