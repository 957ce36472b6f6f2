// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_pipe_raw: the records of the trace ring as binary
 * frames (trace_raw.h), for a reader that moves them to a file without
 * work per record (kkctl record --format ctf, issue 39).  It is
 * trace_pipe_json's consuming read (the same position, wait, lease, thread
 * filter and trust), sent as the ring holds the records: each record's
 * header is made anew (its site and format pointers replaced by a class id
 * of the reply: no address of the process is sent, they would defeat ASLR
 * for the reader; its stamp as CLOCK_MONOTONIC ns), its packed values are
 * copied (a class whose only values besides plain ones are %s strings too,
 * by their lengths).  A class whose values a fixed layout cannot describe
 * is re-packed record by record: a '*' width or precision is dropped, %hh
 * and %h are narrowed as printf does, a long double is sent as a double,
 * %m as the text of its errno, a NULL string as "(null)".  docs/tracing.md, "The raw
 * stream", has the whole contract.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/trace_int.h"
#include "dynamic_debug/trace_raw.h"

/*
 * At most this much a reply (one record more if a single one is larger;
 * less if the client's socket takes less at once: kk_control_reply_room()),
 * and this much of the rings copied, shared by the rings with records
 * (kk_dd_tr_read_rings()): what is left stays for the next read.  With two
 * threads writing 1 M events/s, a copy of half of it lost 42 % of the
 * records to overwrites, a whole one 18 % (docs/results.md).  A read sends
 * each ring's records in ring order, a ring after the other: no sort across
 * threads (kkctl writes a stream per thread).
 */
#define RAW_READ_MAX	(1024u << 10)
/*
 * But a session's first read, and a process's, is at most this, and each
 * read after one that was full may take RAW_READ_GROW times the last, up to
 * RAW_READ_MAX.  The first read is what a tracer waits for before its first
 * event is on disk: a whole 1 MiB of a busy ring took 5 to 10 ms to copy
 * and send here, and kkctl as long again to decode.  A read that was not
 * full keeps the room it had: the rings held less than it.
 */
#define RAW_READ_FIRST	(64u << 10)
#define RAW_READ_GROW	4u
#define RAW_NAME	64
/*
 * The time a read began is a bound for the records of other threads less
 * this: a stamp taken by one CPU may be a little behind one taken by
 * another (walk_copy()), and a writer's time stamp counter read is not
 * ordered after its store of the reservation.  Both are well under a
 * microsecond; a reader that had no bound held 2 ms.  (A bound from a
 * ring's own order, a thread's records one after the other, needs none.)
 */
#define RAW_COMPLETE_SLACK_NS	100000u

#define ROUND8(n)	(((n) + 7) & ~(size_t)7)

/* One conversion of a class: how its value goes out. */
struct rconv {
	struct conv cv;
	uint8_t kind, size;		/* kind 0: nothing goes out (%%, %n) */
};

/* A class of a read: a site's format packed up to @nconv conversions. */
struct rclass {
	const struct _ddebug *dp;
	const char *fmt;
	unsigned int nconv;
	bool plain;			/* its values go out as they are packed */
	size_t fixed;			/* plain: their bytes */
	/*
	 * Not plain, but its values still go out as packed unless a string
	 * is NULL (only %s strings besides plain values): the fixed bytes
	 * before each of its @nstr strings, and after the last.  NULL: it is
	 * re-packed.
	 */
	unsigned int nstr;
	uint16_t *gap;
	struct rconv *c;
};

struct raw_read {
	struct snap *s;
	struct tr_conv tc;
	int32_t pid;
	struct rclass *cls;
	size_t ncls, ccap;
	size_t *hash, hcap;		/* 1 + index into cls, 0 empty */
	struct kk_buf frames;		/* the CLASS frames */
	const struct trec *last;	/* the previous record's key, and its class (-1 bad) */
	int last_cls;
};

/* ---- output -------------------------------------------------------------------------------- */

/* Room for @n more bytes at once, grown by half at least; false: no memory (kk_buf's error set). */
static bool raw_reserve(struct kk_buf *b, size_t n)
{
	size_t cap = b->len + n + 1;
	char *p;

	if (b->error)
		return false;
	if (b->data && b->cap - b->len > n)
		return true;
	cap = cap > b->cap + b->cap / 2 ? cap : b->cap + b->cap / 2;
	p = realloc(b->data, cap);
	if (!p) {
		b->error = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

/* @n bytes at the end of @b, zeroed (reserved before). */
static unsigned char *raw_take(struct kk_buf *b, size_t n)
{
	unsigned char *p = (unsigned char *)b->data + b->len;

	memset(p, 0, n);
	b->len += n;
	return p;
}

/* ---- classes ------------------------------------------------------------------------------- */

/* The kind and size of @cv's value as it goes out; kind 0: none. */
static void conv_out(struct rconv *rc)
{
	const struct conv *cv = &rc->cv;

	rc->kind = 0;
	rc->size = 0;
	if (!cv->c || cv->c == '%' || cv->c == 'n')
		return;
	if (strchr("di", cv->c)) {
		rc->kind = KK_RAW_INT;
		rc->size = (uint8_t)tr_int_size(cv->lmod);
	} else if (strchr("uxXo", cv->c)) {
		rc->kind = KK_RAW_UINT;
		rc->size = (uint8_t)tr_int_size(cv->lmod);
	} else if (cv->c == 'c') {
		rc->kind = KK_RAW_CHAR;
		rc->size = sizeof(int);
	} else if (cv->c == 'p') {
		rc->kind = KK_RAW_PTR;
		rc->size = sizeof(void *);
	} else if (strchr("eEfFgGaA", cv->c)) {
		rc->kind = KK_RAW_FLOAT;
		rc->size = sizeof(double);
	} else if (cv->c == 's' || cv->c == 'm') {
		rc->kind = KK_RAW_STRING;
	}
}

/* Does @rc's value go out as it is packed (no star, no narrowing, nothing re-made)? */
static bool conv_plain(const struct rconv *rc)
{
	const struct conv *cv = &rc->cv;

	if (cv->width == -2 || cv->prec == -2 || rc->kind == KK_RAW_STRING)
		return false;
	if ((rc->kind == KK_RAW_INT || rc->kind == KK_RAW_UINT) &&
	    (cv->lmod == LM_HH || cv->lmod == LM_H))
		return false;
	return !(rc->kind == KK_RAW_FLOAT && cv->lmod == LM_BIGL);
}

/* @n bytes of @s at the end of @b. */
static void raw_put(struct kk_buf *b, const void *s, size_t n)
{
	if (raw_reserve(b, n))
		memcpy(raw_take(b, n), s, n);
}

/* The CLASS frame of @k (id @id) into rr->frames, its fields named as trace_pipe_json names them. */
static void class_frame(struct raw_read *rr, const struct rclass *k, uint32_t id)
{
	const struct _ddebug *dp = k->dp;
	const char *str[4] = { dp->modname ? dp->modname : "?", dp->function,
			       kk_dd_rel_name(dp->filename), k->fmt };
	struct kk_raw_class h = { { KK_RAW_CLASS, 0 }, id, dp->lineno, 0, { 0 }, 0 };
	struct kk_buf *b = &rr->frames;
	size_t start = b->len;
	const char *seg = k->fmt;
	char name[RAW_NAME];

	raw_put(b, &h, sizeof(h));
	for (int i = 0; i < 4; i++) {
		size_t n = strlen(str[i]);

		if (i == 3 && n && str[i][n - 1] == '\n')
			n--;	/* as trace_pipe_json's "format" */
		h.slen[i] = (uint16_t)(n < UINT16_MAX ? n : UINT16_MAX);
		raw_put(b, str[i], h.slen[i]);
	}
	for (unsigned int i = 0; i < k->nconv; i++) {
		struct kk_raw_field fl = { k->c[i].kind, k->c[i].size, 0 };

		if (!fl.kind)	/* (%% and %n: the next name's text runs on, as in trace_pipe_json) */
			continue;
		kk_dd_tr_arg_name(seg, k->c[i].cv.start, h.nfields++, name, sizeof(name));
		seg = k->c[i].cv.end;
		fl.name_len = (uint16_t)strlen(name);
		raw_put(b, &fl, sizeof(fl));
		raw_put(b, name, fl.name_len);
	}
	h.f.len = (uint32_t)ROUND8(b->len - start);
	if (raw_reserve(b, h.f.len - (b->len - start))) {
		raw_take(b, h.f.len - (b->len - start));
		memcpy(b->data + start, &h, sizeof(h));
	}
}

static size_t key_hash(const struct _ddebug *dp, const char *fmt, unsigned int nconv)
{
	uint64_t h = ((uintptr_t)dp ^ (uintptr_t)fmt * 31u ^ nconv) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32);
}

/* A class's conversions: the first @nconv of @fmt (NULL: *@err -ENOMEM, or a bad record). */
static struct rconv *class_convs(struct rclass *k, int *err)
{
	struct rconv *c = calloc(k->nconv ? k->nconv : 1, sizeof(*c));
	const char *p = k->fmt, *q;

	*err = c ? 0 : -ENOMEM;
	if (!c)
		return NULL;
	k->plain = true;
	k->fixed = 0;
	for (unsigned int i = 0; i < k->nconv; i++) {
		if (!(q = strchr(p, '%'))) {	/* more than the format has: a bad record */
			free(c);
			return NULL;
		}
		p = kk_dd_tr_parse_conv(q, &c[i].cv);
		conv_out(&c[i]);
		if (c[i].cv.c && c[i].cv.c != '%' && c[i].cv.c != 'n' && !c[i].kind) {
			free(c);	/* a conversion trace_pipe_json does not type either */
			return NULL;
		}
		k->plain &= conv_plain(&c[i]);
		k->fixed += c[i].size;
	}
	return c;
}

/* Can a class that is not plain go out as packed (see struct rclass)?  Its gaps.  False: no memory. */
static bool class_gaps(struct rclass *k)
{
	unsigned int ns = 0;

	for (unsigned int i = 0; i < k->nconv; i++) {
		const struct rconv *rc = &k->c[i];

		if (rc->kind == KK_RAW_STRING && rc->cv.c == 's' && rc->cv.width != -2 &&
		    rc->cv.prec != -2)
			ns++;
		else if (!conv_plain(rc))
			return true;	/* re-packed */
	}
	if (!(k->gap = calloc(ns + 1, sizeof(*k->gap))))
		return false;
	for (unsigned int i = 0; i < k->nconv; i++) {
		if (k->c[i].kind == KK_RAW_STRING)
			k->nstr++;
		else
			k->gap[k->nstr] = (uint16_t)(k->gap[k->nstr] + k->c[i].size);
	}
	return true;
}

static bool hash_grow(struct raw_read *rr)
{
	size_t cap = rr->hcap ? 2 * rr->hcap : 64, *h;

	if (2 * (rr->ncls + 1) <= rr->hcap)
		return true;
	if (!(h = calloc(cap, sizeof(*h))))
		return false;
	free(rr->hash);
	rr->hash = h;
	rr->hcap = cap;
	for (size_t i = 0; i < rr->ncls; i++) {
		size_t j = key_hash(rr->cls[i].dp, rr->cls[i].fmt, rr->cls[i].nconv);

		while (h[j & (cap - 1)])
			j++;
		h[j & (cap - 1)] = i + 1;
	}
	return true;
}

/* The class of @h, made (and its frame) if new: its index; -1 a bad record; -ENOMEM. */
static int class_of(struct raw_read *rr, const struct trec *h)
{
	size_t j = key_hash(h->desc, h->fmt, h->nconv);
	struct rclass *k;

	for (; rr->hcap && rr->hash[j & (rr->hcap - 1)]; j++) {
		k = &rr->cls[rr->hash[j & (rr->hcap - 1)] - 1];
		if (k->dp == h->desc && k->fmt == h->fmt && k->nconv == h->nconv)
			return (int)(k - rr->cls);
	}
	int err;

	if (!hash_grow(rr))
		return -ENOMEM;
	if (rr->ncls == rr->ccap) {
		size_t cap = rr->ccap ? 2 * rr->ccap : 32;
		struct rclass *v = realloc(rr->cls, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		rr->cls = v;
		rr->ccap = cap;
	}
	k = &rr->cls[rr->ncls];
	*k = (struct rclass){ .dp = h->desc, .fmt = h->fmt, .nconv = h->nconv };
	if (!(k->c = class_convs(k, &err)))
		return err ? err : -1;
	if (!k->plain && !class_gaps(k)) {
		free(k->c);
		return -ENOMEM;
	}
	class_frame(rr, k, (uint32_t)rr->ncls);
	for (j = key_hash(h->desc, h->fmt, h->nconv); rr->hash[j & (rr->hcap - 1)]; j++)
		;
	rr->hash[j & (rr->hcap - 1)] = ++rr->ncls;
	return (int)rr->ncls - 1;
}

static void raw_read_free(struct raw_read *rr)
{
	for (size_t i = 0; i < rr->ncls; i++) {
		free(rr->cls[i].c);
		free(rr->cls[i].gap);
	}
	free(rr->cls);
	free(rr->hash);
	kk_buf_free(&rr->frames);
}

/* ---- records ------------------------------------------------------------------------------- */

/* Where a re-packed value goes: @w NULL only counts. */
struct repack {
	unsigned char *w;
	size_t n;
};

static void rp_put(struct repack *o, const void *v, size_t n)
{
	if (o->w)
		memcpy(o->w + o->n, v, n);
	o->n += n;
}

static bool rp_string(struct repack *o, const struct conv *cv, struct cursor *c)
{
	char num[24];
	const char *s = "(null)";
	uint16_t l;
	int e;

	if (cv->c == 'm') {
		if (!tr_take(c, &e, sizeof(e)))
			return false;
		s = kk_dd_tr_errno_text(e, num, sizeof(num));
	} else {
		if (!tr_take(c, &l, sizeof(l)))
			return false;
		if (l != UINT16_MAX) {	/* (UINT16_MAX: NULL, what glibc prints) */
			if (c->left < l)
				return false;
			rp_put(o, &l, sizeof(l));
			rp_put(o, c->d, l);
			c->d += l;
			c->left -= l;
			return true;
		}
	}
	l = (uint16_t)strlen(s);
	rp_put(o, &l, sizeof(l));
	rp_put(o, s, l);
	return true;
}

/* One value of a class that is not plain, as it goes out. */
static bool rp_value(struct repack *o, const struct rconv *rc, struct cursor *c)
{
	unsigned char v[sizeof(long double)];
	unsigned long long u;
	long double ld;
	bool neg;

	if (rc->kind == KK_RAW_STRING)
		return rp_string(o, &rc->cv, c);
	if ((rc->kind == KK_RAW_INT || rc->kind == KK_RAW_UINT) && rc->size == 4) {
		int32_t i;

		if (!kk_dd_tr_int_value(&rc->cv, c, &u, &neg))	/* (narrowed as printf) */
			return false;
		i = (int32_t)(neg ? 0u - (uint32_t)u : (uint32_t)u);
		rp_put(o, &i, sizeof(i));
		return true;
	}
	if (rc->kind == KK_RAW_FLOAT && rc->cv.lmod == LM_BIGL) {
		double d;

		if (!tr_take(c, &ld, sizeof(ld)))
			return false;
		d = (double)ld;
		rp_put(o, &d, sizeof(d));
		return true;
	}
	if (!tr_take(c, v, rc->size))
		return false;
	rp_put(o, v, rc->size);
	return true;
}

/* The values of @h (of class @k) as they go out.  False: the data ends short. */
static bool repack(const struct rclass *k, const struct trec *h, struct repack *o)
{
	struct cursor c = { (const unsigned char *)(h + 1), h->len - TR_HDR };
	int star;

	for (unsigned int i = 0; i < k->nconv; i++) {
		const struct rconv *rc = &k->c[i];

		if ((rc->cv.width == -2 && !tr_take(&c, &star, sizeof(star))) ||
		    (rc->cv.prec == -2 && !tr_take(&c, &star, sizeof(star))))
			return false;
		if (rc->kind && !rp_value(o, rc, &c))
			return false;
	}
	return true;
}

/*
 * The bytes of @h's values when they go out as they are packed: a plain
 * class's fixed size, or a scanned class's fixed runs and strings by their
 * lengths, plus 1.  0: they cannot (a class that is re-packed, a NULL
 * string, or data short: repack() decides).
 */
static size_t values_len(const struct rclass *k, const struct trec *h)
{
	const unsigned char *d = (const unsigned char *)(h + 1);
	size_t left = h->len - TR_HDR, n = 0;
	uint16_t l;

	if (k->plain)
		return k->fixed <= left ? k->fixed + 1 : 0;
	if (!k->gap)
		return 0;
	for (unsigned int i = 0; i < k->nstr; i++) {
		n += k->gap[i];
		if (n + sizeof(l) > left)
			return 0;
		memcpy(&l, d + n, sizeof(l));
		n += sizeof(l) + l;
		if (l == UINT16_MAX || n > left)
			return 0;
	}
	n += k->gap[k->nstr];
	return n <= left ? n + 1 : 0;
}

/* ---- the read ------------------------------------------------------------------------------ */

/* A read's output: the reply, where the RING frame being made begins, its thread. */
struct raw_out {
	struct kk_buf *b;
	size_t frame;			/* 0: none open */
	uint32_t nrec;
	int32_t tid;
	size_t total;			/* records in the closed frames */
	size_t start;			/* where the reply begins in @b */
	size_t cap;			/* its bound (RAW_READ_MAX, or what the socket takes) */
	uint64_t unsent;		/* the stamp of the first record copied and left for
					 * the next read (UINT64_MAX: none) */
};

/* Open a RING frame for @sr's thread @tid with @lost (room checked). */
static bool ring_open(struct raw_out *o, const struct snap_ring *sr, pid_t tid, uint64_t lost)
{
	struct kk_raw_ring f = { { KK_RAW_RING, sizeof(f) }, tid, 0, lost, { 0 } };
	char comm[16];
	const char *name = kk_dd_tr_comm_of(sr, tid, comm, sizeof(comm));

	if (!raw_reserve(o->b, sizeof(f)))
		return false;
	memcpy(f.comm, name, strnlen(name, sizeof(f.comm)));
	o->frame = o->b->len;
	o->nrec = 0;
	o->tid = tid;
	memcpy(raw_take(o->b, sizeof(f)), &f, sizeof(f));
	return true;
}

/* Close the open RING frame: its length and its count of records. */
static void ring_close(struct raw_out *o)
{
	struct kk_raw_ring *f;

	if (!o->frame)
		return;
	f = (void *)(o->b->data + o->frame);
	if (!o->nrec && !f->lost)
		o->b->len = o->frame;	/* (its records could not go: no frame) */
	f->f.len = (uint32_t)(o->b->len - o->frame);
	f->nrec = o->nrec;
	o->total += o->nrec;
	o->frame = 0;
}

/*
 * Record @h (class @k) at the end of the open frame, walked once: values
 * that go out as packed are copied, the others re-packed.  0 or -ENOMEM;
 * 1: it cannot go (its data ends short), nothing written.
 */
static int rec_out(struct raw_out *o, const struct raw_read *rr, const struct rclass *k,
		   const struct trec *h)
{
	size_t n = values_len(k, h), len;
	struct repack rp = { NULL, 0 };
	bool copy = n != 0;
	unsigned char *p;

	if (!copy && !repack(k, h, &rp))
		return 1;
	n = copy ? n - 1 : rp.n;
	len = ROUND8(sizeof(struct kk_raw_rec) + n);
	if (!raw_reserve(o->b, len))
		return -ENOMEM;
	p = (unsigned char *)o->b->data + o->b->len;
	memset(p + len - 8, 0, 8);	/* the padding (the values overwrite what is theirs) */
	struct kk_raw_rec r = { (uint32_t)(sizeof(r) + n), (uint32_t)(k - rr->cls),
				kk_dd_tr_conv_ns(&rr->tc, h->ts), h->tid, rr->pid };

	memcpy(p, &r, sizeof(r));
	if (copy) {
		memcpy(p + sizeof(r), h + 1, n);
	} else {
		rp = (struct repack){ p + sizeof(r), 0 };
		(void)repack(k, h, &rp);	/* (it did, measured) */
	}
	o->b->len += len;
	o->nrec++;
	return 0;
}
/* The class of @h: the previous record's when it has its site, format and count (-1 bad). */
static int rec_class(struct raw_read *rr, const struct trec *h)
{
	const struct trec *l = rr->last;

	if (l && l->desc == h->desc && l->fmt == h->fmt && l->nconv == h->nconv)
		return rr->last_cls;
	rr->last = h;
	rr->last_cls = kk_dd_site_known_locked(h->desc) ? class_of(rr, h) : -1;
	return rr->last_cls;
}

/* The reply is full: the next record is the next read's (one record at least goes). */
static bool reply_full(const struct raw_out *o, const struct trec *h)
{
	return (o->total || o->nrec) && o->b->len - o->start + h->len > o->cap;
}

/* The stamp of the first record of @sr's copy @c (UINT64_MAX: none). */
static uint64_t first_stamp(const struct snap_ring *sr, const unsigned char *c)
{
	for (uint64_t p = sr->skip.pos; sr->in_buffer && p < sr->all.pos;) {
		const struct trec *h = (const void *)(c + (p - sr->copy_pos));

		if (!(h->flags & TR_PAD))
			return h->ts;
		p += h->len;
	}
	return UINT64_MAX;
}

/* A ring's records from @stamp on are left for the next read (its order
 * is its records' time: walk_copy()). */
static void left_from(struct raw_out *o, uint64_t stamp)
{
	if (stamp < o->unsent)
		o->unsent = stamp;
}

/*
 * Ring @sr's records (copy @c), walked once in ring order: a RING frame per
 * run of one thread (a ring passes to a new thread when its own exits), its
 * lost with the first; where it stops, its consumer position.  0; 1: the
 * reply is full, the rest is the next read's; -ENOMEM.
 */
static int ring_out(struct raw_out *o, struct raw_read *rr, struct snap_ring *sr,
		    const unsigned char *c)
{
	uint64_t lost = sr->shown ? sr->lost : 0, p = sr->skip.pos, seq = sr->skip.seq;
	const struct trec *h;
	int k, ret = 0;

	for (; sr->in_buffer && p < sr->all.pos && ret >= 0; p += h->len) {
		h = (const void *)(c + (p - sr->copy_pos));
		if (h->flags & (TR_PAD | TR_HIDDEN)) {
			seq += !(h->flags & TR_PAD);
			continue;
		}
		if (reply_full(o, h) && lost) {	/* (its lost not said yet: the ring moves nowhere) */
			sr->all_ok = false;
			sr->lost = 0;
			left_from(o, first_stamp(sr, c));
			return 1;
		}
		if (reply_full(o, h)) {
			left_from(o, h->ts);
			break;
		}
		if ((k = rec_class(rr, h)) == -ENOMEM)
			return -ENOMEM;
		seq++;
		if (k < 0)
			continue;	/* (a bad record: not sent, consumed) */
		if (o->frame && o->tid != h->tid)
			ring_close(o);
		if (!o->frame && !ring_open(o, sr, h->tid, lost))
			return -ENOMEM;
		lost = 0;
		ret = rec_out(o, rr, &rr->cls[k], h);
	}
	if (ret < 0 || (lost && !ring_open(o, sr, sr->tid, lost)))
		return -ENOMEM;
	ring_close(o);
	sr->upto = sr->in_buffer && p < sr->all.pos ? (struct pipe_at){ p, seq } : sr->all;
	sr->took = sr->in_buffer != 0;
	return sr->in_buffer && p < sr->all.pos;
}

/*
 * The RING frames of every ring, then the CLASS frames their records use put
 * before them (a memmove of the reply: the classes are known only at the
 * end of the walk).  Under the sites lock (a site's strings are read only
 * while its object is loaded).  A ring not reached moves nowhere.
 */
static int raw_rings(struct raw_out *o, struct raw_read *rr)
{
	struct snap *s = rr->s;
	size_t i, at = o->b->len, need = 0;
	int ret = 0;

	for (i = 0; i < s->nrings; i++)	/* (what goes out is about what was copied, or less) */
		need += s->rings[i].copy_len + sizeof(struct kk_raw_ring);
	if (!raw_reserve(o->b, need))
		return -ENOMEM;
	kk_dd_sites_lock();
	for (i = 0; i < s->nrings && !ret; i++)
		ret = ring_out(o, rr, &s->rings[i], s->copies[i]);
	kk_dd_sites_unlock();
	for (; i < s->nrings; i++) {	/* (after a full reply: their lost are said next time) */
		s->rings[i].all_ok = false;
		s->rings[i].lost = 0;
		left_from(o, first_stamp(&s->rings[i], s->copies[i]));
	}
	if (ret < 0 || rr->frames.error || !raw_reserve(o->b, rr->frames.len))
		return -ENOMEM;
	memmove(o->b->data + at + rr->frames.len, o->b->data + at, o->b->len - at);
	if (rr->frames.len)
		memcpy(o->b->data + at, rr->frames.data, rr->frames.len);
	o->b->len += rr->frames.len;
	return 0;
}

/*
 * The HEAD frame's complete (see trace_raw.h): when the read began, less
 * the slack; not after a ring's bound, nor the first record the reply left.
 * (A stamp's time is the same in every later read: kk_dd_tr_conv_ns().)
 */
static uint64_t raw_complete(const struct raw_read *rr, const struct raw_out *o)
{
	uint64_t c = rr->s->complete < o->unsent ? rr->s->complete : o->unsent;
	uint64_t ns = rr->s->read_stamp ? kk_dd_tr_conv_ns(&rr->tc, rr->s->read_stamp) : 0;

	if (!c)
		return 0;
	ns = ns > RAW_COMPLETE_SLACK_NS ? ns - RAW_COMPLETE_SLACK_NS : 0;
	if (c != UINT64_MAX) {
		uint64_t ring = kk_dd_tr_conv_ns(&rr->tc, c);

		ns = ring < ns ? ring : ns;
	}
	return ns;
}

/* What the next read may take (RAW_READ_FIRST to RAW_READ_MAX; readers may race: any is fine). */
static _Atomic size_t raw_room = RAW_READ_FIRST;

void kk_dd_tr_raw_session_begun(void)
{
	atomic_store_explicit(&raw_room, RAW_READ_FIRST, memory_order_relaxed);
}

/* After a read of @room (copy @s, reply @o): one that left records lets the next take more. */
static void room_after(const struct snap *s, const struct raw_out *o, size_t room)
{
	size_t next = room * RAW_READ_GROW;
	bool full = o->unsent != UINT64_MAX;

	for (size_t i = 0; i < s->nrings && !full; i++)
		full = s->rings[i].more;	/* (its copy stopped short) */
	if (full && room < RAW_READ_MAX)
		atomic_store_explicit(&raw_room, next < RAW_READ_MAX ? next : RAW_READ_MAX,
				      memory_order_relaxed);
}

static int raw_show(struct kk_buf *out, void *priv)
{
	struct raw_read rr = { 0 };
	size_t room = atomic_load_explicit(&raw_room, memory_order_relaxed);
	/* (no larger than the client's socket takes at once: kk_control_reply_room()) */
	struct raw_out o = { out, 0, 0, 0, 0, out->len, kk_control_reply_room(room), UINT64_MAX };
	struct snap s = { 0 };
	int ret;

	(void)priv;
	kk_dd_session_touch();	/* its reader holds the session's lease (as trace_pipe_json's) */
	kk_dd_tr_pipe_wait();
	ret = kk_dd_tr_read_rings(&s, o.cap);
	rr.s = &s;
	rr.pid = (int32_t)getpid();
	kk_dd_tr_conv_setup(&rr.tc);
	if (!ret && raw_reserve(out, sizeof(struct kk_raw_head))) {
		struct kk_raw_head hd = { { KK_RAW_HEAD, sizeof(hd) }, KK_RAW_VERSION, rr.pid,
					  rr.tc.real_off, 0 };
		size_t at = out->len;

		raw_take(out, sizeof(hd));
		ret = raw_rings(&o, &rr);
		hd.complete = raw_complete(&rr, &o);
		memcpy(out->data + at, &hd, sizeof(hd));
	} else if (!ret) {
		ret = -ENOMEM;
	}
	raw_read_free(&rr);
	if (!ret && !out->error)
		room_after(&s, &o, room);
	kk_dd_tr_session_done(&s, 0, !ret && !out->error);	/* (nothing moves on an error) */
	return ret ? ret : out->error;
}

static const struct kk_control_file_ops raw_fops = {
	.show = raw_show,
};
KK_CONTROL_LIB_FILE(raw_file, "dynamic_debug/trace_pipe_raw", &raw_fops);

void kk_dd_tr_raw_init(void)
{
	kk_control_add_lib_file(&raw_file);
}
