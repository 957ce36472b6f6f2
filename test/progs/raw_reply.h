// SPDX-License-Identifier: MIT
/*
 * What the trace_pipe_raw fuzzers share (test/progs/record_raw_fuzz.c: the
 * ctf writer's reader; record_rawdec_fuzz.c: the decoder of the other
 * formats): a reply built frame by frame in one buffer (RING frames of
 * records whose values each fuzzer puts), and the random changes made to
 * copies of it.  Included by one file of a program.
 */
#ifndef KK_TEST_RAW_REPLY_H
#define KK_TEST_RAW_REPLY_H

#include <stdint.h>
#include <string.h>

#include "dynamic_debug/trace_raw.h"

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

struct field {
	uint8_t kind, size;
	const char *name;
};

/* A CLASS frame: id @id, module "fuzz", function @fn, file "fuzz.c", format @fmt, its fields. */
static void class_frame(uint32_t id, const char *fn, const char *fmt, const struct field *f, int n)
{
	size_t start = rlen;
	struct kk_raw_class h = { { KK_RAW_CLASS, 0 }, id, 10 + id, (uint16_t)n,
				  { 4, (uint16_t)strlen(fn), 6, (uint16_t)strlen(fmt) }, 0 };

	put(&h, sizeof(h));
	put("fuzz", 4);
	put(fn, strlen(fn));
	put("fuzz.c", 6);
	put(fmt, strlen(fmt));
	for (int i = 0; i < n; i++) {
		struct kk_raw_field fl = { f[i].kind, f[i].size, (uint16_t)strlen(f[i].name) };

		put(&fl, sizeof(fl));
		put(f[i].name, fl.name_len);
	}
	pad8();
	h.f.len = (uint32_t)(rlen - start);
	memcpy(reply + start, &h, sizeof(h));
}

/*
 * A RING frame of thread @tid: @n records, lost @lost before them.  Record
 * @i is its header, then what @values(@i) puts (its values) and returns
 * (its class), padded to 8 bytes.
 */
static void ring_frame(int tid, int n, uint64_t lost, uint32_t (*values)(int i))
{
	size_t start = rlen;
	struct kk_raw_ring h = { { KK_RAW_RING, 0 }, tid, (uint32_t)n, lost, "fuzzer" };

	put(&h, sizeof(h));
	for (int i = 0; i < n; i++) {
		struct kk_raw_rec r = { 0, 0, 1000000ull * (uint64_t)i, tid, 77 };
		size_t at = rlen;

		put(&r, sizeof(r));
		r.cls = values(i);
		r.len = (uint32_t)(rlen - at);
		memcpy(reply + at, &r, sizeof(r));
		pad8();
	}
	h.f.len = (uint32_t)(rlen - start);
	memcpy(reply + start, &h, sizeof(h));
}

/*
 * One change of @b (@n bytes) at random; the new length.  @fchars: also
 * put one of these characters anywhere (formats, flags, widths), or NULL.
 */
static size_t mutate(unsigned char *b, size_t n, const char *fchars)
{
	static const uint32_t extremes[] = { 0, 1, 7, 8, 23, 24, 0xffff, 0x7fffffff, 0xfffffff8,
					     0xffffffff };
	size_t at = (size_t)(rnd() % n);
	uint32_t v = extremes[rnd() % (sizeof(extremes) / sizeof(extremes[0]))];

	switch (rnd() % (fchars ? 5 : 4)) {
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
	case 4:		/* a format character (only with @fchars: the modulus) */
		if (fchars)
			b[at] = (unsigned char)fchars[rnd() % strlen(fchars)];
		break;
	default:	/* cut short */
		return at;
	}
	return n;
}

#endif
