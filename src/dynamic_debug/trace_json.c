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

/* One byte that JSON wants escaped (@c < 0x20, '"', '\\'). */
static void json_escape(struct kk_buf *b, unsigned char c)
{
	static const char short_esc[][3] = {
		['\b'] = "\\b", ['\t'] = "\\t", ['\n'] = "\\n", ['\f'] = "\\f", ['\r'] = "\\r",
	};

	if (c == '"' || c == '\\') {
		char e[2] = { '\\', (char)c };

		kk_buf_write(b, e, 2);
	} else if (c < sizeof(short_esc) / sizeof(short_esc[0]) && short_esc[c][0]) {
		kk_buf_write(b, short_esc[c], 2);
	} else {
		kk_buf_printf(b, "\\u%04x", c);
	}
}

/* @s (@n bytes) as a JSON string. */
static void json_strn(struct kk_buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t run = 0, i = 0;

	kk_buf_write(b, "\"", 1);
	while (i < n) {
		size_t k = u[i] < 0x80 ? 1 : utf8_len(u + i, n - i);

		if (k && u[i] >= 0x20 && u[i] != '"' && u[i] != '\\') {
			i += k;
			run += k;
			continue;
		}
		kk_buf_write(b, s + i - run, run);
		run = 0;
		if (k)
			json_escape(b, u[i]);
		else
			kk_buf_write(b, "\\ufffd", 6);
		i++;
	}
	kk_buf_write(b, s + i - run, run);
	kk_buf_write(b, "\"", 1);
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
static void arg_name(const char *seg, const char *conv, unsigned int idx, char *name, size_t cap)
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
	bool sign = cv->c == 'd' || cv->c == 'i';
	long long ll;
	int v;

	if (tr_int_size(cv->lmod) == 8) {
		GET(ll);
		if (sign)
			return kk_buf_printf(b, "%lld", ll) >= 0;
		return kk_buf_printf(b, "%llu", (unsigned long long)ll) >= 0;
	}
	GET(v);
	if (cv->lmod == LM_HH)
		v = sign ? (signed char)v : (unsigned char)v;
	else if (cv->lmod == LM_H)
		v = sign ? (short)v : (unsigned short)v;
	if (sign)
		return kk_buf_printf(b, "%d", v) >= 0;
	return kk_buf_printf(b, "%u", (unsigned int)v) >= 0;
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
	if (isnan(v))
		return kk_buf_printf(b, "\"nan\"") >= 0;
	if (isinf(v))
		return kk_buf_printf(b, v < 0 ? "\"-inf\"" : "\"inf\"") >= 0;
	char num[64];
	int n = cv->lmod == LM_BIGL ? snprintf(num, sizeof(num), "%.21Lg", v) :
				      snprintf(num, sizeof(num), "%.17g", (double)v);

	if (n < 0 || (size_t)n >= sizeof(num))
		return false;
	/* a float reads as one: 15000000000.0, not an integer */
	if (!strpbrk(num, ".e"))
		strcat(num, ".0");
	return kk_buf_write(b, num, strlen(num)) >= 0;
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
		return kk_buf_printf(b, "%u", (unsigned int)(unsigned char)v) >= 0;
	}
	GET(p);
	return kk_buf_printf(b, "%" PRIuPTR, (uintptr_t)p) >= 0;
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

static bool json_value(struct kk_buf *b, const struct conv *cv, const char *name, struct cursor *c)
{
	for (size_t i = 0; i < sizeof(arg_types) / sizeof(arg_types[0]); i++) {
		if (!strchr(arg_types[i].chars, cv->c))
			continue;
		kk_buf_write(b, "{\"name\":", 8);
		json_str(b, name);
		kk_buf_printf(b, ",\"type\":\"%s\",\"value\":", arg_types[i].type);
		if (!arg_types[i].value(b, cv, c))
			return false;
		kk_buf_write(b, "}", 1);
		return true;
	}
	return false;
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

	kk_buf_write(b, "\"args\":[", 8);
	while ((q = strchr(p, '%')) && n < h->nconv) {
		p = kk_dd_tr_parse_conv(q, &cv);
		n++;
		if (!skip_stars(&cv, &c))
			return false;
		if (cv.c == '%' || cv.c == 'n')
			continue;
		arg_name(seg, q, idx, name, sizeof(name));
		if (idx++)
			kk_buf_write(b, ",", 1);
		if (!json_value(b, &cv, name, &c))
			return false;
		seg = p;
	}
	kk_buf_write(b, "]", 1);
	return true;
}

/* ---- lines --------------------------------------------------------------------------------- */

/* The thread's name: the ring's, read with the snapshot, or read now. */
static const char *comm_of(const struct snap_ring *sr, pid_t tid, char *buf, size_t n)
{
	if (sr->known && sr->tid == tid)
		return sr->comm;
	buf[0] = '\0';
	kk_task_comm(tid, buf, n);
	return buf;
}

static void json_message(struct kk_buf *b, const struct trec *h)
{
	char stack[2048];
	struct out o = { stack, sizeof(stack), 0 };
	bool ok = kk_dd_tr_format_msg(h, &o, kk_dd_tr_snprintf);

	if (o.len > o.cap) {	/* longer than the stack buffer: again, into one that fits */
		o.buf = malloc(o.len);
		o.cap = o.buf ? o.len : 0;
		o.len = 0;
		ok = kk_dd_tr_format_msg(h, &o, kk_dd_tr_snprintf);
		if (!o.buf)
			o.len = 0;
	}
	if (!ok)
		tr_out_mem(&o, " <bad record>", 13);
	json_line(b, o.buf ? o.buf : "", o.len < o.cap ? o.len : o.cap);
	if (o.buf != stack)
		free(o.buf);
}

static void json_event(struct kk_buf *b, const struct snap *s, const struct snap_rec *v,
		       const struct tr_conv *tc)
{
	const struct trec *h = v->h;
	const struct _ddebug *dp = h->desc;
	uint64_t mono = kk_dd_tr_conv_ns(tc, h->ts);
	char comm[16];
	size_t mark;

	kk_buf_printf(b, "{\"type\":\"event\",\"ts\":%lld,\"mono\":%" PRIu64 ",\"pid\":%d,\"tid\":%d,"
		      "\"comm\":", (long long)mono + (long long)tc->real_off, mono, (int)getpid(),
		      (int)h->tid);
	json_str(b, comm_of(&s->rings[v->ring], h->tid, comm, sizeof(comm)));
	kk_buf_write(b, ",\"module\":", 10);
	json_str(b, dp->modname ? dp->modname : "?");
	kk_buf_write(b, ",\"function\":", 12);
	json_str(b, dp->function);
	kk_buf_write(b, ",\"file\":", 8);
	json_str(b, kk_dd_rel_name(dp->filename));
	kk_buf_printf(b, ",\"line\":%u,\"format\":", (unsigned int)dp->lineno);
	json_line(b, h->fmt, strlen(h->fmt));
	kk_buf_write(b, ",\"message\":", 11);
	json_message(b, h);
	kk_buf_write(b, ",", 1);
	mark = b->len;
	if (!json_args(b, h)) {	/* a bad record: no args rather than half of them */
		b->len = mark;
		kk_buf_write(b, "\"args\":[]", 9);
	}
	kk_buf_write(b, "}\n", 2);
}

/* One "lost" line per thread shown that lost records since the previous read. */
static void json_lost(struct kk_buf *b, const struct snap *s)
{
	for (size_t i = 0; i < s->nrings; i++) {
		const struct snap_ring *sr = &s->rings[i];

		if (!sr->lost || !sr->shown)
			continue;
		kk_buf_printf(b, "{\"type\":\"lost\",\"pid\":%d,\"tid\":%d,\"comm\":", (int)getpid(),
			      (int)sr->tid);
		json_str(b, sr->comm);
		kk_buf_printf(b, ",\"count\":%" PRIu64 "}\n", sr->lost);
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

/* The events of @s up to the bound; how many of s->v were taken. */
static size_t json_events(struct kk_buf *out, const struct snap *s, const struct tr_conv *tc)
{
	size_t start = out->len, i, shown = 0;

	/* a site's strings are read only while its object is loaded */
	kk_dd_sites_lock();
	for (i = 0; i < s->ready; i++) {
		size_t mark = out->len;

		if (!kk_dd_site_known_locked(s->v[i].h->desc))
			continue;
		json_event(out, s, &s->v[i], tc);
		if (shown++ && out->len - start > JSON_READ_MAX) {
			out->len = mark;	/* the next read's */
			if (out->data)
				out->data[mark] = '\0';
			break;
		}
	}
	kk_dd_sites_unlock();
	return i;
}

static int json_show(struct kk_buf *out, void *priv)
{
	struct tr_conv tc;
	struct snap s;
	size_t taken;
	int ret;

	(void)priv;
	kk_dd_session_touch();	/* its reader holds the session's lease (spec part B) */
	kk_dd_tr_pipe_wait();
	/* a record's JSON is several times its bytes in the ring (the header alone is 40 bytes,
	 * its line 150 or more): copying, ordering and walking more of each ring is waste */
	ret = kk_dd_tr_read_pipe(&s, JSON_READ_MAX / 4);
	if (ret) {
		kk_dd_tr_snap_free(&s);
		return ret;
	}
	kk_dd_tr_conv_setup(&tc);
	json_lost(out, &s);
	taken = json_events(out, &s, &tc);
	if (!out->error)	/* a reply that cannot be made consumes nothing */
		kk_dd_tr_consume(&s, taken);
	kk_dd_tr_snap_free(&s);
	kk_dd_session_touch();	/* and again at its end: a read may take a while */
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
