/* SPDX-License-Identifier: MIT */
/*
 * The floor of a recorded event (issue 41), shared by kk-bench
 * dynamic_debug (ring_floor_ns) and test/scripts/dynamic_debug_line_cost.sh
 * (its instruction count): what any ring must do for the event of
 * pr_debug("bench message %d: %s\n", i, "some payload text"), and nothing
 * else: read the time stamp (the counter the ring reads, trace.c), store a
 * record header as the ring's (length, counts, thread, number, time, site,
 * format), the int, and the string's length and bytes, and move the head.
 * No format, no varargs, no wrap-around padding.
 *
 * Two floors:
 *   kkb_dd_floor_site     the string a constant the compiler sees: its
 *                         strnlen and memcpy are folded into stores
 *                         (what only code generated for the site can do);
 *   kkb_dd_floor_rt_site  the string's address hidden from the compiler:
 *                         strnlen and memcpy run, as they must in a writer
 *                         that is not generated for the site.
 */
#ifndef KKB_DD_RING_FLOOR_H
#define KKB_DD_RING_FLOOR_H

#include <stdint.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

struct kkb_dd_floor_rec {
	uint32_t len;
	uint16_t nconv, flags;
	int32_t tid;
	uint32_t seq;
	uint64_t ts;
	const void *desc;
	const char *fmt;
};

static unsigned char kkb_dd_floor_buf[1 << 20] __attribute__((aligned(64)));
static uint64_t kkb_dd_floor_head;
static int32_t kkb_dd_floor_tid;
static const int kkb_dd_floor_desc;

#define KKB_DD_FLOOR_FMT "bench message %d: %s\n"
#define KKB_DD_FLOOR_STR "some payload text"

static inline uint64_t kkb_dd_floor_stamp(void)
{
#if defined(__x86_64__)
	return __rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
#endif
}

/* Inline in each site: the folded floor sees its string, the other does not. */
static inline __attribute__((always_inline)) void
kkb_dd_floor_record(const void *desc, const char *fmt, int v, const char *str)
{
	uint64_t pos = kkb_dd_floor_head;
	struct kkb_dd_floor_rec *h;
	unsigned char *w;
	uint16_t l = (uint16_t)strnlen(str, 256);

	if ((pos & (sizeof(kkb_dd_floor_buf) - 1)) + 1024 > sizeof(kkb_dd_floor_buf))
		pos = (pos | (sizeof(kkb_dd_floor_buf) - 1)) + 1;
	h = (struct kkb_dd_floor_rec *)(void *)(kkb_dd_floor_buf +
						(pos & (sizeof(kkb_dd_floor_buf) - 1)));
	w = (unsigned char *)(h + 1);
	h->ts = kkb_dd_floor_stamp();
	h->tid = kkb_dd_floor_tid;
	h->desc = desc;
	h->fmt = fmt;
	h->seq = (uint32_t)pos;
	h->nconv = 2;
	h->flags = 0;
	memcpy(w, &v, sizeof(v));
	memcpy(w + sizeof(v), &l, sizeof(l));
	memcpy(w + sizeof(v) + sizeof(l), str, l);
	h->len = (uint32_t)((sizeof(*h) + sizeof(v) + sizeof(l) + l + 7) & ~(size_t)7);
	kkb_dd_floor_head = pos + h->len;
}

__attribute__((noinline, unused)) static void kkb_dd_floor_site(int i)
{
	kkb_dd_floor_record(&kkb_dd_floor_desc, KKB_DD_FLOOR_FMT, i, KKB_DD_FLOOR_STR);
}

__attribute__((noinline, unused)) static void kkb_dd_floor_rt_site(int i)
{
	const char *s = KKB_DD_FLOOR_STR;

	__asm__("" : "+r"(s));	/* the compiler no longer knows the string */
	kkb_dd_floor_record(&kkb_dd_floor_desc, KKB_DD_FLOOR_FMT, i, s);
}

#endif
