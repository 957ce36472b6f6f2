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
 * copied.  A class whose values a fixed layout cannot describe is re-packed
 * record by record: a '*' width or precision is dropped, %hh and %h are
 * narrowed as printf does, a long double is sent as a double, %m as the
 * text of its errno, a NULL string as "(null)".  docs/tracing.md, "The raw
 * stream", has the whole contract.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/trace_int.h"
#include "dynamic_debug/trace_raw.h"

/*
 * At most this much a read (one record more if a single one is larger):
 * what is left stays for the next read.  A ring's copy may be as large (a
 * record out is smaller than in the ring): with two threads writing 1 M
 * events/s, a copy of half of it lost 42 % of the records to overwrites, a
 * whole one 18 % (docs/results.md).  A read takes the oldest records of
 * every ring in time order.
 */
#define RAW_READ_MAX	(1024u << 10)
#define RAW_RING_COPY	RAW_READ_MAX
#define RAW_NAME	64

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
	struct rconv *c;
};

struct raw_read {
	const struct snap *s;
	struct tr_conv tc;
	int32_t pid;
	struct rclass *cls;
	size_t ncls, ccap;
	size_t *hash, hcap;		/* 1 + index into cls, 0 empty */
	struct kk_buf frames;		/* the CLASS frames */
	int *rec_cls;			/* s->v[i]'s class, -1: not sent */
	uint32_t *rec_len;		/* its bytes out */
};

/* ---- output -------------------------------------------------------------------------------- */

/* Room for @n more bytes at once; false: no memory (kk_buf's error set). */
static bool raw_reserve(struct kk_buf *b, size_t n)
{
	char *p;

	if (b->error)
		return false;
	if (b->data && b->cap - b->len > n)
		return true;
	p = realloc(b->data, b->len + n + 1);
	if (!p) {
		b->error = -ENOMEM;
		return false;
	}
	b->data = p;
	b->cap = b->len + n + 1;
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
	class_frame(rr, k, (uint32_t)rr->ncls);
	for (j = key_hash(h->desc, h->fmt, h->nconv); rr->hash[j & (rr->hcap - 1)]; j++)
		;
	rr->hash[j & (rr->hcap - 1)] = ++rr->ncls;
	return (int)rr->ncls - 1;
}

static void raw_read_free(struct raw_read *rr)
{
	for (size_t i = 0; i < rr->ncls; i++)
		free(rr->cls[i].c);
	free(rr->cls);
	free(rr->hash);
	free(rr->rec_cls);
	free(rr->rec_len);
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

/* The bytes record @h (class @k) takes out; 0: it cannot go (its data ends short). */
static size_t rec_out_len(const struct rclass *k, const struct trec *h)
{
	struct repack o = { NULL, 0 };

	if (k->plain)
		return h->len - TR_HDR >= k->fixed ? ROUND8(sizeof(struct kk_raw_rec) + k->fixed) : 0;
	return repack(k, h, &o) ? ROUND8(sizeof(struct kk_raw_rec) + o.n) : 0;
}

/* Record v (class @k, @len bytes out, reserved) at the end of @b. */
static void rec_out(struct kk_buf *b, const struct raw_read *rr, const struct rclass *k,
		    const struct trec *h, size_t len)
{
	unsigned char *p = raw_take(b, len);
	struct kk_raw_rec r = { 0, (uint32_t)(k - rr->cls), kk_dd_tr_conv_ns(&rr->tc, h->ts),
				h->tid, rr->pid };
	struct repack o = { p + sizeof(r), 0 };

	if (k->plain)
		memcpy(o.w, h + 1, o.n = k->fixed);
	else
		(void)repack(k, h, &o);	/* (it did, measured) */
	r.len = (uint32_t)(sizeof(r) + o.n);	/* (unpadded: a reader needs the values' end) */
	memcpy(p, &r, sizeof(r));
}

/* ---- the read ------------------------------------------------------------------------------ */

/*
 * Each record of s->v[0..ready) in time order: its class and its bytes
 * out, until RAW_READ_MAX.  Under the sites lock (a site's strings are
 * read only while its object is loaded).  How many of s->v were taken;
 * rr->frames.error when there was no memory.
 */
static size_t raw_classes(struct raw_read *rr, size_t *total)
{
	const struct snap *s = rr->s;
	size_t i, shown = 0;

	*total = 0;
	kk_dd_sites_lock();
	for (i = 0; i < s->ready && !rr->frames.error; i++) {
		const struct trec *h = s->v[i].h;
		int k = kk_dd_site_known_locked(h->desc) ? class_of(rr, h) : -1;
		size_t len = k < 0 ? 0 : rec_out_len(&rr->cls[k], h);

		if (k == -ENOMEM)
			rr->frames.error = -ENOMEM;
		rr->rec_cls[i] = len ? k : -1;
		rr->rec_len[i] = (uint32_t)len;
		if (!len)
			continue;
		if (shown++ && *total + len > RAW_READ_MAX)
			break;	/* the next read's */
		*total += len;
	}
	kk_dd_sites_unlock();
	return i;
}

/* A RING frame's head for @sr's thread @tid, @nrec records of @bytes. */
static void ring_head(struct kk_buf *out, const struct snap_ring *sr, pid_t tid, uint32_t nrec,
		      size_t bytes, uint64_t lost)
{
	struct kk_raw_ring f = { { KK_RAW_RING, (uint32_t)(sizeof(f) + bytes) }, tid, nrec, lost,
				 { 0 } };
	char comm[16];
	const char *name = kk_dd_tr_comm_of(sr, tid, comm, sizeof(comm));

	memcpy(f.comm, name, strnlen(name, sizeof(f.comm)));
	memcpy(raw_take(out, sizeof(f)), &f, sizeof(f));
}

/*
 * Ring @ri's records among s->v[0..k) (@idx: their indices, in order): a
 * RING frame per run of one thread (a ring passes to a new thread when its
 * own exits); its lost with the first.  Room reserved.
 */
static void ring_frames(struct kk_buf *out, const struct raw_read *rr, size_t ri,
			const size_t *idx, size_t n)
{
	const struct snap_ring *sr = &rr->s->rings[ri];
	uint64_t lost = sr->shown ? sr->lost : 0;
	size_t a = 0;

	if (!n && lost)
		ring_head(out, sr, sr->tid, 0, 0, lost);
	while (a < n) {
		pid_t tid = rr->s->v[idx[a]].h->tid;
		size_t b = a, bytes = 0;

		for (; b < n && rr->s->v[idx[b]].h->tid == tid; b++)
			bytes += rr->rec_len[idx[b]];
		ring_head(out, sr, tid, (uint32_t)(b - a), bytes, lost);
		lost = 0;
		for (; a < b; a++) {
			const struct trec *h = rr->s->v[idx[a]].h;

			rec_out(out, rr, &rr->cls[rr->rec_cls[idx[a]]], h, rr->rec_len[idx[a]]);
		}
	}
}

/* The RING frames of s->v[0..k): the records grouped by ring (in order), a counting sort. */
static int raw_rings(struct kk_buf *out, const struct raw_read *rr, size_t k)
{
	const struct snap *s = rr->s;
	size_t *at = calloc(s->nrings + 1, sizeof(*at)), *idx = malloc((k ? k : 1) * sizeof(*idx));

	if (!at || !idx) {
		free(at);
		free(idx);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k; i++)
		if (rr->rec_cls[i] >= 0)
			at[s->v[i].ring + 1]++;
	for (size_t r = 0; r < s->nrings; r++)
		at[r + 1] += at[r];
	for (size_t i = 0; i < k; i++)
		if (rr->rec_cls[i] >= 0)
			idx[at[s->v[i].ring]++] = i;
	/* (at[r] is now where ring r's run ends) */
	for (size_t r = 0, start = 0; r < s->nrings; start = at[r++])
		ring_frames(out, rr, r, idx + start, at[r] - start);
	free(at);
	free(idx);
	return 0;
}

static int raw_show(struct kk_buf *out, void *priv)
{
	struct raw_read rr = { 0 };
	struct snap s;
	size_t taken, total;
	int ret;

	(void)priv;
	ret = kk_dd_tr_session_read(&s, RAW_RING_COPY);
	if (ret)
		return ret;
	rr.s = &s;
	rr.pid = (int32_t)getpid();
	kk_dd_tr_conv_setup(&rr.tc);
	rr.rec_cls = malloc((s.ready ? s.ready : 1) * sizeof(*rr.rec_cls));
	rr.rec_len = malloc((s.ready ? s.ready : 1) * sizeof(*rr.rec_len));
	taken = 0;
	ret = -ENOMEM;
	if (rr.rec_cls && rr.rec_len) {
		taken = raw_classes(&rr, &total);
		ret = rr.frames.error;
	}
	/* the frames: HEAD, CLASS, RING (a head each, and one per thread a ring held) */
	if (!ret && raw_reserve(out, sizeof(struct kk_raw_head) + rr.frames.len + total +
				     (s.nrings + taken) * sizeof(struct kk_raw_ring))) {
		struct kk_raw_head hd = { { KK_RAW_HEAD, sizeof(hd) }, KK_RAW_VERSION, rr.pid,
					  rr.tc.real_off };

		memcpy(raw_take(out, sizeof(hd)), &hd, sizeof(hd));
		if (rr.frames.len)
			memcpy(raw_take(out, rr.frames.len), rr.frames.data, rr.frames.len);
		ret = raw_rings(out, &rr, taken);
	} else if (!ret) {
		ret = -ENOMEM;
	}
	raw_read_free(&rr);
	kk_dd_tr_session_done(&s, taken, !ret && !out->error);
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
