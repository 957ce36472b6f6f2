// SPDX-License-Identifier: MIT
/*
 * kkctl record --format jsonl, text, perfetto, the raw path: a local
 * process's dynamic_debug/trace_pipe_raw replies (src/dynamic_debug/trace_raw.h)
 * decoded into the lines the JSON path parses out of trace_pipe_json
 * (struct kkr_line), which then go through the merge as those do.  The
 * JSON path parsed some 470 bytes of JSON a record, and the endpoint
 * rendered them (issue 39); here a record is its values read by its class,
 * and its message made from its class's format as the endpoint makes it
 * (trace.c's kk_dd_tr_format_msg(): plain conversions without printf).
 *
 * The same fields, types and values as trace_pipe_json's: strings not valid
 * UTF-8 get U+FFFD for each bad byte (as the JSON is escaped), %c is its
 * byte as a number, a NaN is NAN; a string or message with a NUL byte is
 * malformed (the JSON parser refuses "\u0000").  What the raw stream does
 * not carry makes the only differences (docs/tracing.md, "The raw stream"):
 * a '*' width or precision (dropped by the endpoint) does not pad or cut
 * the message, and a message whose format ends in a conversion whose text
 * ends in a newline keeps that newline.
 *
 * Nothing of a reply is trusted: every frame's, record's and string's length
 * is checked against what holds it, a class's fields against its format's
 * conversions (kind and size), a record's values against its class; a
 * width or precision past what the endpoint parses, or a message past
 * RD_MSG_MAX, is malformed.  A frame that fails is skipped whole, a record
 * that fails alone; said once.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug/printf_conv.h"
#include "dynamic_debug/trace_raw.h"
#include "record_int.h"

#define RD_MSG_MAX	(16u << 20)	/* a message's bytes, at most */
#define ROUND8(n)	(((n) + 7) & ~(size_t)7)

/* One conversion of a class's format (a '*' width or precision, -2, is none here: not sent). */
struct dconv {
	struct conv cv;
	int field;			/* its field; -1: none (%%, %n) */
};

struct dfield {
	const char *name;
	uint8_t kind, size;
};

/* A CLASS frame decoded: its strings in @strs; the conversions whose values it has, and %%, %n. */
struct dclass {
	bool ok;
	char *strs;
	const char *module, *function, *file, *format;
	unsigned int line;
	size_t nf, ncv;
	struct dfield *f;
	struct dconv *cv;
};

/* A growing buffer; @err: it would pass RD_MSG_MAX, or no memory. */
struct dbuf {
	char *p;
	size_t len, cap;
	bool err;
};

/* A value of a record, as packed. */
struct dval {
	uint64_t u;
	double f;
	const char *s;
	size_t l;
};

struct kkr_rawdec {
	int pid;
	struct dclass *cls;		/* by the reply's ids */
	size_t ncls, nseen;		/* (nseen: this reply's CLASS frames so far) */
	int64_t real_off;		/* the first reply's (the session's: see below) */
	bool off_set;
	uint64_t complete;		/* the last reply's, wall-clock ns (0: none) */
	struct dbuf msg, out;		/* a record's message as made, its strings as sent on */
	struct dval *val;
	struct kkr_arg *args;
	size_t vcap;
	char comm[64];
	bool said_bad;
};

/* ---- buffers -------------------------------------------------------------- */

static bool db_room(struct dbuf *b, size_t n)
{
	size_t cap;
	char *p;

	if (b->err || n > RD_MSG_MAX - b->len)
		return !(b->err = true);
	if (b->len + n <= b->cap)
		return true;
	for (cap = b->cap ? b->cap : 4096; cap < b->len + n; cap *= 2)
		;
	if (!(p = realloc(b->p, cap)))
		return !(b->err = true);
	b->p = p;
	b->cap = cap;
	return true;
}

static void db_put(struct dbuf *b, const void *s, size_t n)
{
	if (n && db_room(b, n)) {
		memcpy(b->p + b->len, s, n);
		b->len += n;
	}
}

/* One conversion by printf's format @spec. */
static void db_printf(struct dbuf *b, const char *spec, ...) __attribute__((format(printf, 2, 3)));
static void db_printf(struct dbuf *b, const char *spec, ...)
{
	size_t room = b->err ? 0 : b->cap - b->len;
	va_list ap;
	int n;

	va_start(ap, spec);
	n = vsnprintf(room ? b->p + b->len : NULL, room, spec, ap);
	va_end(ap);
	if (n < 0) {
		b->err = true;
		return;
	}
	if ((size_t)n >= room) {
		if (!db_room(b, (size_t)n + 1))
			return;
		va_start(ap, spec);
		vsnprintf(b->p + b->len, (size_t)n + 1, spec, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

/*
 * @s (@n bytes) onto @b as the JSON path passes it on: a byte that is not
 * valid UTF-8 becomes U+FFFD (trace_json.c's json_strn(), then the
 * parser's unescape), and NUL-terminated.  False: a NUL byte (the JSON
 * path refuses the line), or @b failed.
 */
static bool db_text(struct dbuf *b, const char *s, size_t n)
{
	const char *end = s + n;

	while (s < end) {
		const char *run = kkr_json_run(s, end, false);
		size_t k;

		db_put(b, s, (size_t)(run - s));
		if ((s = run) == end)
			break;
		if (!*s)
			return false;
		if ((k = kkr_utf8_len((const unsigned char *)s, (size_t)(end - s)))) {
			db_put(b, s, k);
			s += k;
		} else {
			db_put(b, "\xef\xbf\xbd", 3);
			s++;
		}
	}
	db_put(b, "", 1);
	return !b->err;
}

/* ---- classes -------------------------------------------------------------- */

/* The field kind and size the endpoint sends for @cv (trace_raw.c's conv_out()). */
static void conv_kind(const struct conv *cv, uint8_t *kind, uint8_t *size)
{
	bool big = !(cv->lmod == LM_NONE || cv->lmod == LM_HH || cv->lmod == LM_H);

	*size = 0;
	if (strchr("di", cv->c))
		*kind = KK_RAW_INT, *size = big ? 8 : 4;
	else if (strchr("uxXo", cv->c))
		*kind = KK_RAW_UINT, *size = big ? 8 : 4;
	else if (cv->c == 'c')
		*kind = KK_RAW_CHAR, *size = 4;
	else if (cv->c == 'p')
		*kind = KK_RAW_PTR, *size = sizeof(void *);
	else if (strchr("eEfFgGaA", cv->c))
		*kind = KK_RAW_FLOAT, *size = 8;
	else
		*kind = KK_RAW_STRING;
}

/* The conversions of @k's format, each value one matched to the next field.  False: they disagree. */
static bool class_convs(struct dclass *k)
{
	size_t nf = 0, cap = 0;
	const char *p = k->format, *q;

	k->ncv = 0;
	while ((q = strchr(p, '%'))) {
		struct conv *cv;
		uint8_t kind, size;

		if (k->ncv == cap) {
			struct dconv *v = realloc(k->cv, (cap = cap ? 2 * cap : 8) * sizeof(*v));

			if (!v)
				return false;
			k->cv = v;
		}
		cv = &k->cv[k->ncv].cv;
		k->cv[k->ncv].field = -1;
		p = kk_dd_tr_parse_conv(q, cv);
		if (!cv->c || (cv->c != '%' && cv->c != 'n' && nf == k->nf))
			break;	/* packing stopped here: the rest as written */
		if (cv->c != '%' && cv->c != 'n') {
			conv_kind(cv, &kind, &size);
			if (k->f[nf].kind != kind || k->f[nf].size != size)
				return false;
			k->cv[k->ncv].field = (int)nf++;
		}
		k->ncv++;
	}
	return nf == k->nf;
}

static void class_clear(struct dclass *k)
{
	free(k->strs);
	free(k->f);
	free(k->cv);
	memset(k, 0, sizeof(*k));
}

/*
 * CLASS frame @fr (@len bytes, checked to be in the reply) into @k: its
 * strings (module, function, file, format, then the field names) copied as
 * the JSON path gives them.  False: a bad frame (or no memory).
 */
static bool class_decode(struct dclass *k, const unsigned char *fr, size_t len)
{
	const unsigned char *p = fr + sizeof(struct kk_raw_class), *end = fr + len;
	const char **strs[4] = { &k->module, &k->function, &k->file, &k->format };
	size_t off[4], *noff;
	struct kk_raw_class h;
	struct dbuf b = { 0 };

	memcpy(&h, fr, sizeof(h));
	k->line = h.line;
	k->nf = h.nfields;
	if (!(k->f = calloc(h.nfields ? h.nfields : 1, sizeof(*k->f))) ||
	    !(noff = calloc(h.nfields ? h.nfields : 1, sizeof(*noff))))
		return false;
	for (int i = 0; i < 4; i++) {
		off[i] = b.len;
		if ((size_t)(end - p) < h.slen[i] || !db_text(&b, (const char *)p, h.slen[i]))
			goto bad;
		p += h.slen[i];
	}
	for (size_t i = 0; i < h.nfields; i++) {
		struct kk_raw_field fl;

		if ((size_t)(end - p) < sizeof(fl))
			goto bad;
		memcpy(&fl, p, sizeof(fl));
		p += sizeof(fl);
		noff[i] = b.len;
		k->f[i].kind = fl.kind;
		k->f[i].size = fl.size;
		if ((size_t)(end - p) < fl.name_len || !db_text(&b, (const char *)p, fl.name_len))
			goto bad;
		p += fl.name_len;
	}
	k->strs = b.p;
	for (int i = 0; i < 4; i++)
		*strs[i] = k->strs + off[i];
	for (size_t i = 0; i < h.nfields; i++)
		k->f[i].name = k->strs + noff[i];
	free(noff);
	return class_convs(k);
bad:
	free(b.p);
	free(noff);
	return false;
}

/* ---- records -------------------------------------------------------------- */

/* The values of a record (@p, @n bytes) by its class into d->val.  False: they do not fit. */
static bool rec_values(struct kkr_rawdec *d, const struct dclass *k, const unsigned char *p,
		       size_t n)
{
	for (size_t i = 0; i < k->nf; i++) {
		struct dval *v = &d->val[i];
		uint16_t l;

		if (k->f[i].kind == KK_RAW_STRING) {
			if (n < sizeof(l))
				return false;
			memcpy(&l, p, sizeof(l));
			if (n - sizeof(l) < l)
				return false;
			v->s = (const char *)p + sizeof(l);
			v->l = l;
			p += sizeof(l) + l;
			n -= sizeof(l) + l;
			continue;
		}
		if (n < k->f[i].size)
			return false;
		if (k->f[i].kind == KK_RAW_FLOAT) {
			memcpy(&v->f, p, 8);
		} else if (k->f[i].size == 4) {
			uint32_t u;

			memcpy(&u, p, 4);
			v->u = k->f[i].kind == KK_RAW_INT || k->f[i].kind == KK_RAW_CHAR ?
			       (uint64_t)(int64_t)(int32_t)u : u;
		} else {
			memcpy(&v->u, p, 8);
		}
		p += k->f[i].size;
		n -= k->f[i].size;
	}
	return n == 0;
}

/* The digits of @u in the base of conversion @c ending at @end (as trace.c's kk_utoa()). */
static char *conv_digits_of(char *end, uint64_t u, char c)
{
	const char *dig = c == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
	unsigned int base = c == 'x' || c == 'X' ? 16 : c == 'o' ? 8 : 10;

	do
		*--end = dig[u % base];
	while (u /= base);
	return end;
}

/* A conversion printf prints plainly (trace.c's out_fast()): done, or false (take printf's). */
static bool conv_fast(struct dbuf *b, const struct conv *cv, const struct dval *v)
{
	char num[24], *end = num + sizeof(num), *s;
	bool neg = false;
	uint64_t u = v->u;

	if (cv->flags[0] || cv->width >= 0)
		return false;
	switch (cv->c) {
	case 's':
		db_put(b, v->s, v->l);
		return true;
	case 'c':
		num[0] = (char)(unsigned char)u;
		db_put(b, num, 1);
		return true;
	case 'p':
		if (!u) {
			db_put(b, "(nil)", 5);
			return true;
		}
		s = conv_digits_of(end, u, 'x');
		*--s = 'x';
		*--s = '0';
		break;
	case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
		if (cv->prec >= 0)
			return false;
		if ((cv->c == 'd' || cv->c == 'i') && (int64_t)u < 0) {
			neg = true;
			u = 0 - u;
		}
		s = conv_digits_of(end, u, cv->c);
		if (neg)
			*--s = '-';
		break;
	default:
		return false;
	}
	db_put(b, s, (size_t)(end - s));
	return true;
}

/* Conversion @cv by printf, its value @v (trace.c's build_spec() and out_conv()). */
static void conv_printf(struct dbuf *b, const struct conv *cv, const struct dval *v)
{
	char spec[40], *s = spec;
	bool fl = strchr("fFeEgGaA", cv->c) != NULL;

	*s++ = '%';
	s += strlen(strcpy(s, cv->flags));
	if (cv->width >= 0)
		s += sprintf(s, "%d", cv->width);
	if (cv->prec >= 0 && cv->c != 's' && cv->c != 'm')
		s += sprintf(s, ".%d", cv->prec);
	if (cv->c == 'm') {	/* its text, as "%.Ns" prints it */
		strcpy(s, ".*s");
		db_printf(b, spec, cv->prec >= 0 && (size_t)cv->prec < v->l ? cv->prec : (int)v->l,
			  v->s);
		return;
	}
	if (cv->c == 's') {
		/* a NULL string is sent as "(null)": glibc prints none of it if cut */
		int l = cv->prec >= 0 && cv->prec < 6 && v->l == 6 && !memcmp(v->s, "(null)", 6) ?
			0 : (int)v->l;

		strcpy(s, ".*s");
		db_printf(b, spec, l, v->s);
		return;
	}
	if (fl) {
		if (cv->lmod == LM_BIGL)
			*s++ = 'L';
		*s++ = cv->c;
		*s = '\0';
		if (cv->lmod == LM_BIGL)
			db_printf(b, spec, (long double)v->f);
		else
			db_printf(b, spec, v->f);
		return;
	}
	if (cv->c != 'c' && cv->c != 'p' && cv->lmod != LM_NONE)
		s += strlen(strcpy(s, cv->lmod == LM_HH ? "hh" : cv->lmod == LM_H ? "h" : "ll"));
	*s++ = cv->c;
	*s = '\0';
	if (cv->c == 'p')
		db_printf(b, spec, (void *)(uintptr_t)v->u);
	else if (cv->c == 'c' || cv->lmod == LM_NONE || cv->lmod == LM_HH || cv->lmod == LM_H)
		db_printf(b, spec, (int)v->u);
	else
		db_printf(b, spec, (long long)v->u);
}

/* The message of a record of @k, its values in d->val, into d->msg (not terminated). */
static void rec_message(struct kkr_rawdec *d, const struct dclass *k)
{
	struct dbuf *b = &d->msg;
	const char *p = k->format;

	b->len = 0;
	b->err = false;
	for (size_t i = 0; i < k->ncv; i++) {
		const struct conv *cv = &k->cv[i].cv;
		int f = k->cv[i].field;

		db_put(b, p, (size_t)(cv->start - p));
		p = cv->end;
		if (cv->c == '%')
			db_put(b, "%", 1);
		else if (f >= 0 && !conv_fast(b, cv, &d->val[f]))
			conv_printf(b, cv, &d->val[f]);
	}
	db_put(b, p, strlen(p));	/* (after a stop: the rest as written) */
}

/* The args of a record of @k (values in d->val) into d->args, their strings onto d->out. */
static bool rec_args(struct kkr_rawdec *d, const struct dclass *k)
{
	static const enum kkr_type types[] = {
		[KK_RAW_INT] = KKR_INT, [KK_RAW_UINT] = KKR_UINT, [KK_RAW_CHAR] = KKR_CHAR,
		[KK_RAW_PTR] = KKR_POINTER, [KK_RAW_FLOAT] = KKR_FLOAT, [KK_RAW_STRING] = KKR_STRING,
	};

	for (size_t i = 0; i < k->nf; i++) {
		struct kkr_arg *a = &d->args[i];
		const struct dval *v = &d->val[i];

		a->name = k->f[i].name;
		a->type = types[k->f[i].kind];
		if (a->type == KKR_FLOAT) {
			a->v.f = isnan(v->f) ? NAN : v->f;	/* (the JSON says "nan") */
		} else if (a->type == KKR_STRING) {
			a->v.u = d->out.len;	/* (an offset until d->out stops moving) */
			if (!db_text(&d->out, v->s, v->l))
				return false;
		} else {
			a->v.u = a->type == KKR_CHAR ? (unsigned char)v->u : v->u;
		}
	}
	for (size_t i = 0; i < k->nf; i++)
		if (d->args[i].type == KKR_STRING)
			d->args[i].v.s = d->out.p + d->args[i].v.u;
	return true;
}

/* Room for the values and args of a class of @n fields. */
static bool val_room(struct kkr_rawdec *d, size_t n)
{
	struct dval *v;
	struct kkr_arg *a;

	if (n <= d->vcap)
		return true;
	if (!(v = realloc(d->val, n * sizeof(*v))))
		return false;
	d->val = v;
	if (!(a = realloc(d->args, n * sizeof(*a))))
		return false;
	d->args = a;
	d->vcap = n;
	return true;
}

/* Record @p (@n bytes: checked, its class too) into @l.  False: its values are malformed. */
static bool rec_decode(struct kkr_rawdec *d, const unsigned char *p, size_t n, struct kkr_line *l)
{
	struct kk_raw_rec h;
	const struct dclass *k;
	size_t msg_len;

	memcpy(&h, p, sizeof(h));
	k = &d->cls[h.cls];
	if (!val_room(d, k->nf) || !rec_values(d, k, p + sizeof(h), n - sizeof(h)))
		return false;
	rec_message(d, k);
	msg_len = d->msg.len;
	d->out.len = 0;
	d->out.err = false;
	if (d->msg.err || !db_text(&d->out, d->msg.p, msg_len) || !rec_args(d, k))
		return false;
	l->ts = h.ts + (uint64_t)d->real_off;
	l->mono = h.ts;
	l->pid = h.pid;
	l->tid = h.tid;
	l->line = k->line;
	l->module = k->module;
	l->function = k->function;
	l->file = k->file;
	l->format = k->format;
	l->message = d->out.p;
	l->nargs = k->nf;
	l->args = d->args;
	return true;
}

static void said_bad(struct kkr_rawdec *d, bool *bad, const char *why)
{
	if (!d->said_bad)
		fprintf(stderr, "%s: process %d: a malformed trace_pipe_raw frame (%s): skipped\n",
			kkctl_prog, d->pid, why);
	d->said_bad = true;
	*bad = true;
}

/* The records of a RING frame's body (@p, @n bytes) checked: their lengths and classes. */
static bool ring_check(const struct kkr_rawdec *d, const unsigned char *p, size_t n, uint32_t nrec)
{
	uint64_t k = 0;

	for (size_t at = 0; at < n; k++) {
		struct kk_raw_rec h;

		if (n - at < sizeof(h))
			return false;
		memcpy(&h, p + at, sizeof(h));
		if (h.len < sizeof(h) || ROUND8((size_t)h.len) > n - at || h.cls >= d->ncls ||
		    !d->cls[h.cls].ok)
			return false;
		at += ROUND8((size_t)h.len);
	}
	return k == nrec;
}

/*
 * A RING frame @f (@len bytes, in the reply): its lost, then its records,
 * each to @fn; the last record @fn took into the reply's time *@t.
 */
static int ring_frame(struct kkr_rawdec *d, const unsigned char *f, size_t len, bool *bad,
		      int (*fn)(void *, const struct kkr_line *), void *arg, uint64_t *t)
{
	struct kkr_line l = { .kind = KKR_LOST, .comm = d->comm };
	struct kk_raw_ring h;
	struct dbuf cb = { .p = d->comm, .cap = sizeof(d->comm) };	/* (16 bytes: 49 at most) */
	uint64_t last = 0;
	int ret = 0;

	if (len < sizeof(h)) {
		said_bad(d, bad, "a ring frame too short");
		return 0;
	}
	memcpy(&h, f, sizeof(h));
	if (!ring_check(d, f + sizeof(h), len - sizeof(h), h.nrec)) {
		said_bad(d, bad, "a record's length or class");
		return 0;
	}
	if (!db_text(&cb, h.comm, strnlen(h.comm, sizeof(h.comm)))) {
		said_bad(d, bad, "a thread's name");
		return 0;
	}
	l.host = l.process = l.module = l.function = l.file = l.format = l.message = "";
	l.pid = d->pid;
	l.tid = h.tid;
	l.count = h.lost;
	if (h.lost && fn(arg, &l) < 0)
		return -1;
	l.kind = KKR_EVENT;
	l.count = 0;
	for (size_t at = sizeof(h); at < len;) {
		struct kk_raw_rec r;

		memcpy(&r, f + at, sizeof(r));
		if (!rec_decode(d, f + at, r.len, &l))
			said_bad(d, bad, "a record's values");
		else if ((ret = fn(arg, &l)) < 0)
			break;
		else if (!ret && l.ts > last)
			last = l.ts;
		at += ROUND8((size_t)r.len);
	}
	/* (also when @fn stopped: what it took is the caller's) */
	kkr_reply_time(t, last);
	return ret < 0 ? -1 : 0;
}

/* A CLASS frame: the reply's id decoded (a bad one is marked so: its records are skipped). */
static int class_frame(struct kkr_rawdec *d, const unsigned char *f, size_t len, bool *bad)
{
	struct kk_raw_class h;

	if (len < sizeof(h)) {
		said_bad(d, bad, "a class frame too short");
		return 0;
	}
	memcpy(&h, f, sizeof(h));
	if (h.id > d->nseen++) {	/* (ids are 0, 1, ...: one a frame, in order) */
		said_bad(d, bad, "a class id out of range");
		return 0;
	}
	if (h.id >= d->ncls) {
		size_t n = 2 * (size_t)h.id + 16;
		struct dclass *v = realloc(d->cls, n * sizeof(*v));

		if (!v)
			return -1;
		memset(v + d->ncls, 0, (n - d->ncls) * sizeof(*v));
		d->cls = v;
		d->ncls = n;
	}
	class_clear(&d->cls[h.id]);
	if (!(d->cls[h.id].ok = class_decode(&d->cls[h.id], f, len))) {
		class_clear(&d->cls[h.id]);
		said_bad(d, bad, "a class");
	}
	return 0;
}

struct kkr_rawdec *kkr_rawdec_new(int pid)
{
	struct kkr_rawdec *d = calloc(1, sizeof(*d));

	if (d)
		d->pid = pid;
	return d;
}

uint64_t kkr_rawdec_complete(const struct kkr_rawdec *d)
{
	return d->complete;
}

void kkr_rawdec_free(struct kkr_rawdec *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->ncls; i++)
		class_clear(&d->cls[i]);
	free(d->cls);
	free(d->msg.p);
	free(d->out.p);
	free(d->val);
	free(d->args);
	free(d);
}

int kkr_rawdec_take(struct kkr_rawdec *d, const unsigned char *body, size_t len, bool *bad,
		    int (*fn)(void *arg, const struct kkr_line *l), void *arg, uint64_t *last)
{
	struct kk_raw_head hd;
	size_t at = 0;

	*bad = false;
	*last = 0;
	for (size_t i = 0; i < d->ncls && i < d->nseen; i++)	/* (a reply's ids are its own) */
		class_clear(&d->cls[i]);
	d->nseen = 0;
	d->complete = 0;
	if (!kk_raw_head_get(body, len, &hd)) {
		said_bad(d, bad, "no head");
		return 0;
	}
	/* One offset for the process's whole session, as a CTF trace has one
	 * clock offset: each reply's is read anew from two clocks, tens of ns
	 * apart, and records of one thread from two replies would come out of
	 * order (kkctl_record_rawdec_order.sh under ASan). */
	if (!d->off_set)
		d->real_off = hd.real_off;
	d->off_set = true;
	if (hd.complete)
		d->complete = hd.complete + (uint64_t)d->real_off;
	while (len - at >= sizeof(struct kk_raw_frame)) {
		struct kk_raw_frame f;
		int ret = 0;

		memcpy(&f, body + at, sizeof(f));
		if (f.len < sizeof(f) || f.len % 8 || f.len > len - at) {
			/* (a sound length past the end: the endpoint closed at its
			 * 2 s deadline before the reply was read whole) */
			said_bad(d, bad, f.len >= sizeof(f) && !(f.len % 8) ?
				 "the reply ends inside it" : "a frame's length");
			break;
		}
		if (f.type == KK_RAW_CLASS)
			ret = class_frame(d, body + at, f.len, bad);
		else if (f.type == KK_RAW_RING)
			ret = ring_frame(d, body + at, f.len, bad, fn, arg, last);
		if (ret)
			return -1;
		at += f.len;
	}
	return 0;
}
