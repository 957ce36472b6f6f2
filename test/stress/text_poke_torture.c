// SPDX-License-Identifier: MIT
/*
 * Sites of one static key at every offset of a cache line, some across a
 * line, some across a page, run by reader threads while main flips the key
 * (issue 22, item 3: under stop_machine with /proc/self/mem writes the
 * process died of SIGSEGV at a pc inside a site being rewritten).
 *
 *   text_poke_torture [READERS [FLIPS]]     defaults: 2 readers, 500 flips
 *
 * The flips also stop after KK_STRESS_SECONDS (20) of wall time, once 16
 * ran (stress_budget.h: a loaded machine does fewer, checks the same).
 *
 * 512 functions f_abc (octal index abc), each aligned to 64 bytes and padded
 * before its site.  x86_64 (5-byte sites, at any byte): b*8+c one-byte NOPs,
 * so every offset 0..63 of a line holds the first byte of 8 sites, those at
 * 60..63 cross into the next line; five more functions, aligned to a page,
 * put their site at page offsets 4091..4095: four of them cross a page.
 * aarch64 (a site is one aligned word, it never crosses anything): (b*8+c)%16
 * 4-byte instructions, so every word offset 0..60 of a line holds 32 sites,
 * those at 60 end a line; the page functions put theirs at 4076..4092, and
 * the one at 4092 ends a page with the rest of its function on the next (a
 * binary translator's block across two pages, which a write to either must
 * throw away; the cache maintenance is per line).  Every function returns
 * 2*index, plus 1 if it took the branch.
 *
 * Checks (exit 1 on any failure, with the first few printed):
 *  - the layout: every site found where expected, all 64 line offsets (16
 *    word offsets on aarch64), at least one site across a line and one
 *    across a page (on aarch64: ending one);
 *  - every flip succeeds;
 *  - main, after each flip returns, runs every function: each must reflect
 *    the key (and return its own index);
 *  - readers run every function in a loop; a pass during which no flip was
 *    in progress (a sequence count, even and unchanged around the call)
 *    must see exactly the key's value;
 *  - a crash (the bug) kills the process: the exit status shows it.
 * Flips come in bursts of BURST back to back: the next flip starts while the
 * readers parked by the last one are still on their way out of the park
 * signal's handler.  After a burst main waits (bounded polling, no sleep)
 * until every reader started a new pass.
 *
 * KK_TEXT_SYNC / KK_TEXT_POKE choose the paths (test/scripts/text_poke_torture.sh);
 * the program prints which ones ran.
 */
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/jump_label.h>

#include "kktest.h"
#include "stress_budget.h"

#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#endif
#endif
#ifndef VALGRIND_HG_DISABLE_CHECKING
#define VALGRIND_HG_DISABLE_CHECKING(addr, len) ((void)(addr), (void)(len))
#endif

#define MAX_READERS	64
#define NLINE		512		/* functions aligned to a cache line */
#define NPAGE		5		/* functions aligned to a page */
#define NFUNCS		(NLINE + NPAGE)
#ifdef KK_NO_JUMP_LABEL
#define HAVE_SITES	0		/* the fallback: loads, no code to lay out */
#else
#define HAVE_SITES	1
#endif
#define BURST		8		/* flips back to back, then the readers catch up */

/*
 * The padding before a site.  PAD(n): n bytes of instructions that do
 * nothing.  LINE_PAD(k): the padding of the k-th function (0..63) of a group
 * of 64; PAGE_PADS: those of the page-aligned ones.  SITE_ALIGN: the
 * alignment of a site, so the line offsets a site can start at.
 * aarch64 pads with "mov x16, x16" rather than NOP: a NOP is also what a
 * site holds (key off), and site_of() looks for the first one.
 */
#if defined(__aarch64__)
#define PAD(n)		".rept (" n ")/4\n\tmov x16, x16\n\t.endr"
#define LINE_PAD(k)	((k) % 16 * 4)
#define PAGE_PADS	4076, 4080, 4084, 4088, 4092
#define SITE_ALIGN	4
#else
#define PAD(n)		".fill " n ", 1, 0x90"
#define LINE_PAD(k)	(k)
#define PAGE_PADS	4091, 4092, 4093, 4094, 4095
#define SITE_ALIGN	1
#endif
#define STR_(x)		#x
#define STR(x)		STR_(x)

DEFINE_STATIC_KEY_FALSE(tk);

/*
 * Function with index 0abc (octal: a*64 + b*8 + c), its site after
 * LINE_PAD(b*8+c) bytes of padding.  The distinct return values keep the compiler from merging
 * functions.
 */
#define F(a, b, c)								\
	__attribute__((noinline, aligned(64))) static int f_##a##b##c(void)	\
	{									\
		__asm__ volatile(PAD(STR(LINE_PAD(b*8+c))));			\
		if (static_branch_unlikely(&tk))				\
			return 2 * 0##a##b##c + 1;				\
		return 2 * 0##a##b##c;						\
	}
#define F8(a, b)	F(a, b, 0) F(a, b, 1) F(a, b, 2) F(a, b, 3) \
			F(a, b, 4) F(a, b, 5) F(a, b, 6) F(a, b, 7)
#define F64(a)		F8(a, 0) F8(a, 1) F8(a, 2) F8(a, 3) F8(a, 4) F8(a, 5) F8(a, 6) F8(a, 7)
F64(0) F64(1) F64(2) F64(3) F64(4) F64(5) F64(6) F64(7)

/* Page-aligned, site at page offset @pad. */
#define G(i, pad)								\
	__attribute__((noinline, aligned(4096))) static int g_##i(void)	\
	{									\
		__asm__ volatile(PAD(#pad));					\
		if (static_branch_unlikely(&tk))				\
			return 2 * (NLINE + i) + 1;				\
		return 2 * (NLINE + i);						\
	}
#define G5(p0, p1, p2, p3, p4)	G(0, p0) G(1, p1) G(2, p2) G(3, p3) G(4, p4)
#define G5_(...)		G5(__VA_ARGS__)
G5_(PAGE_PADS)

#define P(a, b, c)	f_##a##b##c,
#define P8(a, b)	P(a, b, 0) P(a, b, 1) P(a, b, 2) P(a, b, 3) \
			P(a, b, 4) P(a, b, 5) P(a, b, 6) P(a, b, 7)
#define P64(a)		P8(a, 0) P8(a, 1) P8(a, 2) P8(a, 3) P8(a, 4) P8(a, 5) P8(a, 6) P8(a, 7)
static int (*const funcs[NFUNCS])(void) = {
	P64(0) P64(1) P64(2) P64(3) P64(4) P64(5) P64(6) P64(7)
	g_0, g_1, g_2, g_3, g_4,
};
static const int gpad[NPAGE] = { PAGE_PADS };

static unsigned long seq;		/* odd while a flip is in progress */
static int want;			/* the key's value while seq is even */
static int stop;
static unsigned long passes[MAX_READERS];
static unsigned long checked[MAX_READERS];
static unsigned long errors;

static void report(const char *who, int i, int got, int expect)
{
	if (__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED) <= 10)
		fprintf(stderr, "text_poke_torture: %s: function %d returned %d, expected %d\n",
			who, i, got, 2 * i + expect);
}

/* Every function once; @expect is 0/1, or -1 for "either". */
static int run_all(const char *who, int expect)
{
	int bad = 0;

	for (int i = 0; i < NFUNCS; i++) {
		int r = funcs[i]();

		if (r >> 1 != i || (expect >= 0 && (r & 1) != expect)) {
			report(who, i, r, expect < 0 ? 0 : expect);
			bad++;
		}
	}
	return bad;
}

static void *reader(void *arg)
{
	int id = (int)(intptr_t)arg;

	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		unsigned long s1 = __atomic_load_n(&seq, __ATOMIC_SEQ_CST);
		int expect = __atomic_load_n(&want, __ATOMIC_SEQ_CST);
		int got[NFUNCS];

		for (int i = 0; i < NFUNCS; i++)
			got[i] = funcs[i]();
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (!(s1 & 1) && __atomic_load_n(&seq, __ATOMIC_SEQ_CST) == s1) {
			for (int i = 0; i < NFUNCS; i++)
				if (got[i] != 2 * i + expect)
					report("reader", i, got[i], expect);
			checked[id]++;
		} else {
			for (int i = 0; i < NFUNCS; i++)
				if (got[i] >> 1 != i)
					report("reader", i, got[i], got[i] & 1);
		}
		__atomic_add_fetch(&passes[id], 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Where function @i's site starts (the key is off: a NOP), or 0. */
static uintptr_t site_of(int i)
{
	const uint8_t *f = (const uint8_t *)(uintptr_t)funcs[i];
	int pad = i < NLINE ? LINE_PAD(i % 64) : gpad[i - NLINE];

	/* Allow a prologue (endbr64, a frame pointer) before the padding. */
	for (int skip = 0; skip <= 16; skip++)
		if (!memcmp(f + skip + pad, kkt_nop, KKT_SITE_LEN))
			return (uintptr_t)(f + skip + pad);
	return 0;
}

/*
 * Does [s, e] cross a multiple of @unit?  A site that is one aligned word
 * (aarch64) never does: the boundary case there is a site whose last byte
 * is the unit's last.
 */
static int at_edge(uintptr_t s, uintptr_t e, uintptr_t unit)
{
	return SITE_ALIGN == KKT_SITE_LEN ? (e + 1) % unit == 0 : s / unit != e / unit;
}

/* The sites cover every line offset a site can start at, cross (or end)
 * lines and pages. */
static int check_layout(void)
{
	uint64_t offsets = 0, every = 0;
	int cross_line = 0, cross_page = 0;

	for (int k = 0; k < 64; k += SITE_ALIGN)
		every |= 1ull << k;

	for (int i = 0; i < NFUNCS; i++) {
		uintptr_t s = site_of(i), e;

		if (!s) {
			fprintf(stderr, "text_poke_torture: no site found in function %d\n", i);
			return 1;
		}
		e = s + KKT_SITE_LEN - 1;
		offsets |= 1ull << (s % 64);
		cross_line += at_edge(s, e, 64);
		cross_page += at_edge(s, e, 4096);
	}
	printf("layout: %d sites, %d line offsets, %d %s a line, %d %s a page\n",
	       NFUNCS, __builtin_popcountll(offsets), cross_line,
	       SITE_ALIGN == KKT_SITE_LEN ? "ending" : "across", cross_page,
	       SITE_ALIGN == KKT_SITE_LEN ? "ending" : "across");
	if (offsets != every || !cross_line || !cross_page) {
		fprintf(stderr, "text_poke_torture: the sites do not cover the layout\n");
		return 1;
	}
	return 0;
}

/* Wait until every reader started a pass after this point (bounded). */
static void wait_passes(int nr)
{
	unsigned long base[MAX_READERS];

	for (int r = 0; r < nr; r++)
		base[r] = __atomic_load_n(&passes[r], __ATOMIC_ACQUIRE);
	for (int r = 0; r < nr; r++)
		for (long spin = 0; spin < 100000000L &&
		     __atomic_load_n(&passes[r], __ATOMIC_ACQUIRE) < base[r] + 1; spin++)
			sched_yield();
}

static int flip(int on)
{
	int ret;

	__atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	ret = on ? static_branch_enable(&tk) : static_branch_disable(&tk);
	__atomic_store_n(&want, on, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&seq, 1, __ATOMIC_SEQ_CST);
	if (ret) {
		fprintf(stderr, "text_poke_torture: %s failed: %s\n",
			on ? "enable" : "disable", kk_jump_label_strerror());
		__atomic_add_fetch(&errors, 1, __ATOMIC_RELAXED);
	}
	return ret;
}

int main(int argc, char **argv)
{
	int nr = argc > 1 ? atoi(argv[1]) : 2;
	long flips = argc > 2 ? atol(argv[2]) : 500;
	pthread_t th[MAX_READERS];
	unsigned long total = 0;

	if (nr < 1 || nr > MAX_READERS || flips < 1) {
		fprintf(stderr, "usage: text_poke_torture [READERS (1..%d) [FLIPS]]\n", MAX_READERS);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	VALGRIND_HG_DISABLE_CHECKING(&seq, sizeof(seq));
	VALGRIND_HG_DISABLE_CHECKING(&want, sizeof(want));
	VALGRIND_HG_DISABLE_CHECKING(&stop, sizeof(stop));
	VALGRIND_HG_DISABLE_CHECKING(passes, sizeof(passes));
	VALGRIND_HG_DISABLE_CHECKING(checked, sizeof(checked));
	VALGRIND_HG_DISABLE_CHECKING(&errors, sizeof(errors));
	if (HAVE_SITES && check_layout())
		return 1;
	for (int r = 0; r < nr; r++)
		if (pthread_create(&th[r], NULL, reader, (void *)(intptr_t)r)) {
			fprintf(stderr, "text_poke_torture: pthread_create failed\n");
			return 1;
		}
	stress_budget_spent(0, 1, 20);	/* starts the clock */
	for (long k = 0; k < flips && !flip((int)(k % 2 == 0)); k++) {
		if (k % BURST == 0 && stress_budget_spent(k, 2 * BURST, 20)) {
			flips = k;
			break;
		}
		run_all("main", (int)(k % 2 == 0));
		if (k % BURST == BURST - 1)
			wait_passes(nr);
	}
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	for (int r = 0; r < nr; r++) {
		pthread_join(th[r], NULL);
		total += checked[r];
	}
	printf("%ld flips, %d readers, %lu reader passes checked exactly; sync %s, write %s\n",
	       flips, nr, total, kk_jump_label_sync_method(), kk_jump_label_method());
	if (errors) {
		fprintf(stderr, "text_poke_torture: %lu errors\n", errors);
		return 1;
	}
	printf("text_poke_torture: ok\n");
	return 0;
}
