// SPDX-License-Identifier: MIT
/*
 * kkctl record's raw path (tools/kkctl/record_raw.c) fed hostile
 * trace_pipe_raw replies (test/scripts/kkctl_record_raw_fuzz.sh): built
 * with its sources and the ctf writer's (mk/record_raw.mk), run under ASan.
 *
 *   record_raw_fuzz DIR ITERATIONS SEED
 *
 * Makes a valid reply (a HEAD, three CLASS frames, RING frames of two
 * threads), then ITERATIONS times a copy of it changed at random (bytes
 * flipped, a length, a count, a class id or a string length set to an
 * extreme, the reply cut short) is given to kkr_raw_take() in a buffer of
 * exactly its size, so that ASan sees any read or write past it; then the
 * valid reply once more.  Exit 0 when every call returned and the last one
 * wrote its records; the script checks that DIR holds only the trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug/trace_raw.h"
#include "record_int.h"
#include "record_raw.h"

const char kkctl_prog[] = "kkctl";
struct kkr_state kkr = { .lock = PTHREAD_MUTEX_INITIALIZER };

static unsigned char reply[8192];
static size_t rlen;
static uint64_t rng;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void put(const void *p, size_t n)
{
	memcpy(reply + rlen, p, n);
	rlen += n;
}

static void pad8(void)
{
	while (rlen % 8)
		reply[rlen++] = 0;
}

/* A CLASS frame: id, a field of each @kinds (sizes by kind). */
static void class_frame(uint32_t id, const char *fn, const uint8_t *kinds, int n)
{
	size_t start = rlen;
	struct kk_raw_class h = { { KK_RAW_CLASS, 0 }, id, 10 + id, (uint16_t)n,
				  { 4, (uint16_t)strlen(fn), 6, 5 }, 0 };

	put(&h, sizeof(h));
	put("fuzz", 4);
	put(fn, strlen(fn));
	put("fuzz.c", 6);
	put("x=%d", 5);
	for (int i = 0; i < n; i++) {
		static const uint8_t size[] = { 0, 4, 8, 4, 8, 8, 0 };
		struct kk_raw_field f = { kinds[i], size[kinds[i]], 2 };
		char name[2] = { 'a', (char)('a' + i) };

		put(&f, sizeof(f));
		put(name, 2);
	}
	pad8();
	h.f.len = (uint32_t)(rlen - start);
	memcpy(reply + start, &h, sizeof(h));
}

/* A RING frame of thread @tid: @n records of class 0 (int, uint) and 2 (a string). */
static void ring_frame(int tid, int n, uint64_t lost)
{
	size_t start = rlen;
	struct kk_raw_ring h = { { KK_RAW_RING, 0 }, tid, (uint32_t)n, lost, "fuzzer" };

	put(&h, sizeof(h));
	for (int i = 0; i < n; i++) {
		struct kk_raw_rec r = { 0, (uint32_t)(i % 2 ? 2 : 0), 1000000ull * (uint64_t)i,
					tid, 77 };
		size_t at = rlen;

		put(&r, sizeof(r));
		if (i % 2) {
			uint16_t l = 5;

			put(&l, 2);
			put("hello", 5);
		} else {
			int32_t a = -i;
			uint64_t b = (uint64_t)i;

			put(&a, 4);
			put(&b, 8);
		}
		r.len = (uint32_t)(rlen - at);
		memcpy(reply + at, &r, sizeof(r));
		pad8();
	}
	h.f.len = (uint32_t)(rlen - start);
	memcpy(reply + start, &h, sizeof(h));
}

static void make_reply(void)
{
	static const uint8_t c0[] = { KK_RAW_INT, KK_RAW_UINT }, c1[] = { KK_RAW_FLOAT },
			     c2[] = { KK_RAW_STRING };
	struct kk_raw_head hd = { { KK_RAW_HEAD, sizeof(hd) }, KK_RAW_VERSION, 77, 1000000000ll };

	rlen = 0;
	put(&hd, sizeof(hd));
	class_frame(0, "ints", c0, 2);
	class_frame(1, "floats", c1, 1);
	class_frame(2, "strings", c2, 1);
	ring_frame(78, 6, 0);
	ring_frame(79, 5, 3);
}

/* One change of @b (@n bytes) at random; the new length. */
static size_t mutate(unsigned char *b, size_t n)
{
	static const uint32_t extremes[] = { 0, 1, 7, 8, 23, 24, 0xffff, 0x7fffffff, 0xfffffff8,
					     0xffffffff };
	size_t at = (size_t)(rnd() % n);
	uint32_t v = extremes[rnd() % (sizeof(extremes) / sizeof(extremes[0]))];

	switch (rnd() % 4) {
	case 0:
		b[at] ^= (unsigned char)(1u << (rnd() % 8));
		break;
	case 1:		/* a 32-bit field (lengths, counts, ids) set to an extreme */
		at &= ~(size_t)3;
		if (at + 4 <= n)
			memcpy(b + at, &v, 4);
		break;
	case 2:		/* a 16-bit one (string lengths, name lengths, counts) */
		at &= ~(size_t)1;
		if (at + 2 <= n)
			memcpy(b + at, &v, 2);
		break;
	default:	/* cut short */
		return at;
	}
	return n;
}

int main(int argc, char **argv)
{
	struct kkr_writer w = { &kkr_ctf_ops, NULL, 0 };
	struct kkr_pinfo p = { .proc = { "", 77, 77, "fuzz" } };
	struct kkr_opts o = { 0 };
	struct kkr_raw *r;
	uint64_t utc;
	long iters;
	bool bad;

	if (argc != 4) {
		fprintf(stderr, "usage: record_raw_fuzz DIR ITERATIONS SEED\n");
		return 2;
	}
	iters = atol(argv[2]);
	rng = strtoull(argv[3], NULL, 10) | 1;
	kkr.opts = &o;
	if (w.ops->open(&w, argv[1]) || !(r = kkr_raw_new(kkr_ctf_of(&w), &p)))
		return 1;
	make_reply();
	for (long i = 0; i < iters; i++) {
		unsigned char *b = malloc(rlen);
		size_t n = rlen;

		memcpy(b, reply, rlen);
		for (int k = 1 + (int)(rnd() % 3); k-- && n;)
			n = mutate(b, n);
		if (kkr_raw_take(r, b, n, &bad, &utc)) {
			fprintf(stderr, "record_raw_fuzz: iteration %ld: the trace failed\n", i);
			return 1;
		}
		free(b);
	}
	uint64_t before = kkr.events;
	unsigned char *b = malloc(rlen);

	memcpy(b, reply, rlen);
	if (kkr_raw_take(r, b, rlen, &bad, &utc) || !utc || bad || kkr.events != before + 11) {
		fprintf(stderr, "record_raw_fuzz: the valid reply: bad %d, %llu events\n", bad,
			(unsigned long long)(kkr.events - before));
		return 1;
	}
	free(b);
	kkr_raw_free(r);
	return w.ops->close(&w) ? 1 : 0;
}
