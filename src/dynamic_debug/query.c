// SPDX-License-Identifier: MIT
/*
 * The dynamic-debug query language.  The grammar, the error texts and the
 * corner cases follow the kernel's lib/dynamic_debug.c; the seed RFC's '!'
 * negation and the "listing line" form (a line of dynamic_debug/control
 * written back) are additions.
 *
 *   block   := query ( (';' | '\n') query )*
 *   query   := ws* ( '#' comment | word{1,9} | listing-line )
 *   word    := '"' [^"]* '"' | "'" [^']* "'" | [^ws]+   ('#' at a word start ends the query)
 *   words   := (keyword value)* flags
 *   flags   := ('+' | '-' | '=') [pmfsltd_]*
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "dynamic_debug/query.h"

/* ---- messages --------------------------------------------------------------------- */

static __attribute__((format(printf, 2, 3))) void ddebug_msg(struct ddebug_msgs *m, const char *fmt, ...)
{
	va_list ap;
	size_t need;
	int n;

	if (!m || m->oom)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	need = m->len + 8 + (size_t)n + 2;
	if (need > m->cap) {
		size_t cap = m->cap ? m->cap : 256;
		char *nb;

		while (cap < need)
			cap *= 2;
		nb = realloc(m->buf, cap);
		if (!nb) {
			m->oom = 1;
			return;
		}
		m->buf = nb;
		m->cap = cap;
	}
	memcpy(m->buf + m->len, "dyndbg: ", 8);
	va_start(ap, fmt);
	vsnprintf(m->buf + m->len + 8, (size_t)n + 1, fmt, ap);
	va_end(ap);
	m->len += 8 + (size_t)n;
	m->buf[m->len++] = '\n';
	m->buf[m->len] = '\0';
}

void ddebug_msgs_free(struct ddebug_msgs *m)
{
	free(m->buf);
	memset(m, 0, sizeof(*m));
}

/* ---- characters --------------------------------------------------------------------- */

static int is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static char *skip_spaces(char *s)
{
	while (kk_is_space((unsigned char)*s))
		s++;
	return s;
}

/* ---- flags ----------------------------------------------------------------------------- */

static const struct {
	char c;
	unsigned int flag;
} opt_array[] = {
	{ 'p', DDQ_F_PRINT },
	{ 'T', DDQ_F_TRACE },
	{ 'm', DDQ_F_INCL_MODNAME },
	{ 'f', DDQ_F_INCL_FUNCNAME },
	{ 's', DDQ_F_INCL_SOURCENAME },
	{ 'l', DDQ_F_INCL_LINENO },
	{ 't', DDQ_F_INCL_TID },
	{ 'd', DDQ_F_INCL_STACK },
	{ '_', DDQ_F_NONE },
};
#define NOPTS (sizeof(opt_array) / sizeof(opt_array[0]))

/* Parse one flags word ("+pmf", "=_", "-p"). 0 or -EINVAL. */
static int ddebug_parse_flags(const char *str, unsigned int *flags, unsigned int *mask,
			   struct ddebug_msgs *m)
{
	unsigned int f = 0;
	int op;

	switch (*str) {
	case '+':
	case '-':
	case '=':
		op = *str++;
		break;
	default:
		if (*str)
			ddebug_msg(m, "bad flag-op %c, at start of %s", *str, str);
		else
			ddebug_msg(m, "bad flag-op , at start of ");
		return -EINVAL;
	}
	for (; *str; str++) {
		size_t i;

		for (i = 0; i < NOPTS; i++)
			if (*str == opt_array[i].c)
				break;
		if (i == NOPTS) {
			ddebug_msg(m, "unknown flag '%c'", *str);
			return -EINVAL;
		}
		f |= opt_array[i].flag;
	}
	switch (op) {
	case '=':
		*mask = 0;
		*flags = f;
		break;
	case '+':
		*mask = ~0u;
		*flags = f;
		break;
	default:	/* '-' */
		*mask = ~f;
		*flags = 0;
		break;
	}
	return 0;
}

void ddebug_flags_str(unsigned int flags, char *out)
{
	char *p = out;

	for (size_t i = 0; i < NOPTS; i++)
		if (opt_array[i].flag & flags)
			*p++ = opt_array[i].c;
	if (p == out)
		*p++ = '_';
	*p = '\0';
}

/* ---- escapes --------------------------------------------------------------------------- */

size_t ddebug_unescape(char *s)
{
	char *w = s;
	const char *r = s;

	while (*r) {
		if (*r != '\\' || !r[1]) {
			*w++ = *r++;
			continue;
		}
		switch (r[1]) {
		case 'n': *w++ = '\n'; r += 2; continue;
		case 't': *w++ = '\t'; r += 2; continue;
		case 'r': *w++ = '\r'; r += 2; continue;
		case 'v': *w++ = '\v'; r += 2; continue;
		case 'f': *w++ = '\f'; r += 2; continue;
		case 'a': *w++ = '\a'; r += 2; continue;
		case 'e': *w++ = '\033'; r += 2; continue;
		case '\\': *w++ = '\\'; r += 2; continue;
		case '"': *w++ = '"'; r += 2; continue;
		default:
			break;
		}
		if (r[1] >= '0' && r[1] <= '7') {
			unsigned int v = 0;
			int i;

			r++;
			for (i = 0; i < 3 && *r >= '0' && *r <= '7'; i++, r++)
				v = v * 8 + (unsigned int)(*r - '0');
			*w++ = (char)(v & 0xff);
			continue;
		}
		*w++ = *r++;	/* unknown escape: keep the backslash */
	}
	*w = '\0';
	return (size_t)(w - s);
}

size_t ddebug_escape(const char *s, char *out, size_t len)
{
	size_t n = 0;

#define PUT(c) do { if (n + 1 < len) out[n] = (c); n++; } while (0)
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char e = 0;

		switch (c) {
		case '\n': e = 'n'; break;
		case '\t': e = 't'; break;
		case '\r': e = 'r'; break;
		case '\v': e = 'v'; break;
		case '\f': e = 'f'; break;
		case '\\': e = '\\'; break;
		case '"': e = '"'; break;
		default: break;
		}
		if (e) {
			PUT('\\');
			PUT(e);
		} else if (c < 0x20 || c == 0x7f) {
			PUT('\\');
			PUT((char)('0' + ((c >> 6) & 7)));
			PUT((char)('0' + ((c >> 3) & 7)));
			PUT((char)('0' + (c & 7)));
		} else {
			PUT((char)c);
		}
	}
#undef PUT
	if (len)
		out[n < len ? n : len - 1] = '\0';
	return n;
}

/* ---- globs ----------------------------------------------------------------------------- */

bool ddebug_glob(const char *p, const char *s)
{
	const char *star = NULL, *resume = NULL;

	while (*s) {
		if (*p == '*') {
			while (*p == '*')
				p++;
			if (!*p)
				return true;
			star = p;
			resume = s;
		} else if (*p == '?' || *p == *s) {
			p++;
			s++;
		} else if (star) {
			p = star;
			s = ++resume;
		} else {
			return false;
		}
	}
	while (*p == '*')
		p++;
	return !*p;
}

/* ---- one query ------------------------------------------------------------------------- */

static int tokenize(char *buf, char *words[], int maxwords, struct ddebug_msgs *m)
{
	int nwords = 0;

	while (*buf) {
		char *end;

		buf = skip_spaces(buf);
		if (!*buf)
			break;
		if (*buf == '#')
			break;		/* a comment to the end of the query */
		if (*buf == '"' || *buf == '\'') {
			int quote = *buf++;

			for (end = buf; *end && *end != quote; end++)
				;
			if (!*end) {
				ddebug_msg(m, "unclosed quote: %s", buf);
				return -EINVAL;
			}
		} else {
			for (end = buf; *end && !kk_is_space((unsigned char)*end); end++)
				;
		}
		if (nwords == maxwords) {
			ddebug_msg(m, "too many words, legal max <=%d", maxwords);
			return -EINVAL;
		}
		if (*end)
			*end++ = '\0';
		words[nwords++] = buf;
		buf = end;
	}
	return nwords;
}

static int check_set(const char **dest, char *src, const char *name, struct ddebug_msgs *m)
{
	if (*dest) {
		ddebug_msg(m, "match-spec:%s val:%s overridden by %s", name, *dest, src);
		return -EINVAL;
	}
	*dest = src;
	return 0;
}

/* A '!' in front of the value negates the term. */
static int check_set_neg(const char **dest, bool *neg, char *src, const char *name,
			 struct ddebug_msgs *m)
{
	bool n = src[0] == '!';

	if (check_set(dest, n ? src + 1 : src, name, m))
		return -EINVAL;
	*neg = n;
	return 0;
}

static int parse_lineno(const char *str, unsigned int *val, struct ddebug_msgs *m)
{
	unsigned long long v = 0;
	const char *p = str;

	if (!*str) {
		*val = 0;
		return 0;
	}
	if (*p == '+')
		p++;
	if (!*p)
		goto bad;
	for (; *p; p++) {
		if (!is_digit((unsigned char)*p))
			goto bad;
		v = v * 10 + (unsigned long long)(*p - '0');
		if (v > UINT_MAX)
			goto bad;
	}
	*val = (unsigned int)v;
	return 0;
bad:
	ddebug_msg(m, "bad line-number: %s", str);
	return -EINVAL;
}

static int parse_linerange(struct ddebug_query *q, char *first, struct ddebug_msgs *m)
{
	char *last = strchr(first, '-');

	if (q->first_lineno || q->last_lineno) {
		ddebug_msg(m, "match-spec: line used 2x");
		return -EINVAL;
	}
	if (last)
		*last++ = '\0';
	if (parse_lineno(first, &q->first_lineno, m))
		return -EINVAL;
	if (last) {
		if (parse_lineno(last, &q->last_lineno, m))
			return -EINVAL;
		if (q->last_lineno == 0)
			q->last_lineno = UINT_MAX;
		if (q->last_lineno < q->first_lineno) {
			ddebug_msg(m, "last-line:%u < 1st-line:%u", q->last_lineno, q->first_lineno);
			return -EINVAL;
		}
	} else {
		q->last_lineno = q->first_lineno;
	}
	return 0;
}

static int parse_terms(char *words[], int nwords, struct ddebug_query *q, const char *modname,
		       struct ddebug_msgs *m)
{
	if (nwords % 2) {
		ddebug_msg(m, "expecting pairs of match-spec <value>");
		return -EINVAL;
	}
	for (int i = 0; i < nwords; i += 2) {
		char *kw = words[i], *arg = words[i + 1];
		int rc;

		if (!strcmp(kw, "func")) {
			rc = check_set_neg(&q->function, &q->neg_func, arg, "func", m);
		} else if (!strcmp(kw, "file")) {
			char *tail;

			if (check_set_neg(&q->filename, &q->neg_file, arg, "file", m))
				return -EINVAL;
			/* "file f.c:func" or "file f.c:N-M" */
			tail = strchr(arg, ':');
			if (!tail)
				continue;
			*tail++ = '\0';
			if (is_alpha((unsigned char)*tail) || *tail == '*' || *tail == '?')
				rc = check_set(&q->function, tail, "func", m);
			else
				rc = parse_linerange(q, tail, m);
		} else if (!strcmp(kw, "module")) {
			rc = check_set_neg(&q->module, &q->neg_module, arg, "module", m);
		} else if (!strcmp(kw, "format")) {
			bool neg = arg[0] == '!';

			if (neg)
				arg++;
			ddebug_unescape(arg);
			rc = check_set(&q->format, arg, "format", m);
			if (!rc)
				q->neg_format = neg;
		} else if (!strcmp(kw, "line")) {
			rc = parse_linerange(q, arg, m);
		} else if (!strcmp(kw, "class")) {
			rc = check_set(&q->class_string, arg, "class", m);
		} else {
			ddebug_msg(m, "unknown keyword \"%s\"", kw);
			return -EINVAL;
		}
		if (rc)
			return rc;
	}
	if (!q->module && modname)
		q->module = modname;
	return 0;
}

static bool is_flag_op(char c)
{
	return c && strchr("+-=", c);
}

/*
 * A query whose last word is no flags word: 'file kkd.c', or '+p file kkd.c'
 * (the flags first).  The kernel says "bad flag-op k, at start of kkd.c",
 * about a word the user did not mean as flags; one line here names the
 * query and says what it lacks (and the kernel's words, for those who grep
 * for them).  @text is the query as written.
 */
static void no_flags_word(const char *text, char *words[], int nwords, struct ddebug_msgs *m)
{
	const char *last = words[nwords - 1], *rest;
	size_t fl = strlen(words[0]);

	if (nwords > 1 && is_flag_op(words[0][0]) && !strncmp(text, words[0], fl)) {
		for (rest = text + fl; kk_is_space((unsigned char)*rest); rest++)
			;
		ddebug_msg(m, "query \"%s\" does not end in a flags word such as +p: the flags go "
			   "last, \"%s %s\" (bad flag-op %c, at start of %s)", text, rest,
			   words[0], last[0], last);
	}
	else
		ddebug_msg(m, "query \"%s\" does not end in a flags word such as +p "
			   "(bad flag-op %c, at start of %s)", text, last[0], last);
}

static int parse_query(char *s, struct ddebug_query *q, const char *modname, struct ddebug_msgs *m)
{
	char *words[DDQ_MAXWORDS];
	int nwords = tokenize(s, words, DDQ_MAXWORDS, m);

	if (nwords <= 0) {
		ddebug_msg(m, "tokenize failed");
		return -EINVAL;
	}
	/* the flags word first, as the kernel does: a flags error hides the rest */
	if (!is_flag_op(words[nwords - 1][0])) {
		no_flags_word(q->text, words, nwords, m);
		return -EINVAL;
	}
	if (ddebug_parse_flags(words[nwords - 1], &q->flags, &q->mask, m)) {
		ddebug_msg(m, "flags parse failed");
		return -EINVAL;
	}
	if (parse_terms(words, nwords - 1, q, modname, m)) {
		ddebug_msg(m, "query parse failed");
		return -EINVAL;
	}
	return 0;
}

/* ---- listing lines --------------------------------------------------------------------- */

/* "PATH:DIGITS [" at @s: the start of a line of the control listing. */
static bool is_listing_line(const char *s)
{
	const char *e = s, *colon = NULL;

	while (*e && !kk_is_space((unsigned char)*e)) {
		if (*e == ':')
			colon = e;
		e++;
	}
	if (!colon || colon == s || colon + 1 == e)
		return false;
	for (const char *d = colon + 1; d < e; d++)
		if (!is_digit((unsigned char)*d))
			return false;
	if (!kk_is_space((unsigned char)*e))
		return false;
	while (kk_is_space((unsigned char)*e) && *e != '\n')
		e++;
	return *e == '[';
}

/* The end of the word at @p: its first space or the NUL. */
static char *word_end(char *p)
{
	while (*p && !kk_is_space((unsigned char)*p))
		p++;
	return p;
}

/*
 * The stages of parse_listing_line(), one per field: each takes the line at
 * its field, cuts the field in place and returns the next one, or NULL when
 * the field is malformed.
 */

/* path:line; looks_like_listing() has seen the colon. */
static char *listing_location(char *p, struct ddebug_query *q, struct ddebug_msgs *m)
{
	char *e, *colon = NULL;
	unsigned int line;

	for (e = p; *e && !kk_is_space((unsigned char)*e); e++)
		if (*e == ':')
			colon = e;
	*colon = '\0';
	*e = '\0';
	q->filename = p;
	if (parse_lineno(colon + 1, &line, m) || line == 0)
		return NULL;
	q->first_lineno = q->last_lineno = line;
	return skip_spaces(e + 1);
}

/* [module]function */
static char *listing_site(char *p, struct ddebug_query *q)
{
	char *e = strchr(p, ']');

	if (*p != '[' || !e)
		return NULL;
	*e = '\0';
	q->module = p + 1;
	p = e + 1;
	e = word_end(p);
	if (e == p || !*e)
		return NULL;
	*e = '\0';
	q->function = p;
	return skip_spaces(e + 1);
}

/* =flags */
static char *listing_flags(char *p, struct ddebug_query *q, struct ddebug_msgs *m)
{
	char *e = word_end(p);

	if (*p != '=' || !*e)
		return NULL;
	*e = '\0';
	if (ddebug_parse_flags(p, &q->flags, &q->mask, m))
		return NULL;
	return skip_spaces(e + 1);
}

/* "format", with backslash escapes inside */
static char *listing_format(char *p, struct ddebug_query *q)
{
	char *e;

	if (*p != '"')
		return NULL;
	for (e = ++p; *e && *e != '"'; e++)
		if (*e == '\\' && e[1])
			e++;
	if (*e != '"')
		return NULL;
	*e = '\0';
	ddebug_unescape(p);
	q->format = p;
	return skip_spaces(e + 1);
}

/* The class, when the site has one: "class:NAME" or "class unknown, _id:N". */
static char *listing_class(char *p, struct ddebug_query *q, struct ddebug_msgs *m)
{
	unsigned int id;
	char *e;

	if (!strncmp(p, "class:", 6)) {
		p += 6;
		e = word_end(p);
		if (e == p)
			return NULL;
		if (*e)
			*e++ = '\0';
		q->class_string = p;
		return skip_spaces(e);
	}
	if (strncmp(p, "class unknown, _id:", 19))
		return p;
	p += 19;
	for (e = p; is_digit((unsigned char)*e); e++)
		;
	if (e == p || e - p > 3)
		return NULL;
	if (*e)
		*e++ = '\0';
	if (parse_lineno(p, &id, m) || id >= DDQ_CLASS_DFLT)
		return NULL;
	q->exact_class_id = (int)id;
	return skip_spaces(e);
}

/* A C++ site's qualified name: func:"Ring<int>::push", escaped as the format is. */
static char *listing_qname(char *p, struct ddebug_query *q)
{
	char *e;

	if (strncmp(p, "func:\"", 6))
		return p;
	for (e = p += 6; *e && *e != '"'; e++)
		if (*e == '\\' && e[1])
			e++;
	if (*e != '"' || e == p)
		return NULL;
	*e = '\0';
	ddebug_unescape(p);
	q->qname = p;
	return skip_spaces(e + 1);
}

/*
 *   path:line [module]function =flags "format"[ class:NAME | class unknown, _id:N]
 *   [ func:"C++ name"]
 * Every term is exact; the flags are set as listed.  Nothing but a comment
 * may follow.
 */
static int parse_listing_line(char *s, struct ddebug_query *q, struct ddebug_msgs *m)
{
	char *p = listing_location(s, q, m);

	if (p)
		p = listing_site(p, q);
	if (p)
		p = listing_flags(p, q, m);
	if (p)
		p = listing_format(p, q);
	if (p)
		p = listing_class(p, q, m);
	if (p)
		p = listing_qname(p, q);
	if (!p || (*p && *p != '#')) {
		ddebug_msg(m, "malformed control line (expected 'path:line [module]function "
			"=flags \"format\"')");
		return -EINVAL;
	}
	q->exact = true;
	return 0;
}

/* ---- a block ------------------------------------------------------------------------- */

void ddebug_block_free(struct ddebug_block *b)
{
	free(b->q);
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

static struct ddebug_query *block_add(struct ddebug_block *b)
{
	if (b->n == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 8;
		struct ddebug_query *nq = realloc(b->q, cap * sizeof(*nq));

		if (!nq)
			return NULL;
		b->q = nq;
		b->cap = cap;
	}
	memset(&b->q[b->n], 0, sizeof(b->q[0]));
	b->q[b->n].exact_class_id = -1;
	return &b->q[b->n++];
}

int ddebug_parse_block(const char *text, size_t len, const char *modname, struct ddebug_block *b,
		    struct ddebug_msgs *m, unsigned int *bad_index)
{
	char *work, *texts, *next;
	unsigned int idx = 0;
	size_t tpos = 0;

	memset(b, 0, sizeof(*b));
	if (bad_index)
		*bad_index = 0;
	if (len > SIZE_MAX / 2 - 2)
		return -ENOMEM;
	/* the working copy, then room for a copy of each query's text */
	b->buf = malloc(2 * (len + 1));
	if (!b->buf)
		return -ENOMEM;
	work = b->buf;
	texts = b->buf + len + 1;
	memcpy(work, text, len);
	work[len] = '\0';		/* like the kernel's string copy: stops at a NUL */

	for (char *s = work; s; s = next) {
		struct ddebug_query *q;
		char *end, *t;
		size_t tl;
		int listing;

		s = skip_spaces(s);
		listing = is_listing_line(s);
		end = listing ? strchr(s, '\n') : strpbrk(s, ";\n");
		next = NULL;
		if (end) {
			*end = '\0';
			next = end + 1;
		}
		if (!*s || *s == '#')
			continue;
		idx++;
		/* keep the text as written (trailing blanks trimmed) for reports */
		tl = strlen(s);
		while (tl && kk_is_space((unsigned char)s[tl - 1]))
			tl--;
		t = texts + tpos;
		memcpy(t, s, tl);
		t[tl] = '\0';
		tpos += tl + 1;

		q = block_add(b);
		if (!q) {
			ddebug_block_free(b);
			return -ENOMEM;
		}
		q->text = t;
		if (listing ? parse_listing_line(s, q, m) : parse_query(s, q, modname, m)) {
			if (bad_index)
				*bad_index = idx;
			ddebug_block_free(b);
			return -EINVAL;
		}
	}
	return 0;
}

size_t ddebug_query_len(const char *text, size_t len)
{
	size_t i = 0, nl;
	int listing = 0;
	char *line;

	while (i < len && kk_is_space((unsigned char)text[i]) && text[i] != '\n')
		i++;
	for (nl = i; nl < len && text[nl] && text[nl] != '\n'; nl++)
		;
	/* is_listing_line() wants a NUL-terminated line */
	line = malloc(nl - i + 1);
	if (line) {
		memcpy(line, text + i, nl - i);
		line[nl - i] = '\0';
		listing = is_listing_line(line);
		free(line);
	}
	for (; i < len && text[i]; i++)
		if (text[i] == '\n' || (!listing && text[i] == ';'))
			return i;
	return i;
}

/* ---- matching --------------------------------------------------------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

bool ddebug_match(const struct ddebug_query *q, const struct ddebug_site *s)
{
	bool hit;

	if (q->exact) {
		return !strcmp(q->module, s->module) &&
		       (!strcmp(q->filename, s->filename) || !strcmp(q->filename, s->filename_rel)) &&
		       !strcmp(q->function, s->function) && q->first_lineno == s->lineno &&
		       !strcmp(q->format, s->format) &&
		       (!q->qname || (s->qname && !strcmp(q->qname, s->qname)));
	}
	if (q->module) {
		hit = ddebug_glob(q->module, s->module);
		if (hit == q->neg_module)
			return false;
	}
	if (q->filename) {
		hit = ddebug_glob(q->filename, s->filename) ||
		      ddebug_glob(q->filename, base_name(s->filename)) ||
		      ddebug_glob(q->filename, s->filename_rel);
		if (hit == q->neg_file)
			return false;
	}
	if (q->function) {
		hit = ddebug_glob(q->function, s->function) ||
		      (s->qname && ddebug_glob(q->function, s->qname));
		if (hit == q->neg_func)
			return false;
	}
	if (q->format) {
		if (*q->format == '^') {
			size_t n = strlen(q->format + 1);

			hit = !strncmp(s->format, q->format + 1, n);
		} else {
			hit = strstr(s->format, q->format) != NULL;
		}
		if (hit == q->neg_format)
			return false;
	}
	if (q->first_lineno && s->lineno < q->first_lineno)
		return false;
	if (q->last_lineno && s->lineno > q->last_lineno)
		return false;
	return true;
}
