// SPDX-License-Identifier: MIT
/*
 * kkctl record's raw decoder (tools/kkctl/record_rawdec.c: trace_pipe_raw
 * into the json path's records, for jsonl, text and perfetto) fed hostile
 * replies (test/scripts/kkctl_record_rawdec_fuzz.sh): built with its
 * sources (mk/record_rawdec.mk), run under ASan in the sanitizer pass.
 *
 *   record_rawdec_fuzz ITERATIONS SEED
 *
 * Makes a valid reply (a HEAD, three CLASS frames whose formats have every
 * kind of field, flags, widths, %%, %m and a record cut short; RING frames of
 * two threads, one with lost records), checks what the decoder makes of it,
 * then ITERATIONS times decodes a copy changed at random (bytes flipped,
 * a length, a count, a class id or a string length set to an extreme, a
 * byte made a format character, the reply cut short), each in a buffer of
 * exactly its size so that ASan sees a read past it, reading every string
 * of every record it gives; then the valid reply once more.  Exit 0 when
 * every call returned and both valid replies gave what they should.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug/trace_raw.h"
#include "raw_reply.h"
#include "record_int.h"

#include "record_stubs.h"

static void put_str(const char *s)
{
	uint16_t l = (uint16_t)strlen(s);

	put(&l, 2);
	put(s, l);
}

/* Record @i's values: class @i % 3's. */
static uint32_t values(int i)
{
	uint32_t cls = (uint32_t)(i % 3);
	int32_t v4 = -i, c = 'A' + i;
	uint64_t v8 = (uint64_t)i * 1000, ptr = 0x1000;
	uint32_t x = 0xff;
	double d = 1.5 * i;

	if (cls == 0) {
		put(&v4, 4);
		put(&v8, 8);
		put(&c, 4);
		put(&ptr, 8);
		put(&x, 4);
	} else if (cls == 1) {
		put(&d, 8);
		put_str(i % 2 ? "caf\xc3\xa9" : "bad\xff");
		put_str("No such file or directory");
		put_str("abc");
	} else {
		put(&v4, 4);
	}
	return cls;
}

static void make_reply(void)
{
	static const struct field c0[] = {
		{ KK_RAW_INT, 4, "i" }, { KK_RAW_UINT, 8, "u" }, { KK_RAW_CHAR, 4, "c" },
		{ KK_RAW_PTR, sizeof(void *), "p" }, { KK_RAW_UINT, 4, "x" },
	}, c1[] = {
		{ KK_RAW_FLOAT, 8, "f" }, { KK_RAW_STRING, 0, "s" }, { KK_RAW_STRING, 0, "m" },
		{ KK_RAW_STRING, 0, "w" },
	}, c2[] = { { KK_RAW_INT, 4, "a" } };
	struct kk_raw_head hd = { { KK_RAW_HEAD, sizeof(hd) }, KK_RAW_VERSION, 77, 1000000000ll,
				  2000000 };

	rlen = 0;
	put(&hd, sizeof(hd));
	class_frame(0, "fn", "i=%d u=%lu c=%c p=%p x=%hhx", c0, 5);
	class_frame(1, "fn", "f=%.2f s=%s m=%m pct=100%% w=[%-6.3s]", c1, 4);
	class_frame(2, "fn", "a=%+5d wide=%ls after=%d", c2, 1);
	ring_frame(78, 6, 0, values);
	ring_frame(79, 5, 3, values);
}

/* What the decoder gave: every string read through, the valid reply's lines kept. */
static size_t nlines, nlost, sum;
static char first[3][256];

static int take(void *arg, const struct kkr_line *l)
{
	const char *s[] = { l->comm, l->module, l->function, l->file, l->format, l->message };

	(void)arg;
	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++)
		sum += strlen(s[i]);
	for (size_t i = 0; i < l->nargs; i++) {
		sum += strlen(l->args[i].name);
		if (l->args[i].type == KKR_STRING)
			sum += strlen(l->args[i].v.s);
	}
	if (l->kind == KKR_LOST) {
		nlost += l->count;
		return 0;
	}
	nlines++;
	if (l->mono < 3 * 1000000ull && l->tid == 78)
		snprintf(first[l->mono / 1000000], sizeof(first[0]), "%s|%zu", l->message, l->nargs);
	return 0;
}

/*
 * The valid reply: 11 records, 3 lost, the first three messages as printf
 * makes them; its time thread 79's last record (4 ms, thread 78's is 5 ms),
 * its complete the head's (2 ms) in wall-clock time.
 */
static int check_valid(struct kkr_rawdec *d, const char *when)
{
	static const char *const want[3] = {
		"i=0 u=0 c=A p=0x1000 x=ff|5",
		"f=1.50 s=caf\xc3\xa9 m=No such file or directory pct=100% w=[abc   ]|4",
		"a=   -2 wide=%ls after=%d|1",
	};
	unsigned char *b = malloc(rlen);
	uint64_t last;
	bool bad;

	nlines = nlost = 0;
	memset(first, 0, sizeof(first));
	memcpy(b, reply, rlen);
	if (kkr_rawdec_take(d, b, rlen, &bad, take, NULL, &last) || bad || nlines != 11 ||
	    nlost != 3 || last != 1000000000ull + 4000000ull ||
	    kkr_rawdec_complete(d) != 1000000000ull + 2000000ull) {
		fprintf(stderr, "record_rawdec_fuzz: %s valid reply: bad %d, %zu records, %zu lost, "
			"time %llu, complete %llu\n", when, bad, nlines, nlost,
			(unsigned long long)last, (unsigned long long)kkr_rawdec_complete(d));
		return 1;
	}
	free(b);
	for (int i = 0; i < 3; i++)
		if (strcmp(first[i], want[i])) {
			fprintf(stderr, "record_rawdec_fuzz: %s valid reply: record %d is '%s', not '%s'\n",
				when, i, first[i], want[i]);
			return 1;
		}
	return 0;
}

/* The valid reply with the head of the first release (no complete): the
 * same records, no complete. */
static int check_v1(struct kkr_rawdec *d)
{
	unsigned char *b = malloc(rlen - (sizeof(struct kk_raw_head) - KK_RAW_HEAD_V1));
	uint32_t v1 = KK_RAW_HEAD_V1;
	size_t n = rlen - (sizeof(struct kk_raw_head) - KK_RAW_HEAD_V1);
	uint64_t last;
	bool bad;

	memcpy(b, reply, KK_RAW_HEAD_V1);
	memcpy(b + 4, &v1, 4);	/* (the frame's length) */
	memcpy(b + KK_RAW_HEAD_V1, reply + sizeof(struct kk_raw_head), n - KK_RAW_HEAD_V1);
	nlines = nlost = 0;
	if (kkr_rawdec_take(d, b, n, &bad, take, NULL, &last) || bad || nlines != 11 ||
	    kkr_rawdec_complete(d)) {
		fprintf(stderr, "record_rawdec_fuzz: a first-release head: bad %d, %zu records, "
			"complete %llu\n", bad, nlines, (unsigned long long)kkr_rawdec_complete(d));
		return 1;
	}
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	struct kkr_rawdec *d;
	uint64_t last;
	long iters;
	bool bad;

	if (argc != 3) {
		fprintf(stderr, "usage: record_rawdec_fuzz ITERATIONS SEED\n");
		return 2;
	}
	iters = atol(argv[1]);
	rng = strtoull(argv[2], NULL, 10) | 1;
	if (!(d = kkr_rawdec_new(77)))
		return 1;
	make_reply();
	if (check_valid(d, "the first") || check_v1(d))
		return 1;
	for (long i = 0; i < iters; i++) {
		unsigned char *b = malloc(rlen);
		size_t n = rlen;

		memcpy(b, reply, rlen);
		for (int k = 1 + (int)(rnd() % 3); k-- && n;)
			n = mutate(b, n, "%*.0123456789-+#lhLqjztsdcpfnm$");
		if (kkr_rawdec_take(d, b, n, &bad, take, NULL, &last)) {
			fprintf(stderr, "record_rawdec_fuzz: iteration %ld: it stopped\n", i);
			return 1;
		}
		free(b);
	}
	if (check_valid(d, "the last"))
		return 1;
	kkr_rawdec_free(d);
	printf("%zu\n", sum);	/* (the strings were read) */
	return 0;
}
