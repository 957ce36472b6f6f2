// SPDX-License-Identifier: MIT
/*
 * The trace ring's writer (issue 41 item 5): its fast path keeps what the
 * generic one did.  errno is the caller's after an event (the first one of
 * a thread maps its ring) and %m records it; a cached format whose largest
 * record fits is packed without bounds checks, one that may not fit is cut
 * where it stops fitting, and neither spills into the next record.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "dynamic_debug_util.h"

__attribute__((noinline)) void wr_errno(int v)
{
	pr_debug("werr %d <%m>\n", v);
}

/* Three strings: at most 3 x 258 bytes, which fits a record: the unchecked packer. */
__attribute__((noinline)) void wr_three(const char *a, const char *b, const char *c, int v)
{
	pr_debug("w3 %s|%s|%s|%d\n", a, b, c, v);
}

/* Four strings: up to 4 x 258 bytes, more than a record holds: the checked packer. */
__attribute__((noinline)) void wr_four(const char *a, const char *b, const char *c, const char *d,
				       int v)
{
	pr_debug("w4 %s|%s|%s|%s|%d\n", a, b, c, d, v);
}

/* A thread's first event (its ring is mapped then) and its later ones. */
static void *errno_thread(void *arg)
{
	int *seen = arg;

	for (int i = 0; i < 3; i++) {
		errno = EINTR;
		wr_errno(i);
		seen[i] = errno;
	}
	return NULL;
}

Test(dynamic_debug_trace_write, an_event_leaves_errno_and_m_records_it)
{
	int seen[3] = { 0 };
	pthread_t th;
	char *t;

	kk_dyndbg_trace_clear();
	dynamic_debug_must_write("func wr_errno +T");
	cr_assert_eq(pthread_create(&th, NULL, errno_thread, seen), 0);
	cr_assert_eq(pthread_join(th, NULL), 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(seen[i], EINTR, "event %d: errno %d after it", i, seen[i]);
	t = dynamic_debug_trace_text();
	for (int i = 0; i < 3; i++) {
		char want[64];

		snprintf(want, sizeof(want), "werr %d <%s>\n", i, strerror(EINTR));
		cr_assert(strstr(t, want), "no \"%s\" in:\n%s", want, t);
	}
	free(t);
}

Test(dynamic_debug_trace_write, records_near_the_largest_size_are_whole_or_cut_never_spilled)
{
	char s[300], want[1100], *t, *line;

	memset(s, 'a', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	kk_dyndbg_trace_clear();
	dynamic_debug_must_write("func wr_three +T");
	dynamic_debug_must_write("func wr_four +T");
	for (int round = 0; round < 2; round++) {	/* the second: the formats are cached */
		wr_three(s, s, s, 10 + round);
		wr_four(s, s, s, s, 20 + round);
		wr_three("x", "y", "z", 30 + round);
	}
	t = dynamic_debug_trace_text();
	for (int round = 0; round < 2; round++) {
		/* whole: each string bounded at 256 bytes, the int after them */
		snprintf(want, sizeof(want), "w3 %.256s|%.256s|%.256s|%d\n", s, s, s, 10 + round);
		cr_assert(strstr(t, want), "round %d: no whole three-string record in:\n%.2000s",
			  round, t);
		/* cut: the fourth string where the record ends, the int not packed */
		snprintf(want, sizeof(want), "w4 %.256s|%.256s|%.256s|", s, s, s);
		line = strstr(t, want);
		cr_assert(line, "round %d: no four-string record in:\n%.2000s", round, t);
		cr_assert(strstr(t, "w3 x|y|z|30\n") && strstr(t, "w3 x|y|z|31\n"),
			  "the record after a full one is damaged:\n%.4000s", t);
	}
	free(t);
}
