// SPDX-License-Identifier: MIT
/*
 * The control file: the listing's format, the round trip (writing the
 * listing back restores the state), bad input at the endpoint, and the batch
 * (all queries of one write = one static-key batch).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug_util.h"
#include "kktest.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

__attribute__((noinline)) void lst_one(int v)
{
	pr_debug("plain %d\n", v);
	pr_debug("esc \"q\" \\ tab\there nl\n");
	pr_debug("bell\a; semi # hash\n");
	pr_debug("s0 %d\n", v);
	pr_debug("s1 %d\n", v);
	pr_debug("s2 %d\n", v);
	pr_debug("s3 %d\n", v);
}

__attribute__((noinline)) void lst_two(int v)
{
	pr_debug("two %d\n", v);
}

Test(dynamic_debug_control, listing_format)
{
	char *l = dynamic_debug_listing();

	cr_assert_not_null(l);
	static const char hdr[] = "# filename:lineno [module]function flags format\n";

	cr_assert(!strncmp(l, hdr, strlen(hdr)), "%.80s", l);
	cr_assert(strstr(l, "test/unit/dynamic_debug_control.c:"), "%s", l);
	cr_assert(strstr(l, " [dynamic_debug_control]lst_one =_ \"plain %d\\n\"\n"), "%s", l);
	/* the format is escaped */
	cr_assert(strstr(l, "\"esc \\\"q\\\" \\\\ tab\\there nl\\n\""), "%s", l);
	cr_assert(strstr(l, "\"bell\\007; semi # hash\\n\""), "%s", l);
	free(l);
	cr_assert_eq(dynamic_debug_write("func lst_two +pflmt", NULL), 0);
	l = dynamic_debug_listing();
	cr_assert(strstr(l, " [dynamic_debug_control]lst_two =pmflt \"two %d\\n\"\n"), "%s", l);
	free(l);
}

/* Write @text in pieces of whole lines below the 4096-byte limit. */
static void write_back(const char *text)
{
	const char *p = text;

	while (*p) {
		const char *end = p, *nl;

		while ((nl = strchr(end, '\n')) && nl + 1 - p < 4000)
			end = nl + 1;
		if (end == p)
			end = p + strlen(p);
		char *chunk = strndup(p, (size_t)(end - p)), *r;
		int ret = kk_control_write("dynamic_debug/control", chunk, strlen(chunk), &r);

		cr_assert_eq(ret, 0, "write back failed: %s", r);
		free(r);
		free(chunk);
		p = end;
	}
}

Test(dynamic_debug_control, listing_round_trip)
{
	char *saved, *now;

	cr_assert_eq(dynamic_debug_write("func lst_one format s0 =pmf; func lst_one format s1 =t;"
			      "func lst_one format esc +pls; func lst_two =pmfsltd;"
			      "func lst_one format bell =d", NULL), 0);
	saved = dynamic_debug_listing();
	cr_assert_eq(dynamic_debug_write("=_", NULL), 0);
	cr_assert_eq(dynamic_debug_write("func lst_one format s3 +p", NULL), 0);
	now = dynamic_debug_listing();
	cr_assert_str_neq(now, saved);
	free(now);
	write_back(saved);
	now = dynamic_debug_listing();
	cr_assert_str_eq(now, saved);
	free(now);
	/* also from the all-on state */
	cr_assert_eq(dynamic_debug_write("=pmfsltd", NULL), 0);
	write_back(saved);
	now = dynamic_debug_listing();
	cr_assert_str_eq(now, saved);
	free(now);
	free(saved);
}

Test(dynamic_debug_control, listing_line_is_exact)
{
	char *r, line[512];
	unsigned ln = 0;
	char *l = dynamic_debug_listing(), *p = strstr(l, "[dynamic_debug_control]lst_one =_ \"s1 %d");

	cr_assert_not_null(p);
	while (p > l && p[-1] != '\n')
		p--;
	sscanf(strchr(p, ':') + 1, "%u", &ln);
	free(l);
	/* same site, flags changed: exactly one site matches */
	snprintf(line, sizeof(line), "test/unit/dynamic_debug_control.c:%u [dynamic_debug_control]lst_one =pf \"s1 %%d\\n\"\n", ln);
	cr_assert_eq(dynamic_debug_write(line, &r), 0, "%s", r);
	long m, c;

	cr_assert_eq(dynamic_debug_counts(r, 1, &m, &c), 0, "%s", r);
	cr_assert(m == 1 && c == 1, "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("\"s1 %d"), "pf");
	/* a wrong format: no match */
	snprintf(line, sizeof(line), "test/unit/dynamic_debug_control.c:%u [dynamic_debug_control]lst_one =p \"s1\"\n", ln);
	cr_assert_eq(dynamic_debug_write(line, &r), 0);
	cr_assert(strstr(r, "matched 0 changed 0"), "%s", r);
	free(r);
	/* malformed listing lines are errors */
	cr_assert_eq(dynamic_debug_write("x.c:12 [mod]fn =p \"unterminated\n", &r), -EINVAL);
	cr_assert(strstr(r, "malformed control line"), "%s", r);
	free(r);
	cr_assert_eq(dynamic_debug_write("x.c:12 [mod]fn +p \"fmt\"\n", &r), -EINVAL);
	free(r);
	cr_assert_eq(dynamic_debug_write("x.c:12 [mod]fn =q \"fmt\"\n", &r), -EINVAL);
	cr_assert(strstr(r, "unknown flag 'q'"), "%s", r);
	free(r);
}

Test(dynamic_debug_control, size_limit_e2big)
{
	char *buf = malloc(5000), *r = NULL;

	memset(buf, ' ', 5000);
	memcpy(buf, "func lst_two +p", 15);
	cr_assert_eq(kk_control_write("dynamic_debug/control", buf, 4096, &r), -E2BIG);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("two %d"), "_");
	cr_assert_eq(kk_control_write("dynamic_debug/control", buf, 4095, &r), 0, "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("two %d"), "p");
	free(buf);
}

Test(dynamic_debug_control, bad_input)
{
	static const char garbage[] = "\x01\x02\xff\xfe +p \x7f";
	char *r;
	char *before;

	cr_assert_eq(dynamic_debug_write("=_", NULL), 0);
	before = dynamic_debug_listing();
	cr_assert_eq(kk_control_write("dynamic_debug/control", garbage, sizeof(garbage) - 1, &r),
		     -EINVAL);
	cr_assert(strstr(r, "dyndbg: "), "%s", r);
	free(r);
	/* A NUL is refused, and nothing before it is applied (the kernel's
	 * write silently ends at it: docs/kernel_api.md). */
	cr_assert_eq(kk_control_write("dynamic_debug/control", "func lst_two +p\0garbage", 23, &r),
		     -EINVAL);
	cr_assert(strstr(r, "NUL"), "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("two %d"), "_");
	/* unknown words, long words, only an operator */
	cr_assert_eq(dynamic_debug_write("module", &r), -EINVAL);
	free(r);
	char big[3000];

	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	cr_assert_eq(dynamic_debug_write(big, &r), -EINVAL);
	cr_assert(strstr(r, "bad flag-op a"), "%s", r);
	free(r);
	char *after = dynamic_debug_listing();

	cr_assert_str_eq(before, after);
	free(before);
	free(after);
	/* the batched switch */
	cr_assert_eq(kk_control_write("dynamic_debug/batched", "2", 1, &r), -EINVAL);
	free(r);
	cr_assert_eq(kk_control_write("dynamic_debug/batched", "0\n", 2, &r), 0);
	free(r);
	cr_assert_eq(kk_dyndbg_set_batched(1), 0);
}

Test(dynamic_debug_control, one_write_is_one_batch)
{
	struct kk_jump_label_stats a, b;
	char *r;

	cr_assert_eq(dynamic_debug_write("=_", NULL), 0);
	kk_jump_label_get_stats(&a);
	cr_assert_eq(dynamic_debug_write("func lst_one format s0 +p; func lst_one format s1 +p\n"
			      "func lst_one format s2 +p; func lst_two +p", &r), 0);
	kk_jump_label_get_stats(&b);
	cr_assert(strstr(r, "flipped 4 "), "%s", r);
#ifndef KK_NO_JUMP_LABEL
	cr_assert_eq(b.batches - a.batches, 1, "batches %llu", b.batches - a.batches);
	if (b.syncs != a.syncs)
		cr_assert_eq(b.syncs - a.syncs, KKT_SYNCS_PER_BATCH);
	/* At least one site per callsite: a compiler may duplicate an asm goto
	 * with the code around it (aarch64 gcc does in lst_one), and every
	 * copy has its own jump-table entry. */
	cr_assert_geq(b.sites_patched - a.sites_patched, 4);
#endif
	free(r);
	/* unbatched: one batch per site */
	cr_assert_eq(kk_dyndbg_set_batched(0), 1);
	kk_jump_label_get_stats(&a);
	cr_assert_eq(dynamic_debug_write("func lst_one format s0 -p; func lst_one format s1 -p; func lst_two -p", &r), 0);
	kk_jump_label_get_stats(&b);
	cr_assert(strstr(r, "(unbatched)"), "%s", r);
#ifndef KK_NO_JUMP_LABEL
	cr_assert_eq(b.batches - a.batches, 3);
#endif
	free(r);
	kk_dyndbg_set_batched(1);
	cr_assert_str_eq(dynamic_debug_flags_of("\"s0 %d"), "_");
	cr_assert_str_eq(dynamic_debug_flags_of("\"s2 %d"), "p");
}

Test(dynamic_debug_control, sites_follow_flags)
{
	struct dynamic_debug_capture c;

	dynamic_debug_capture_start(&c);
	cr_assert_eq(dynamic_debug_write("=_", NULL), 0);
	lst_one(1);
	lst_two(2);
	cr_assert_eq(c.n, 0);
	cr_assert_eq(dynamic_debug_write("func lst_two +p", NULL), 0);
	lst_one(1);
	lst_two(2);
	cr_assert_eq(c.n, 1);
	cr_assert_str_eq(c.buf, "two 2\n");
	cr_assert_eq(dynamic_debug_write("func lst_two -p", NULL), 0);
	lst_two(2);
	cr_assert_eq(c.n, 1);
	/* a site without p but with decorations prints nothing */
	cr_assert_eq(dynamic_debug_write("func lst_two +mflt", NULL), 0);
	lst_two(2);
	cr_assert_eq(c.n, 1);
	kk_dyndbg_set_sink(NULL, NULL);
}

#if defined(__x86_64__) && !defined(KK_NO_JUMP_LABEL)
/*
 * A refused batch (here: the signal method forced while a thread blocks
 * SIGTRAP) says why in the reply, naming the thread, and changes nothing.
 * Issue 22 audit: the reason was dropped (the refusal has the value of a
 * query's own -EOPNOTSUPP, whose line is already in the report), and the
 * reply ended "matched 1 changed 1".
 */
Test(dynamic_debug_control, refused_batch_says_why)
{
	char *r = NULL;
	int ret;

	cr_assert_eq(dynamic_debug_write("func lst_two -p", NULL), 0);
	ret = dynamic_debug_write_refused("func lst_two +p", &r);
	cr_assert_eq(ret, -EOPNOTSUPP, "%d: %s", ret, r ? r : "");
	cr_assert(strstr(r, "trapblocker") && strstr(r, "SIGTRAP") &&
		  strstr(r, "nothing was changed"), "%s", r);
	free(r);
	cr_assert_str_eq(dynamic_debug_flags_of("\"two %d"), "_");
}
#endif
