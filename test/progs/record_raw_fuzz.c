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
#include "raw_reply.h"
#include "record_int.h"
#include "record_raw.h"

#include "record_stubs.h"
struct kkr_state kkr = { .lock = PTHREAD_MUTEX_INITIALIZER };
/* record.c's --threads: none given, every thread is wanted */
bool kkr_thread_wanted(int tid, const char *comm)
{
	(void)tid;
	(void)comm;
	return true;
}

/* Record @i's values: class 0 (int, uint) or 2 (a string). */
static uint32_t values(int i)
{
	int32_t a = -i;
	uint64_t b = (uint64_t)i;
	uint16_t l = 5;

	if (i % 2) {
		put(&l, 2);
		put("hello", 5);
		return 2;
	}
	put(&a, 4);
	put(&b, 8);
	return 0;
}

static void make_reply(void)
{
	static const struct field c0[] = { { KK_RAW_INT, 4, "aa" }, { KK_RAW_UINT, 8, "ab" } },
				  c1[] = { { KK_RAW_FLOAT, 8, "aa" } },
				  c2[] = { { KK_RAW_STRING, 0, "aa" } };
	struct kk_raw_head hd = { { KK_RAW_HEAD, sizeof(hd) }, KK_RAW_VERSION, 77, 1000000000ll, 0 };

	rlen = 0;
	put(&hd, sizeof(hd));
	class_frame(0, "ints", "x=%d", c0, 2);
	class_frame(1, "floats", "x=%d", c1, 1);
	class_frame(2, "strings", "x=%d", c2, 1);
	ring_frame(78, 6, 0, values);
	ring_frame(79, 5, 3, values);
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
			n = mutate(b, n, NULL);
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
