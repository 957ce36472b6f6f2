// SPDX-License-Identifier: MIT
/*
 * The printed line (issue 41): pr_debug formats the common conversions
 * itself and writes stderr without stdio's fwrite.  The text must be
 * exactly what vsnprintf() makes of the same format and arguments, for the
 * conversions it does and for those it leaves to vsnprintf(); stderr's
 * order with the program's own stdio, and errno, must be as before.
 */
#define KK_MODNAME "lineunit"
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>
#include <wchar.h>

#include "dynamic_debug_util.h"

static char got[8192];
static size_t got_len;
static int got_n;

static void capture(const struct _ddebug *d, const char *msg, size_t len, void *arg)
{
	(void)d;
	(void)arg;
	got_n++;
	got_len = len < sizeof(got) - 1 ? len : sizeof(got) - 1;
	memcpy(got, msg, got_len);
	got[got_len] = '\0';
}

static void on(void)
{
	kk_dyndbg_set_sink(capture, NULL);
	cr_assert_gt(dynamic_debug_exec_queries("+p", KK_MODNAME), 0);
}

static int checked;

/* A pr_debug of FMT (no newline) and the snprintf() of the same: equal, plus "\n". */
#define SAME(fmt, ...) do {								\
		char want_[8192];							\
		int n_ = snprintf(want_, sizeof(want_) - 1, fmt, __VA_ARGS__);	\
											\
		cr_assert(n_ >= 0 && (size_t)n_ < sizeof(want_) - 1);		\
		strcpy(want_ + n_, "\n");					\
		got_n = 0;							\
		pr_debug(fmt, __VA_ARGS__);					\
		cr_assert_eq(got_n, 1, "%s: %d lines", fmt, got_n);		\
		cr_assert_str_eq(got, want_, "format \"%s\"", fmt);		\
		checked++;							\
	} while (0)

#pragma GCC diagnostic ignored "-Wformat"
#pragma GCC diagnostic ignored "-Wformat-extra-args"

static void ints(long long v)
{
	SAME("d %d i %i u %u x %x X %X o %o", (int)v, (int)v, (unsigned)v, (unsigned)v,
	     (unsigned)v, (unsigned)v);
	SAME("[%5d] [%-5d] [%05d] [%-05d] [%1d] [%012x]", (int)v, (int)v, (int)v, (int)v,
	     (int)v, (unsigned)v);
	SAME("hh %hhd %hhu %hhx h %hd %hu %hX", (int)v, (int)v, (int)v, (int)v, (int)v, (int)v);
	SAME("l %ld %lu %lx ll %lld %llu %llo", (long)v, (unsigned long)v, (unsigned long)v, v,
	     (unsigned long long)v, (unsigned long long)v);
	SAME("z %zd %zu %zx j %jd %ju t %td %tu %tx", (ssize_t)v, (size_t)v, (size_t)v,
	     (intmax_t)v, (uintmax_t)v, (ptrdiff_t)v, (ptrdiff_t)v, (ptrdiff_t)v);
	SAME("[%*d] [%-*d] [%0*lld] [%*u]", 7, (int)v, 7, (int)v, 20, v, 0, (unsigned)v);
}

Test(dynamic_debug_line, integers_as_snprintf)
{
	static const long long vals[] = {
		0, 1, -1, 7, 9, 10, -10, 99, 100, 255, 256, -128, -129, 32767, -32768, 65535,
		INT_MAX, INT_MIN, UINT_MAX, (long long)UINT_MAX + 1, LLONG_MAX, LLONG_MIN,
		123456789012345LL, -987654321098LL, 0x7fLL, 0xdeadbeefLL,
	};

	on();
	for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++)
		ints(vals[i]);
	cr_assert_eq(checked, 6 * (int)(sizeof(vals) / sizeof(vals[0])));
}

Test(dynamic_debug_line, strings_chars_pointers_as_snprintf)
{
	static char big[3000];
	int x;

	on();
	memset(big, 'y', sizeof(big) - 1);
	SAME("%s", "");
	SAME("a %s b %s c", "one", "two");
	SAME("[%10s] [%-10s] [%2s] [%.3s] [%.0s] [%.*s] [%*.*s]", "abc", "abc", "abcdef",
	     "abcdef", "abc", 4, "abcdefgh", 8, 2, "xyz");
	SAME("[%.5s]", (const char *)"ab\0cdef");	/* a precision stops at the NUL too */
	SAME("%c%c%c [%3c] [%-3c]", 'a', 0x41, 255 + 'z' + 1, 'q', 'r');
	SAME("%p %p [%20p] [%-20p] [%8p]", (void *)&x, NULL, (void *)&x, (void *)&x, NULL);
	SAME("%% %d%% %%%%", 5);
	SAME("text only, no conversion%s", "");
	SAME("%s", big);			/* longer than the stack line: vsnprintf's */
	SAME("near the end %s%d", big + sizeof(big) - 1 - 495, 12345);
	SAME("%d %s", 1, big + 2000);
}

/* What it leaves to vsnprintf(): the same text, whole. */
Test(dynamic_debug_line, other_conversions_as_snprintf)
{
	/* Through a volatile: gcc -Werror refuses a literal NULL for %s. */
	const char *volatile nul = NULL;

	on();
	SAME("[%s] [%.3s] [%10s]", nul, nul, nul);
	SAME("%+d % d %#x %#o %'d", 5, 5, 255, 8, 1234567);
	SAME("%.3d %.0d %8.3x", 5, 0, 17);
	SAME("%f %.2f %e %g %a %Lf", 1.5, 2.25, 1e10, 0.1, 1.0, (long double)3.5);
	SAME("%05s %-*d %0-4d|", "ab", -3, 7, 9);
	SAME("%ls %lc", L"wide", (wint_t)L'w');
	SAME("%qd %Ld", 1LL, 2LL);
	SAME("%5%|%d", 3);
	SAME("%.*s|", -1, "negative precision");
	SAME("%d %m", 1, 0);
	/* a format vsnprintf() refuses prints nothing, as before */
	got_n = 0;
	pr_debug("trailing %", 0);
	cr_assert_eq(got_n, 0);
}

__attribute__((noinline)) static void print_one(int v)
{
	pr_debug("line %d\n", v);
}

/* A program's buffered stderr: our line comes after what it has pending. */
Test(dynamic_debug_line, buffered_stderr_keeps_its_order)
{
	char path[] = "/tmp/kk-line-XXXXXX", buf[256];
	int fd = mkstemp(path);
	ssize_t n;

	cr_assert_geq(fd, 0);
	cr_assert_geq(dup2(fd, 2), 0);
	static char vbuf[BUFSIZ];

	cr_assert_eq(setvbuf(stderr, vbuf, _IOFBF, sizeof(vbuf)), 0);
	cr_assert_gt(dynamic_debug_exec_queries("func print_one +p", KK_MODNAME), 0);
	fputs("before ", stderr);
	print_one(1);
	fputs("after\n", stderr);
	fflush(stderr);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "before line 1\nafter\n");
	unlink(path);
}

/* The default, unbuffered stderr: one line, one write, in order with fputs. */
Test(dynamic_debug_line, unbuffered_stderr_in_order)
{
	char path[] = "/tmp/kk-line-XXXXXX", buf[256];
	int fd = mkstemp(path);
	ssize_t n;

	cr_assert_geq(fd, 0);
	cr_assert_geq(dup2(fd, 2), 0);
	cr_assert_gt(dynamic_debug_exec_queries("func print_one +p", KK_MODNAME), 0);
	fputs("before\n", stderr);
	print_one(2);
	fputs("after\n", stderr);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	cr_assert_gt(n, 0);
	buf[n] = '\0';
	cr_assert_str_eq(buf, "before\nline 2\nafter\n");
	unlink(path);
}

/* A debug print does not change errno, even when its write fails. */
Test(dynamic_debug_line, errno_is_kept)
{
	int fds[2];

	cr_assert_eq(pipe(fds), 0);
	close(fds[1]);
	cr_assert_geq(dup2(fds[0], 2), 0);	/* read-only: write() fails with EBADF */
	cr_assert_gt(dynamic_debug_exec_queries("func print_one +p", KK_MODNAME), 0);
	errno = 4242;
	print_one(3);
	cr_assert_eq(errno, 4242);
}

static int deco_line;

__attribute__((noinline)) static void deco_site(int v)
{
	deco_line = __LINE__ + 1;
	pr_debug("deco %d", v);
}

/* The decoration "[tid] module:func:line: ", as snprintf() would make it. */
Test(dynamic_debug_line, decoration_as_snprintf)
{
	char want[256];

	kk_dyndbg_set_sink(capture, NULL);
	cr_assert_gt(dynamic_debug_exec_queries("func deco_site =pmflt", KK_MODNAME), 0);
	got_n = 0;
	deco_site(7);
	snprintf(want, sizeof(want), "[%d] %s:%s:%d: deco 7\n", (int)gettid(), KK_MODNAME,
		     "deco_site", deco_line);
	cr_assert_eq(got_n, 1);
	cr_assert_str_eq(got, want);
}
