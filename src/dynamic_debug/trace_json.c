// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_pipe_json: the records of the trace ring as JSON, one
 * object a line, for programs (kkctl record) rather than people.  It is
 * trace_pipe with typed fields: the same consumer position (one consumer,
 * as the kernel's trace_pipe has), the same bounded wait for a record, and
 * each record's arguments as values with a name and a type, taken from the
 * packed data, not parsed back out of the text.
 *
 * Lines (docs/dynamic_debug.md has the whole contract):
 *   {"type":"event","ts":UTC ns,"mono":ns,"pid":..,"tid":..,"comm":"..",
 *    "module":"..","function":"..","file":"..","line":N,"format":"..",
 *    "message":"..","args":[{"name":"..","type":"..","value":..},...]}
 *   {"type":"lost","pid":..,"tid":..,"comm":"..","count":N}
 * The output is valid UTF-8 JSON whatever the records hold: control
 * characters are escaped, and a byte that is not valid UTF-8 becomes \ufffd.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/trace_int.h"

/* ---- strings ------------------------------------------------------------------------------- */

/* The length of the valid UTF-8 sequence at @s (@n bytes left), 0 if it is not one. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	static const struct {
		unsigned char lead_lo, lead_hi, len, cont1_lo, cont1_hi;
	} forms[] = {	/* RFC 3629's table: no overlong forms, no surrogates, up to U+10FFFF */
		{ 0xc2, 0xdf, 2, 0x80, 0xbf }, { 0xe0, 0xe0, 3, 0xa0, 0xbf },
		{ 0xe1, 0xec, 3, 0x80, 0xbf }, { 0xed, 0xed, 3, 0x80, 0x9f },
		{ 0xee, 0xef, 3, 0x80, 0xbf }, { 0xf0, 0xf0, 4, 0x90, 0xbf },
		{ 0xf1, 0xf3, 4, 0x80, 0xbf }, { 0xf4, 0xf4, 4, 0x80, 0x8f },
	};

	for (size_t f = 0; f < sizeof(forms) / sizeof(forms[0]); f++) {
		size_t len = forms[f].len;

		if (s[0] < forms[f].lead_lo || s[0] > forms[f].lead_hi)
			continue;
		if (n < len || s[1] < forms[f].cont1_lo || s[1] > forms[f].cont1_hi)
			return 0;
		for (size_t i = 2; i < len; i++)
			if ((s[i] & 0xc0) != 0x80)
				return 0;
		return len;
	}
	return 0;
}

/*
 * Appending: kk_buf_write() without its call when the room is there (a
 * record is some twenty pieces), and numbers without printf.  The buffer
 * is NUL-terminated again at the end of the read (json_show()).
 */
static inline __attribute__((always_inline)) void jw_put(struct kk_buf *b, const void *s, size_t n)
{
	if (b->len + n < b->cap) {
		memcpy(b->data + b->len, s, n);
		b->len += n;
		return;
	}
	kk_buf_write(b, s, n);
}
#define JW_LIT(b, lit)	jw_put((b), (lit), sizeof(lit) - 1)

/* Room for @n more bytes at once: a reply grown by doubling copied itself twice over. */
static void jw_reserve(struct kk_buf *b, size_t n)
{
	char *p;

	if (b->error || (b->data && b->cap - b->len > n))
		return;
	p = realloc(b->data, b->len + n + 1);
	if (!p)
		return;		/* kk_buf_write() will say so */
	b->data = p;
	b->cap = b->len + n + 1;
	b->data[b->len] = '\0';
}

static void jw_num(struct kk_buf *b, unsigned long long v, bool neg)
{
	char num[24], *end = num + sizeof(num), *d = kk_utoa(end, v, 'u');

	if (neg)
		*--d = '-';
	jw_put(b, d, (size_t)(end - d));
}

static void jw_int(struct kk_buf *b, long long v)
{
	jw_num(b, v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v, v < 0);
}

/* One byte that JSON wants escaped (@c < 0x20, '"', '\\'). */
static void json_escape(struct kk_buf *b, unsigned char c)
{
	static const char short_esc[][3] = {
		['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n", ['\f'] = "\\f", ['\r'] = "\\r",
	};
	char u[6] = { '\\', 'u', '0', '0', "0123456789abcdef"[c >> 4], "0123456789abcdef"[c & 15] };

	if (c == '"' || c == '\\') {
		char e[2] = { '\\', (char)c };

		jw_put(b, e, 2);
	} else if (c < sizeof(short_esc) / sizeof(short_esc[0]) && short_esc[c][0]) {
		jw_put(b, short_esc[c], 2);
	} else {
		jw_put(b, u, 6);
	}
}

/* Printable ASCII but '"' and '\\': copied as it is. */
static inline bool json_plain(unsigned char c)
{
	return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/*
 * Are the 8 bytes at @p all plain?  A word at a time (the bit tricks of
 * "Bit Twiddling Hacks"' haszero()): a message is mostly plain text, and a
 * byte at a time was a third of a record's instructions.
 */
static inline bool json_plain8(const unsigned char *p)
{
	const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
	uint64_t x, q, bs;

	memcpy(&x, p, sizeof(x));
	q = x ^ (ones * '"');
	bs = x ^ (ones * '\\');
	/* a byte >= 0x80, < 0x20, '"' or '\\' sets its high bit in one of these */
	return !((x | (x - ones * 0x20) | (q - ones) | (bs - ones)) & high);
}

/* @s (@n bytes) as a JSON string: runs of plain bytes and whole UTF-8 sequences copied at once. */
static void json_strn(struct kk_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t start = 0, i = 0, k;

	jw_put(b, "\"", 1);
	while (i < n) {
		if (n - i >= 8 && json_plain8(u + i)) {
			i += 8;
			continue;
		}
		if (json_plain(u[i])) {
			i++;
			continue;
		}
		if (u[i] >= 0x80 && (k = utf8_len(u + i, n - i))) {
			i += k;
			continue;
		}
		jw_put(b, s + start, i - start);
		if (u[i] < 0x80)
			json_escape(b, u[i]);
		else
			jw_put(b, "\\ufffd", 6);
		start = ++i;
	}
	jw_put(b, s + start, i - start);
	jw_put(b, "\"", 1);
}

static void json_str(struct kk_buf *b, const char *s)
{
	json_strn(b, s, strlen(s));
}

/* @s without one trailing newline, as a JSON string. */
static void json_line(struct kk_buf *b, const char *s, size_t n)
{
	json_strn(b, s, n && s[n - 1] == '\n' ? n - 1 : n);
}

/* ---- arguments ----------------------------------------------------------------------------- */

static bool name_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '.' || c == '-';
}

/*
 * The argument's name: the word just before the conversion at @conv when
 * the text since the previous one (@seg) reads "name=" or "name: " (word =
 * [A-Za-z_][A-Za-z0-9_.-]*), else "argN".
 */
void kk_dd_tr_arg_name(const char *seg, const char *conv, unsigned int idx, char *name, size_t cap)
{
	const char *e = conv, *w;

	if (e - seg >= 2 && e[-1] == ' ' && e[-2] == ':')
		e -= 2;
	else if (e > seg && e[-1] == '=')
		e -= 1;
	else
		e = seg;
	for (w = e; w > seg && name_char(w[-1]); w--)
		;
	while (w < e && !((*w >= 'a' && *w <= 'z') || (*w >= 'A' && *w <= 'Z') || *w == '_'))
		w++;
	if (w < e && (size_t)(e - w) < cap) {
		memcpy(name, w, (size_t)(e - w));
		name[e - w] = '\0';
		return;
	}
	snprintf(name, cap, "arg%u", idx);
}

/* Take the next value of @c into v; the caller returns false when the data ends short. */
#define GET(v) do {								\
		if (!tr_take(c, &(v), sizeof(v)))				\
			return false;						\
	} while (0)

/* An integer conversion's value as printf would take it (hh and h narrow it). */
static bool json_int(struct kk_buf *b, const struct conv *cv, struct cursor *c)
{
	unsigned long long u;
	bool neg;

	if (!kk_dd_tr_int_value(cv, c, &u, &neg))
		return false;
	jw_num(b, u, neg);
	return true;
}

/* A JSON number, or "nan", "inf", "-inf" (JSON has no such numbers). */
static bool json_float(struct kk_buf *b, const struct conv *cv, struct cursor *c)
{
	long double v;

	if (cv->lmod == LM_BIGL) {
		GET(v);
	} else {
		double d;

		GET(d);
		v = d;
	}
	if (isnan(v)) {
		JW_LIT(b, "\"nan\"");
		return true;
	}
	if (isinf(v)) {
		if (v < 0)
			JW_LIT(b, "\"-inf\"");
		else
			JW_LIT(b, "\"inf\"");
		return true;
	}
	char num[64];
	int n = cv->lmod == LM_BIGL ? snprintf(num, sizeof(num), "%.21Lg", v) :
				      snprintf(num, sizeof(num), "%.17g", (double)v);

	if (n < 0 || (size_t)n >= sizeof(num))
		return false;
	/* a float reads as one: 15000000000.0, not an integer */
	if (!strpbrk(num, ".e"))
		strcat(num, ".0");
	jw_put(b, num, strlen(num));
	return true;
}

static bool json_string_arg(struct kk_buf *b, const struct conv *cv, struct cursor *c)
{
	char num[24];
	uint16_t l;
	int e;

	if (cv->c == 'm') {
		GET(e);
		json_str(b, kk_dd_tr_errno_text(e, num, sizeof(num)));
		return true;
	}
	GET(l);
	if (l == UINT16_MAX) {	/* NULL: what glibc prints */
		json_str(b, "(null)");
		return true;
	}
	if (c->left < l)
		return false;
	json_strn(b, (const char *)c->d, l);
	c->d += l;
	c->left -= l;
	return true;
}

static bool json_char_or_ptr(struct kk_buf *b, const struct conv *cv, struct cursor *c)
{
	void *p;
	int v;

	if (cv->c == 'c') {
		GET(v);
		jw_num(b, (unsigned char)v, false);
		return true;
	}
	GET(p);
	jw_num(b, (uintptr_t)p, false);
	return true;
}

/* The JSON type of each conversion character, and the writer of its value. */
static const struct {
	const char *chars, *type;
	bool (*value)(struct kk_buf *b, const struct conv *cv, struct cursor *c);
} arg_types[] = {
	{ "di", "int", json_int },
	{ "uxXo", "uint", json_int },
	{ "c", "char", json_char_or_ptr },
	{ "eEfFgGaA", "float", json_float },
	{ "sm", "string", json_string_arg },
	{ "p", "pointer", json_char_or_ptr },
};

/* The index in arg_types[] of @cv's value, or -1 (%%, %n, what is not recorded). */
static int arg_type(const struct conv *cv)
{
	for (size_t i = 0; cv->c && i < sizeof(arg_types) / sizeof(arg_types[0]); i++)
		if (strchr(arg_types[i].chars, cv->c))
			return (int)i;
	return -1;
}

/* {"name":NAME,"type":TYPE,"value": */
static void arg_head(struct kk_buf *b, const char *name, int type)
{
	JW_LIT(b, "{\"name\":");
	json_str(b, name);
	JW_LIT(b, ",\"type\":\"");
	jw_put(b, arg_types[type].type, strlen(arg_types[type].type));
	JW_LIT(b, "\",\"value\":");
}

/* The '*' width and precision of @cv: packed, not arguments of their own. */
static bool skip_stars(const struct conv *cv, struct cursor *c)
{
	int v;

	if (cv->width == -2)
		GET(v);
	if (cv->prec == -2)
		GET(v);
	return true;
}
#undef GET

/* "args":[...] of record @h: one per value conversion packed.  False on a bad record. */
static bool json_args(struct kk_buf *b, const struct trec *h)
{
	struct cursor c = { (const unsigned char *)(h + 1), h->len - TR_HDR };
	const char *p = h->fmt, *seg = p, *q;
	unsigned int n = 0, idx = 0;
	char name[64];
	struct conv cv;
	int type;

	JW_LIT(b, "\"args\":[");
	while ((q = strchr(p, '%')) && n < h->nconv) {
		p = kk_dd_tr_parse_conv(q, &cv);
		n++;
		if (!skip_stars(&cv, &c))
			return false;
		if (cv.c == '%' || cv.c == 'n')
			continue;
		if ((type = arg_type(&cv)) < 0)
			return false;
		kk_dd_tr_arg_name(seg, q, idx, name, sizeof(name));
		if (idx++)
			JW_LIT(b, ",");
		arg_head(b, name, type);
		if (!arg_types[type].value(b, &cv, &c))
			return false;
		JW_LIT(b, "}");
		seg = p;
	}
	JW_LIT(b, "]");
	return true;
}

/* ---- plans: what a read renders once per site ---------------------------------------------- */

/*
 * A record's site fields and its format are the same in every record of
 * the site: a read renders them once, with its format's conversions parsed
 * and each argument's {"name":..,"type":..,"value": prefix, and then each
 * record is its numbers, its message and its values (about 9 times fewer
 * instructions than rendering all of it: docs/results.md).  A plan lives
 * for one read, under the sites lock (a site's strings are read only while
 * its object is loaded).  A format of more than PLAN_CONVS conversions, or
 * a plan that cannot be made, takes the path that parses every record.
 */
#define PLAN_CONVS	16
#define PLAN_SLOTS	64		/* by the site's address; a collision makes the plan again */

struct plan_conv {
	struct conv cv;
	int type;			/* arg_types[] index; -1: %%, %n, not recorded */
	size_t off, len;		/* its argument's prefix in plans.text */
};

struct plan {
	const struct _ddebug *dp;
	const char *fmt;
	bool full;			/* every conversion of the format is in cv[] */
	unsigned int nconv;
	size_t site_off, site_len;	/* ,"module":..,"function":..,"file":..,"line":N,"format":.. */
	size_t rest_len;		/* the format after its last conversion */
	struct plan_conv c[PLAN_CONVS];
};

struct plans {
	struct plan *slot;		/* PLAN_SLOTS, or NULL: no memory, no plans */
	struct kk_buf text;
};

static void plan_site(struct kk_buf *t, const struct _ddebug *dp, const char *fmt)
{
	JW_LIT(t, ",\"module\":");
	json_str(t, dp->modname ? dp->modname : "?");
	JW_LIT(t, ",\"function\":");
	json_str(t, dp->function);
	JW_LIT(t, ",\"file\":");
	json_str(t, kk_dd_rel_name(dp->filename));
	JW_LIT(t, ",\"line\":");
	jw_num(t, dp->lineno, false);
	JW_LIT(t, ",\"format\":");
	json_line(t, fmt, strlen(fmt));
}

/* The conversions of @pl->fmt and their arguments' prefixes, as json_args() names them. */
static void plan_convs(struct plan *pl, struct kk_buf *t)
{
	const char *p = pl->fmt, *seg = p, *q;
	unsigned int idx = 0;
	char name[64];

	pl->nconv = 0;
	while ((q = strchr(p, '%'))) {
		struct plan_conv *pc = &pl->c[pl->nconv];

		if (pl->nconv == PLAN_CONVS)
			return;
		p = kk_dd_tr_parse_conv(q, &pc->cv);
		pl->nconv++;
		pc->type = pc->cv.c == '%' || pc->cv.c == 'n' ? -1 : arg_type(&pc->cv);
		pc->off = t->len;
		if (pc->type >= 0) {
			kk_dd_tr_arg_name(seg, q, idx++, name, sizeof(name));
			arg_head(t, name, pc->type);
			seg = p;
		}
		pc->len = t->len - pc->off;
		if (!pc->cv.c)	/* packing stops here: what follows is never taken */
			break;
	}
	pl->rest_len = strlen(p);
	pl->full = true;
}

/* The plan of @h's site, made now if it is not there; NULL: render the slow way. */
static const struct plan *plan_of(struct plans *ps, const struct trec *h)
{
	uintptr_t key = (uintptr_t)h->desc ^ (uintptr_t)h->fmt;
	struct plan *pl;

	if (!ps->slot)
		return NULL;
	pl = &ps->slot[(key >> 4) % PLAN_SLOTS];
	if (pl->dp == h->desc && pl->fmt == h->fmt)
		return pl;
	pl->dp = h->desc;
	pl->fmt = h->fmt;
	pl->full = false;
	pl->site_off = ps->text.len;
	plan_site(&ps->text, h->desc, h->fmt);
	pl->site_len = ps->text.len - pl->site_off;
	plan_convs(pl, &ps->text);
	if (ps->text.error) {	/* no memory: no plans from here on */
		free(ps->slot);
		ps->slot = NULL;
		return NULL;
	}
	return pl;
}

static void plans_init(struct plans *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->slot = malloc(PLAN_SLOTS * sizeof(*ps->slot));
	for (size_t i = 0; ps->slot && i < PLAN_SLOTS; i++)
		ps->slot[i].dp = NULL;
}

static void plans_free(struct plans *ps)
{
	free(ps->slot);
	kk_buf_free(&ps->text);
}

/* The message of @h by its plan (as kk_dd_tr_format_msg() makes it). */
static bool plan_message(const struct plan *pl, const struct trec *h, struct out *o)
{
	struct cursor c = { (const unsigned char *)(h + 1), h->len - TR_HDR };
	const char *p = h->fmt;

	for (unsigned int i = 0; i < pl->nconv; i++) {
		const struct plan_conv *pc = &pl->c[i];
		struct conv cv = pc->cv;

		tr_out_mem(o, p, (size_t)(cv.start - p));
		if (i == h->nconv || !cv.c) {	/* not recorded: the rest as written */
			tr_out_mem(o, cv.start, strlen(cv.start));
			return true;
		}
		if (!kk_dd_tr_out_conv(o, &cv, &c, kk_dd_tr_snprintf))
			return false;
		p = cv.end;
	}
	tr_out_mem(o, p, pl->rest_len);
	return true;
}

/* "args":[...] of @h by its plan (as json_args() makes it).  False on a bad record. */
static bool plan_args(struct kk_buf *b, const struct plan *pl, const struct kk_buf *t,
		      const struct trec *h)
{
	struct cursor c = { (const unsigned char *)(h + 1), h->len - TR_HDR };
	unsigned int idx = 0;

	JW_LIT(b, "\"args\":[");
	for (unsigned int i = 0; i < pl->nconv && i < h->nconv; i++) {
		const struct plan_conv *pc = &pl->c[i];

		if (!skip_stars(&pc->cv, &c))
			return false;
		if (pc->cv.c == '%' || pc->cv.c == 'n')
			continue;
		if (pc->type < 0)
			return false;
		if (idx++)
			JW_LIT(b, ",");
		jw_put(b, t->data + pc->off, pc->len);
		if (!arg_types[pc->type].value(b, &pc->cv, &c))
			return false;
		JW_LIT(b, "}");
	}
	JW_LIT(b, "]");
	return true;
}

/* ---- lines --------------------------------------------------------------------------------- */

/* What every line of a read shares. */
struct json_read {
	const struct snap *s;
	struct tr_conv tc;
	struct plans plans;
	char pid[24];			/* getpid() once a read, as text */
	size_t pid_len;
};

/* The thread's name: the ring's, read with the snapshot, or read now. */
const char *kk_dd_tr_comm_of(const struct snap_ring *sr, pid_t tid, char *buf, size_t n)
{
	if (sr->known && sr->tid == tid)
		return sr->comm;
	buf[0] = '\0';
	kk_task_comm(tid, buf, n);
	return buf;
}

/* The message of @h by its plan, or by parsing it (@pl NULL), as a JSON string. */
static void json_message(struct kk_buf *b, const struct plan *pl, const struct trec *h)
{
	char stack[2048];
	struct out o = { stack, sizeof(stack), 0 };
	bool ok = pl ? plan_message(pl, h, &o) : kk_dd_tr_format_msg(h, &o, kk_dd_tr_snprintf);

	if (o.len > o.cap) {	/* longer than the stack buffer: again, into one that fits */
		o.buf = malloc(o.len);
		o.cap = o.buf ? o.len : 0;
		o.len = 0;
		ok = pl ? plan_message(pl, h, &o) : kk_dd_tr_format_msg(h, &o, kk_dd_tr_snprintf);
		if (!o.buf)
			o.len = 0;
	}
	if (!ok)
		tr_out_mem(&o, " <bad record>", 13);
	json_line(b, o.buf ? o.buf : "", o.len < o.cap ? o.len : o.cap);
	if (o.buf != stack)
		free(o.buf);
}

/* The site's fields of @h: from its plan, or rendered now. */
static void json_site(struct kk_buf *b, const struct plan *pl, const struct kk_buf *t,
		      const struct trec *h)
{
	if (pl)
		jw_put(b, t->data + pl->site_off, pl->site_len);
	else
		plan_site(b, h->desc, h->fmt);
}

static void json_event(struct kk_buf *b, struct json_read *jr, const struct snap_rec *v)
{
	const struct trec *h = v->h;
	const struct plan *pl = plan_of(&jr->plans, h);
	uint64_t mono = kk_dd_tr_conv_ns(&jr->tc, h->ts);
	char comm[16];
	size_t mark;
	bool ok;

	JW_LIT(b, "{\"type\":\"event\",\"ts\":");
	jw_int(b, (long long)mono + (long long)jr->tc.real_off);
	JW_LIT(b, ",\"mono\":");
	jw_num(b, mono, false);
	JW_LIT(b, ",\"pid\":");
	jw_put(b, jr->pid, jr->pid_len);
	JW_LIT(b, ",\"tid\":");
	jw_int(b, h->tid);
	JW_LIT(b, ",\"comm\":");
	json_str(b, kk_dd_tr_comm_of(&jr->s->rings[v->ring], h->tid, comm, sizeof(comm)));
	json_site(b, pl, &jr->plans.text, h);
	JW_LIT(b, ",\"message\":");
	json_message(b, pl && pl->full ? pl : NULL, h);
	JW_LIT(b, ",");
	mark = b->len;
	ok = pl && pl->full ? plan_args(b, pl, &jr->plans.text, h) : json_args(b, h);
	if (!ok) {	/* a bad record: no args rather than half of them */
		b->len = mark;
		JW_LIT(b, "\"args\":[]");
	}
	JW_LIT(b, "}\n");
}

/* One "lost" line per thread shown that lost records since the previous read. */
static void json_lost(struct kk_buf *b, const struct json_read *jr)
{
	for (size_t i = 0; i < jr->s->nrings; i++) {
		const struct snap_ring *sr = &jr->s->rings[i];

		if (!sr->lost || !sr->shown)
			continue;
		JW_LIT(b, "{\"type\":\"lost\",\"pid\":");
		jw_put(b, jr->pid, jr->pid_len);
		JW_LIT(b, ",\"tid\":");
		jw_int(b, sr->tid);
		JW_LIT(b, ",\"comm\":");
		json_str(b, sr->comm);
		JW_LIT(b, ",\"count\":");
		jw_num(b, sr->lost, false);
		JW_LIT(b, "}\n");
	}
}

/*
 * At most this much JSON a read (one record more if a single one is
 * larger): the reply is rendered in a moment and fits a Unix socket's
 * default send buffer (208 KiB), so the endpoint's deadline (2 s from
 * accept() to the reply's last byte) never falls inside it, whatever the
 * rings hold.  What does not fit stays for the next read; a reader reads
 * again at once (kkctl record does).
 */
#define JSON_READ_MAX	(128u << 10)

/* The events of the read up to the bound; how many of s->v were taken. */
static size_t json_events(struct kk_buf *out, struct json_read *jr)
{
	const struct snap *s = jr->s;
	size_t start = out->len, i, shown = 0;

	/* a site's strings are read only while its object is loaded */
	kk_dd_sites_lock();
	for (i = 0; i < s->ready; i++) {
		size_t mark = out->len;

		if (!kk_dd_site_known_locked(s->v[i].h->desc))
			continue;
		json_event(out, jr, &s->v[i]);
		if (shown++ && out->len - start > JSON_READ_MAX) {
			out->len = mark;	/* the next read's */
			break;
		}
	}
	kk_dd_sites_unlock();
	if (out->data)		/* jw_put() does not end it */
		out->data[out->len] = '\0';
	return i;
}

/*
 * A consuming read of the session's reader (trace_pipe_json, trace_pipe_raw):
 * the session's lease touched, the bounded wait for a record, and at most
 * @limit bytes of each ring copied.  0, or -errno (nothing to free).
 */
int kk_dd_tr_session_read(struct snap *s, size_t limit)
{
	int ret;

	kk_dd_session_touch();	/* its reader holds the session's lease (spec part B) */
	kk_dd_tr_pipe_wait();
	ret = kk_dd_tr_read_pipe(s, limit);
	if (ret)
		kk_dd_tr_snap_free(s);
	return ret;
}

/* Its end: v[0..@taken) consumed if the reply was made (@ok), the lease touched again. */
void kk_dd_tr_session_done(struct snap *s, size_t taken, bool ok)
{
	if (ok)		/* a reply that cannot be made consumes nothing */
		kk_dd_tr_consume(s, taken);
	kk_dd_tr_snap_free(s);
	kk_dd_session_touch();	/* and again at its end: a read may take a while */
}

static int json_show(struct kk_buf *out, void *priv)
{
	char num[24], *end = num + sizeof(num), *d;
	struct json_read jr;
	struct snap s;
	size_t taken;
	int ret;

	(void)priv;
	/* a record's JSON is several times its bytes in the ring (the header alone is 40 bytes,
	 * its line 150 or more): copying, ordering and walking more of each ring is waste */
	ret = kk_dd_tr_session_read(&s, JSON_READ_MAX / 4);
	if (ret)
		return ret;
	jr.s = &s;
	kk_dd_tr_conv_setup(&jr.tc);
	plans_init(&jr.plans);
	d = kk_utoa(end, (unsigned long long)getpid(), 'u');
	jr.pid_len = (size_t)(end - d);
	memcpy(jr.pid, d, jr.pid_len);
	jw_reserve(out, JSON_READ_MAX + JSON_READ_MAX / 8);
	json_lost(out, &jr);
	taken = json_events(out, &jr);
	plans_free(&jr.plans);
	kk_dd_tr_session_done(&s, taken, !out->error);
	return out->error;
}

static const struct kk_control_file_ops json_fops = {
	.show = json_show,
};
KK_CONTROL_LIB_FILE(json_file, "dynamic_debug/trace_pipe_json", &json_fops);

void kk_dd_tr_json_init(void)
{
	kk_control_add_lib_file(&json_file);
}
