// SPDX-License-Identifier: MIT
/*
 * The rule of a site's flags at the out-of-line path (issue 37, finding 11):
 * a call prints only if p is set and records only if T is set, decided on
 * ONE load of the flags.  A call that reaches __dynamic_pr_debug(),
 * __dynamic_hex_dump() or the rate limit of a site whose flags are clear
 * does nothing: it is in the window between the flags' change and the patch
 * of the site back to its NOP.
 *
 * The window is made deterministic here: the sites below call the
 * out-of-line functions directly, whatever their branch says, as a thread
 * does that took the branch just before the flags changed.
 * test/stress/dynamic_debug_flag_window.c runs the real window.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

#define MSG_FMT	"window msg %d\n"
#define HEX_FMT	"winhex: "

static struct _ddebug *msg_site(void)
{
	DEFINE_DYNAMIC_DEBUG_METADATA(dd_window_msg, MSG_FMT);
	return &dd_window_msg;
}

static struct _ddebug *hex_site(void)
{
	DEFINE_DYNAMIC_DEBUG_METADATA(dd_window_hex, HEX_FMT);
	return &dd_window_hex;
}

static struct _ddebug *rl_site(void)
{
	DEFINE_DYNAMIC_DEBUG_METADATA(dd_window_rl, "window rl %d\n");
	return &dd_window_rl;
}

static const unsigned char hexbuf[40] = "0123456789abcdefghijklmnopqrstuvwxyzABCD";

/* Every out-of-line entry of a site, called as a thread in the window calls it. */
static void call_all(int v)
{
	struct ratelimit_state rs = RATELIMIT_STATE_INIT(rs, DEFAULT_RATELIMIT_INTERVAL, 10);

	__dynamic_pr_debug(msg_site(), MSG_FMT, v);
	__dynamic_hex_dump(hex_site(), HEX_FMT, DUMP_PREFIX_OFFSET, 16, 1, hexbuf, sizeof(hexbuf), 1);
	if (__kk_dynamic_ratelimit(&rs, rl_site()))
		__dynamic_pr_debug(rl_site(), "window rl %d\n", v);
}

static void set_all(const char *flags)
{
	char q[256], *r = NULL;

	snprintf(q, sizeof(q), "func msg_site %s; func hex_site %s; func rl_site %s", flags, flags,
		 flags);
	cr_assert_eq(dynamic_debug_write(q, &r), 0, "%s: %s", q, r);
	free(r);
}

/* Records in the ring since the last clear (its header's entries-in-buffer). */
static unsigned long records_shown(void)
{
	char *t = dynamic_debug_trace_text();
	const char *p = strstr(t, "entries-written: ");
	unsigned long in = 0, written = 0;

	cr_assert(p && sscanf(p, "entries-written: %lu/%lu", &in, &written) == 2, "%s", t);
	free(t);
	return in;
}

/* One flags word and what it must do: print, record, with what prefix. */
struct flags_case {
	const char *query;
	int prints, records;
	const char *prefix;	/* of every printed line */
};

static const struct flags_case cases[] = {
	{ "=_", 0, 0, "" },
	{ "=mflt", 0, 0, "" },		/* decorations alone: off */
	{ "=mfltsd", 0, 0, "" },
	{ "=T", 0, 1, "" },
	{ "=Tmfltd", 0, 1, "" },		/* no stack dump: nothing prints */
	{ "=p", 1, 0, "window msg" },
	{ "=pf", 1, 0, "msg_site: window msg" },
	{ "=pT", 1, 1, "window msg" },
	{ "=pTm", 1, 1, "dynamic_debug_flags: window msg" },
};

Test(dynamic_debug_flags, a_call_prints_only_with_p_and_records_only_with_T)
{
	struct dynamic_debug_capture c;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct flags_case *fc = &cases[i];
		char *t;

		dynamic_debug_capture_start(&c);
		set_all(fc->query);
		kk_dyndbg_trace_clear();
		call_all((int)i);
		kk_dyndbg_set_sink(NULL, NULL);
		t = dynamic_debug_trace_text();
		if (fc->prints) {
			/* 1 message, 3 rows of hex, 1 rate-limited message */
			cr_assert_eq(c.n, 5, "%s: %d lines: %s", fc->query, c.n, c.buf);
			cr_assert(!strncmp(c.buf, fc->prefix, strlen(fc->prefix)), "%s: %s", fc->query,
				  c.buf);
		} else {
			cr_assert_eq(c.n, 0, "%s printed %d lines no flag asked for:\n%s", fc->query,
				     c.n, c.buf);
		}
		cr_assert_eq(dynamic_debug_count_str(t, "window msg ") +
			     dynamic_debug_count_str(t, "winhex: ") +
			     dynamic_debug_count_str(t, "window rl "), fc->records ? 5 : 0,
			     "%s: records:\n%s", fc->query, t);
		free(t);
	}
	set_all("=_");
}

static void call_all_1(void)
{
	call_all(1);
}

/* Run @fn with stderr going to a file; return what was written (malloc'ed). */
static char *capture_stderr(void (*fn)(void))
{
	char path[] = "/tmp/kk-dd-flags.XXXXXX";
	int fd = mkstemp(path), saved = dup(2);
	char *buf = calloc(1, 65536);
	ssize_t n;

	cr_assert(fd >= 0 && saved >= 0 && buf);
	fflush(stderr);
	dup2(fd, 2);
	fn();
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, 65535, 0);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	unlink(path);
	return buf;
}

Test(dynamic_debug_flags, clear_flags_print_nothing_on_stderr)
{
	static const char *const clear[] = { "=_", "=T", "=mflt", "=Td" };
	char *e;

	kk_dyndbg_set_sink(NULL, NULL);
	for (size_t i = 0; i < sizeof(clear) / sizeof(clear[0]); i++) {
		set_all(clear[i]);
		e = capture_stderr(call_all_1);
		cr_assert_str_eq(e, "", "%s: printed on stderr:\n%s", clear[i], e);
		free(e);
	}
	set_all("=_");
}

/*
 * The rate limit is consulted only for a site that prints or records, and
 * its report "N callbacks suppressed" goes where the site's messages go: to
 * the sink with p, into the ring with T.
 */
static struct ratelimit_state rs_due(void)
{
	struct ratelimit_state rs = RATELIMIT_STATE_INIT(rs, DEFAULT_RATELIMIT_INTERVAL, 10);

	rs.begin = 1;		/* the interval ended long ago ... */
	rs.missed = 3;		/* ... with 3 suppressed: the next check reports them */
	return rs;
}

Test(dynamic_debug_flags, the_rate_limit_follows_the_flags)
{
	struct dynamic_debug_capture c;
	struct ratelimit_state rs;
	char *t;

	dynamic_debug_capture_start(&c);
	kk_dyndbg_trace_clear();
	set_all("=_");
	rs = rs_due();
	cr_assert_eq(__kk_dynamic_ratelimit(&rs, rl_site()), 0, "clear flags: go ahead");
	cr_assert_eq(rs.missed, 3, "clear flags: the state changed");
	cr_assert_eq(rs.printed, 0, "clear flags: the state changed");
	cr_assert_eq(c.n, 0, "clear flags: reported: %s", c.buf);
	cr_assert_eq(records_shown(), 0);

	set_all("=T");
	rs = rs_due();
	cr_assert_eq(__kk_dynamic_ratelimit(&rs, rl_site()), 1);
	cr_assert_eq(c.n, 0, "T alone: the report was printed: %s", c.buf);
	t = dynamic_debug_trace_text();
	cr_assert(strstr(t, "rl_site: 3 callbacks suppressed\n"), "T: report not recorded:\n%s", t);
	free(t);

	kk_dyndbg_trace_clear();
	set_all("=p");
	rs = rs_due();
	cr_assert_eq(__kk_dynamic_ratelimit(&rs, rl_site()), 1);
	cr_assert_str_eq(c.buf, "rl_site: 3 callbacks suppressed\n");
	cr_assert_eq(records_shown(), 0, "p alone: the report was recorded");
	kk_dyndbg_set_sink(NULL, NULL);
	set_all("=_");
}

/*
 * A refused batch changes no site's flags: neither the sites it would have
 * switched on or off nor the ones whose decorations alone it changes (the
 * latter kept theirs, "=p" became "=pmf").  The batch is refused by forcing
 * the signal method while a thread blocks SIGTRAP, as in
 * dynamic_debug_control's refused_batch_says_why.
 */
__attribute__((noinline)) void flags_real_site(int v)
{
	pr_debug("flags real %d\n", v);
}

#if defined(__x86_64__) && !defined(KK_NO_JUMP_LABEL)
Test(dynamic_debug_flags, a_refused_batch_keeps_every_sites_flags)
{
	char *r = NULL;
	int ret;

	set_all("=_");
	cr_assert_eq(dynamic_debug_write("func msg_site =p; func flags_real_site =_", NULL), 0);
	ret = dynamic_debug_write_refused("func msg_site +mf; func flags_real_site +p", &r);
	cr_assert_eq(ret, -EOPNOTSUPP, "%d: %s", ret, r ? r : "");
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("]flags_real_site "), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("]msg_site "), "p",
			 "the decorations of a refused batch stayed");
	set_all("=_");
	flags_real_site(0);
}
#else
Test(dynamic_debug_flags, a_refused_batch_keeps_every_sites_flags)
{
	flags_real_site(0);
	cr_skip_test("a batch is refused here only by the signal method of x86_64's patching");
}
#endif
