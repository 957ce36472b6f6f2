// SPDX-License-Identifier: MIT
/*
 * kkctl record: the parser of the record lines, a small strict JSON reader
 * for exactly the objects dynamic_debug/trace_pipe_json writes (and, for
 * -H, kkctl record's own --format jsonl): one flat object per line, known
 * keys only, each at most once, "type" first, the keys its type needs all
 * there; integers exact to 64 bits (never through a double); strings valid
 * UTF-8, unescaped in place.  Anything else is a malformed line, said why:
 * a process is not trusted to send what it should.
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record_int.h"

struct cur {
	char *p, *end;
	const char *why;	/* the first thing found wrong */
};

static int bad(struct cur *c, const char *why)
{
	if (!c->why)
		c->why = why;
	return -1;
}

static void skip_ws(struct cur *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\r'))
		c->p++;
}

/* (The lines kkctl reads have no white space: that is tried first.) */
static inline bool eat(struct cur *c, char ch)
{
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	skip_ws(c);
	if (c->p < c->end && *c->p == ch) {
		c->p++;
		return true;
	}
	return false;
}

static bool is_digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

/* ---- strings ------------------------------------------------------------ */

static size_t put_utf8(char *d, uint32_t cp)
{
	if (cp < 0x80) {
		d[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		d[0] = (char)(0xc0 | cp >> 6);
		d[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		d[0] = (char)(0xe0 | cp >> 12);
		d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		d[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	d[0] = (char)(0xf0 | cp >> 18);
	d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	d[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* "uXXXX" at c->p into *@cp. */
static int hex4(struct cur *c, uint32_t *cp)
{
	*cp = 0;
	if (c->end - c->p < 5 || *c->p != 'u')
		return bad(c, "a bad \\u escape");
	for (int i = 1; i <= 4; i++) {
		char h = c->p[i];
		int v = is_digit(h) ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ?
			(h | 0x20) - 'a' + 10 : -1;

		if (v < 0)
			return bad(c, "a bad \\u escape");
		*cp = *cp << 4 | (uint32_t)v;
	}
	c->p += 5;
	return 0;
}

/* The escape after a backslash (c->p is past it), written at *@d. */
static int unescape(struct cur *c, char **d)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k;
	uint32_t cp, lo;

	if (c->p >= c->end)
		return bad(c, "an unterminated string");
	if (*c->p != 'u') {
		if (!*c->p || !(k = strchr(from, *c->p)))
			return bad(c, "a bad escape");
		*(*d)++ = to[k - from];
		c->p++;
		return 0;
	}
	if (hex4(c, &cp))
		return -1;
	if (cp >= 0xd800 && cp < 0xdc00) {	/* a pair: \uD8xx\uDCxx */
		if (c->p >= c->end || *c->p != '\\')
			return bad(c, "a lone surrogate");
		c->p++;
		if (hex4(c, &lo) || lo < 0xdc00 || lo > 0xdfff)
			return bad(c, "a lone surrogate");
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
	} else if (cp >= 0xdc00 && cp < 0xe000) {
		return bad(c, "a lone surrogate");
	}
	if (!cp)
		return bad(c, "a NUL in a string");
	*d += put_utf8(*d, cp);
	return 0;
}

/* A string, unescaped in place (never longer than its text) and
 * NUL-terminated at or before its closing quote.  Runs of plain bytes are
 * moved (or, before the first escape, left where they are) at once: the
 * parse reads each byte once. */
static int string(struct cur *c, const char **out)
{
	char *d;

	if (!eat(c, '"'))
		return bad(c, "a string expected");
	*out = d = c->p;
	while (c->p < c->end) {
		char *run = c->p, *stop = (char *)kkr_json_run(run, c->end, false);
		unsigned char ch;
		size_t n;

		if (d != run)
			memmove(d, run, (size_t)(stop - run));
		d += stop - run;
		if ((c->p = stop) >= c->end)
			break;
		ch = (unsigned char)*c->p;
		if (ch == '"') {
			c->p++;
			*d = '\0';
			return 0;
		}
		if (ch < 0x20)
			return bad(c, "a control character in a string");
		if (ch == '\\') {
			c->p++;
			if (unescape(c, &d))
				return -1;
			continue;
		}
		if (!(n = kkr_utf8_len((const unsigned char *)c->p, (size_t)(c->end - c->p))))
			return bad(c, "a string that is not UTF-8");
		memmove(d, c->p, n);
		d += n;
		c->p += n;
	}
	return bad(c, "an unterminated string");
}

/* A key and its colon into *@k; the one expected, @want (@n bytes), is
 * looked for first as it is written with no escape (the usual line: no
 * unescaping, no copy, and *@k is @want itself: see is_key()). */
static int key(struct cur *c, const char *want, size_t n, const char **k)
{
	if ((size_t)(c->end - c->p) > n + 2 && c->p[0] == '"' && !memcmp(c->p + 1, want, n) &&
	    c->p[n + 1] == '"' && c->p[n + 2] == ':') {
		c->p += n + 3;
		*k = want;
		return 0;
	}
	return string(c, k) || !eat(c, ':') ? -1 : 0;
}

/* Is the key @k (from key()) @name? */
static inline bool is_key(const char *k, const char *name)
{
	return k == name || !strcmp(k, name);
}

/* ---- numbers ------------------------------------------------------------ */

/* An integer (no fraction, no exponent): its sign and magnitude. */
static int integer(struct cur *c, bool *neg, uint64_t *mag)
{
	skip_ws(c);
	*neg = c->p < c->end && *c->p == '-';
	c->p += *neg;
	if (c->p >= c->end || !is_digit(*c->p))
		return bad(c, "a number expected");
	if (*c->p == '0' && c->p + 1 < c->end && is_digit(c->p[1]))
		return bad(c, "a number with a leading zero");
	for (*mag = 0; c->p < c->end && is_digit(*c->p); c->p++)
		if (__builtin_mul_overflow(*mag, 10, mag) ||
		    __builtin_add_overflow(*mag, (uint64_t)(*c->p - '0'), mag))
			return bad(c, "an integer out of range");
	if (c->p < c->end && (*c->p == '.' || *c->p == 'e' || *c->p == 'E'))
		return bad(c, "an integer expected");
	return 0;
}

static int get_u64(struct cur *c, uint64_t *v)
{
	bool neg;

	if (integer(c, &neg, v))
		return -1;
	return neg && *v ? bad(c, "a negative value where none can be") : 0;
}

static int get_i64(struct cur *c, int64_t *v)
{
	bool neg;
	uint64_t m;

	if (integer(c, &neg, &m))
		return -1;
	if (m > (uint64_t)INT64_MAX + neg)
		return bad(c, "an integer out of range");
	*v = !neg || !m ? (int64_t)m : -(int64_t)(m - 1) - 1;
	return 0;
}

/* A JSON number, or one of the strings "nan", "inf", "-inf". */
static int get_double(struct cur *c, double *v)
{
	static const struct { const char *s; double v; } named[] = {
		{ "nan", NAN }, { "inf", INFINITY }, { "-inf", -INFINITY },
	};
	char num[64], *start;
	const char *s;
	size_t n;

	skip_ws(c);
	if (c->p < c->end && *c->p == '"') {
		if (string(c, &s))
			return -1;
		for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
			if (!strcmp(s, named[i].s)) {
				*v = named[i].v;
				return 0;
			}
		return bad(c, "a float that is no number");
	}
	start = c->p;
	c->p += c->p < c->end && *c->p == '-';
	if (c->p >= c->end || !is_digit(*c->p) ||
	    (*c->p == '0' && c->p + 1 < c->end && is_digit(c->p[1])))
		return bad(c, "a number expected");
	while (c->p < c->end && is_digit(*c->p))
		c->p++;
	if (c->p < c->end && *c->p == '.') {
		if (++c->p >= c->end || !is_digit(*c->p))
			return bad(c, "a bad number");
		while (c->p < c->end && is_digit(*c->p))
			c->p++;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		c->p += c->p < c->end && (*c->p == '+' || *c->p == '-');
		if (c->p >= c->end || !is_digit(*c->p))
			return bad(c, "a bad number");
		while (c->p < c->end && is_digit(*c->p))
			c->p++;
	}
	if ((n = (size_t)(c->p - start)) >= sizeof(num))
		return bad(c, "a number too long");
	memcpy(num, start, n);
	num[n] = '\0';
	*v = strtod(num, NULL);
	return 0;
}

/* ---- args ---------------------------------------------------------------- */

static const struct {
	const char *name;
	enum kkr_type type;
} arg_types[] = {
	{ "int", KKR_INT }, { "uint", KKR_UINT }, { "char", KKR_CHAR },
	{ "float", KKR_FLOAT }, { "string", KKR_STRING }, { "pointer", KKR_POINTER },
};

static int arg_type(struct cur *c, enum kkr_type *t)
{
	const char *s;

	if (string(c, &s))
		return -1;
	for (size_t i = 0; i < sizeof(arg_types) / sizeof(arg_types[0]); i++)
		if (!strcmp(s, arg_types[i].name)) {
			*t = arg_types[i].type;
			return 0;
		}
	return bad(c, "an argument of an unknown type");
}

static int arg_value(struct cur *c, struct kkr_arg *a)
{
	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		return get_i64(c, &a->v.i);
	case KKR_UINT:
	case KKR_POINTER:
		return get_u64(c, &a->v.u);
	case KKR_FLOAT:
		return get_double(c, &a->v.f);
	case KKR_STRING:
		return string(c, &a->v.s);
	}
	return bad(c, "an argument of an unknown type");
}

static const char AK_NAME[] = "name", AK_TYPE[] = "type", AK_VALUE[] = "value";

/* {"name":..,"type":..,"value":..}: the value read as its type says, so
 * "type" comes before "value". */
static int arg(struct cur *c, struct kkr_arg *a)
{
	bool typed = false, valued = false;
	const char *k;

	memset(a, 0, sizeof(*a));
	if (!eat(c, '{'))
		return bad(c, "an argument object expected");
	do {
		if (!a->name ? key(c, AK_NAME, 4, &k) : !typed ? key(c, AK_TYPE, 4, &k) :
			       key(c, AK_VALUE, 5, &k))
			return bad(c, "an argument key expected");
		if (is_key(k, AK_NAME) && !a->name) {
			if (string(c, &a->name))
				return -1;
		} else if (is_key(k, AK_TYPE) && !typed) {
			if (arg_type(c, &a->type))
				return -1;
			typed = true;
		} else if (is_key(k, AK_VALUE) && typed && !valued) {
			if (arg_value(c, a))
				return -1;
			valued = true;
		} else {
			return bad(c, "an unknown, repeated or misplaced argument key");
		}
	} while (eat(c, ','));
	if (!eat(c, '}') || !a->name || !valued)
		return bad(c, "an argument without its name, type and value");
	return 0;
}

static int args(struct cur *c, struct kkr_line *l)
{
	if (!eat(c, '['))
		return bad(c, "\"args\" is no array");
	if (eat(c, ']'))
		return 0;
	do {
		if (l->nargs == l->cap) {
			size_t cap = l->cap ? 2 * l->cap : 8;
			struct kkr_arg *v = realloc(l->args, cap * sizeof(*v));

			if (!v)
				return bad(c, "out of memory");
			l->args = v;
			l->cap = cap;
		}
		if (arg(c, &l->args[l->nargs]))
			return -1;
		l->nargs++;
	} while (eat(c, ','));
	return eat(c, ']') ? 0 : bad(c, "\"args\" not closed");
}

/* ---- the line ------------------------------------------------------------ */

enum ftype { F_TYPE, F_U64, F_I64, F_STR, F_ARGS };

#define KEY(name, t, field) { name, sizeof(name) - 1, t, offsetof(struct kkr_line, field) }
static const struct key {
	const char *name;
	size_t len;
	enum ftype t;
	size_t off;
} keys[] = {
	KEY("type", F_TYPE, kind), KEY("host", F_STR, host), KEY("ts", F_U64, ts),
	KEY("mono", F_U64, mono), KEY("pid", F_I64, pid), KEY("vpid", F_I64, vpid),
	KEY("process", F_STR, process), KEY("tid", F_I64, tid), KEY("comm", F_STR, comm),
	KEY("module", F_STR, module), KEY("function", F_STR, function), KEY("file", F_STR, file),
	KEY("line", F_U64, line), KEY("format", F_STR, format), KEY("message", F_STR, message),
	KEY("args", F_ARGS, args), KEY("count", F_U64, count),
};
#undef KEY
enum { K_TYPE, K_HOST, K_TS, K_MONO, K_PID, K_VPID, K_PROCESS, K_TID, K_COMM, K_MODULE,
       K_FUNCTION, K_FILE, K_LINE, K_FORMAT, K_MESSAGE, K_ARGS, K_COUNT };
#define B(k) (1u << K_##k)
#define RELABEL (B(HOST) | B(VPID) | B(PROCESS))

/* Each type of line: the keys it must have, and those it may have. */
static const struct kind {
	const char *name;
	enum kkr_kind kind;
	unsigned int need, may;
} kinds[] = {
	{ "event", KKR_EVENT, B(TYPE) | B(TS) | B(MONO) | B(PID) | B(TID) | B(COMM) | B(MODULE) |
	  B(FUNCTION) | B(FILE) | B(LINE) | B(FORMAT) | B(MESSAGE) | B(ARGS), RELABEL },
	{ "lost", KKR_LOST, B(TYPE) | B(PID) | B(TID) | B(COMM) | B(COUNT), B(TS) | RELABEL },
	{ "exited", KKR_EXITED, B(TYPE) | B(TS) | B(PID) | RELABEL, 0 },
};

static int line_type(struct cur *c, const struct kind **kd)
{
	const char *s;

	if (string(c, &s))
		return -1;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(s, kinds[i].name)) {
			*kd = &kinds[i];
			return 0;
		}
	return bad(c, "a line of an unknown type");
}

/* The value of key @k into @l. */
static int field(struct cur *c, const struct key *k, struct kkr_line *l, const struct kind **kd)
{
	void *f = (char *)l + k->off;

	switch (k->t) {
	case F_TYPE:
		return line_type(c, kd);
	case F_U64:
		return get_u64(c, f);
	case F_I64:
		return get_i64(c, f);
	case F_STR:
		return string(c, f);
	case F_ARGS:
		return args(c, l);
	}
	return -1;
}

enum { NKEYS = sizeof(keys) / sizeof(keys[0]) };

/* The key @name, looked for from @from on (and round): the keys come in
 * the order of keys[], so the one after the previous is found first. */
static const struct key *find_key(const char *name, size_t from)
{
	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[(from + i) % NKEYS];

		if (is_key(name, k->name))
			return k;
	}
	return NULL;
}

/* What the keys' values must be besides their JSON types. */
static int check_ranges(struct cur *c, const struct kkr_line *l)
{
	if (l->pid < 0 || l->pid > INT32_MAX || l->tid < 0 || l->tid > INT32_MAX ||
	    l->vpid < 0 || l->vpid > INT32_MAX)
		return bad(c, "a pid or tid out of range");
	if (l->line > UINT32_MAX)
		return bad(c, "a line number out of range");
	return 0;
}

static int parse(struct cur *c, struct kkr_line *l)
{
	const struct kind *kd = NULL;
	size_t next = 0;

	if (!eat(c, '{'))
		return bad(c, "no JSON object");
	do {
		const struct key *k;
		const char *name;
		unsigned int bit;

		if (key(c, keys[next % NKEYS].name, keys[next % NKEYS].len, &name))
			return bad(c, "a key expected");
		if (!(k = find_key(name, next)))
			return bad(c, "an unknown key");
		next = (size_t)(k - keys) + 1;
		bit = 1u << (k - keys);
		if (l->seen & bit)
			return bad(c, "a repeated key");
		if (!kd && k->t != F_TYPE)
			return bad(c, "\"type\" is not the first key");
		l->seen |= bit;
		if (field(c, k, l, &kd))
			return -1;
		if (!((kd->need | kd->may) & bit))
			return bad(c, "a key this type of line does not have");
	} while (eat(c, ','));
	if (!eat(c, '}'))
		return bad(c, "the object is not closed");
	skip_ws(c);
	if (c->p != c->end)
		return bad(c, "text after the object");
	if ((l->seen & kd->need) != kd->need)
		return bad(c, "a key is missing");
	if ((l->seen & RELABEL) && (l->seen & RELABEL) != RELABEL)
		return bad(c, "host, vpid and process go together");
	l->kind = kd->kind;
	l->relabelled = (l->seen & RELABEL) != 0;
	return check_ranges(c, l);
}

int kkr_parse_line(char *s, size_t len, struct kkr_line *l, const char **why)
{
	struct cur c = { s, s + len, NULL };
	struct kkr_arg *keep = l->args;
	size_t cap = l->cap;

	memset(l, 0, sizeof(*l));
	l->args = keep;
	l->cap = cap;
	l->comm = l->module = l->function = l->file = l->format = l->message = "";
	l->host = l->process = "";
	if (!memchr(s, '\0', len) && !parse(&c, l))
		return 0;
	*why = c.why ? c.why : "a NUL byte in the line";
	return -1;
}

void kkr_line_free(struct kkr_line *l)
{
	free(l->args);
	l->args = NULL;
	l->cap = l->nargs = 0;
}
