// SPDX-License-Identifier: MIT
/*
 * kkctl: writes of dynamic_debug/control, finished as the user meant them.
 *
 * - A write longer than the file takes at once (4095 bytes, the kernel's
 *   limit: a file of 300 queries) is sent in pieces cut at query
 *   boundaries, each piece a write of its own, one after the other.  Every
 *   query is parsed here first, with the library's own parser
 *   (src/dynamic_debug/query.c, pure functions over strings), so that a
 *   malformed query anywhere, or one query longer than the limit, changes
 *   nothing: no piece is sent.  What a process can still refuse after that
 *   (decorations a site cannot print, a patch that fails) it refuses for
 *   the piece it is in: the pieces before stay applied, and the line says
 *   which were.  The replies are put together as one write's: queries
 *   numbered through, one total line.
 * - A query that matched no site in any process reached (a mistyped file
 *   name) is named on stderr; with --strict that is exit status 3.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/internal.h"
#include "dynamic_debug/query.h"
#include "kkctl.h"

#define DD_CONTROL	"dynamic_debug/control"
#define DD_PIECE_MAX	4095	/* what it takes in one write: the kernel's 4096, less one */
#define DD_WARN_MAX	10	/* queries named; the others counted */

bool kkctl_strict;

/* A piece: bytes [off, off + len) of the text, queries first + 1 .. first + n. */
struct piece {
	size_t off, len;
	unsigned first, n;
};

/* The write of this command, if it is one of dynamic_debug/control. */
static struct {
	bool on;
	const char *text;
	struct piece *pieces;
	unsigned np;
	struct ddebug_block block;	/* parsed here; .n 0 if it did not parse */
	bool *seen, *matched;		/* per query: some reply counted it, and matched */
	unsigned reached;		/* the replies counted */
} dd;

/* Where query boundaries are (ddebug_query_len()): one query, or an empty
 * or comment one, at @p (@n bytes left); *@real: it is a query. */
static size_t next_query(const char *p, size_t n, bool *real)
{
	size_t ql = ddebug_query_len(p, n), i = 0;

	while (i < ql && kk_is_space((unsigned char)p[i]))
		i++;
	*real = i < ql && p[i] != '#';
	return ql;
}

/* The query @k (1-based) of @text: its bytes, trimmed, into *@q, *@ql. */
static void find_query(const char *text, size_t len, unsigned k, const char **q, size_t *ql)
{
	size_t pos = 0;

	*q = "";
	*ql = 0;
	while (pos < len) {
		bool real;
		size_t n = next_query(text + pos, len - pos, &real);

		if (real && !--k) {
			*q = text + pos;
			*ql = n;
			while (*ql && kk_is_space((unsigned char)**q))
				(*q)++, (*ql)--;
			while (*ql && kk_is_space((unsigned char)(*q)[*ql - 1]))
				(*ql)--;
			return;
		}
		pos += n + 1;
	}
}

/* A malformed query @bad: one line, its first message (the parser's
 * "dyndbg: " taken off). */
static void say_malformed(const char *text, size_t len, unsigned bad, const struct ddebug_msgs *m)
{
	const char *q, *msg = m->buf ? m->buf : "", *nl;
	size_t ql;

	find_query(text, len, bad, &q, &ql);
	if (!strncmp(msg, "dyndbg: ", 8))
		msg += 8;
	nl = strchr(msg, '\n');
	fprintf(stderr, "%s: query %u", kkctl_prog, bad);
	if (strncmp(msg, "query \"", 7)) {	/* (unless the message names it) */
		fputs(" \"", stderr);
		kkctl_put_escaped(stderr, q, ql, "");
		fputs("\" is malformed", stderr);
	}
	fputs(": ", stderr);
	kkctl_put_escaped(stderr, msg, nl ? (size_t)(nl - msg) : strlen(msg), "");
	fputs(": nothing was written\n", stderr);
}

/* Cut @text into pieces of at most DD_PIECE_MAX bytes, at query
 * boundaries.  0, or -1 after saying why. */
static int cut(const char *text, size_t len)
{
	struct piece cur = { 0, 0, 0, 0 };
	size_t pos = 0;
	unsigned k = 0;

	dd.pieces = calloc(len / 2 + 2, sizeof(*dd.pieces));	/* a query is 2 bytes or more */
	if (!dd.pieces)
		return -1;
	while (pos < len) {
		bool real;
		size_t n = next_query(text + pos, len - pos, &real);

		k += real;
		if (n > DD_PIECE_MAX) {
			/* (as a process's refusal reads: "write FILE: strerror: why") */
			fprintf(stderr, "%s: write %s: %s: query %u is %zu bytes, more than one "
				"write takes (%d bytes): nothing was written\n", kkctl_prog,
				DD_CONTROL, strerror(E2BIG), k, n, DD_PIECE_MAX);
			return -1;
		}
		if (pos + n - cur.off > DD_PIECE_MAX) {	/* this one starts the next */
			dd.pieces[dd.np++] = cur;
			cur = (struct piece){ pos, 0, k - real, 0 };
		}
		cur.len = pos + n - cur.off;
		cur.n += real;
		pos += n + 1;
	}
	dd.pieces[dd.np++] = cur;
	return 0;
}

/*
 * A write of @text to @file: if it is dynamic_debug/control, parse it
 * (to count what the replies matched) and, if it is too long for one
 * write, cut it.  0, or -1 after saying why nothing was written.
 */
int kkctl_dd_prepare(const char *verb, const char *file, const char *text, size_t len)
{
	struct ddebug_msgs m = { 0 };
	unsigned bad = 0;
	int ret;

	if (strcmp(verb, "write") || strcmp(file, DD_CONTROL))
		return 0;
	dd.on = true;
	dd.text = text;
	ret = ddebug_parse_block(text, len, NULL, &dd.block, &m, &bad);
	if (ret && len > DD_PIECE_MAX) {
		if (bad)
			say_malformed(text, len, bad, &m);
		else
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		ddebug_msgs_free(&m);
		return -1;
	}
	ddebug_msgs_free(&m);	/* (a short write: the process says it) */
	dd.seen = calloc(dd.block.n + 1, sizeof(bool));
	dd.matched = calloc(dd.block.n + 1, sizeof(bool));
	if (!dd.seen || !dd.matched) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return -1;
	}
	return len > DD_PIECE_MAX ? cut(text, len) : 0;
}

/* ---- the replies of the pieces, as one ------------------------------------ */

struct totals {
	unsigned long long v[6];	/* queries matched changed flipped syncs apply_us */
	bool unbatched;
};

/* A "total: ..." line into @t.  False if it is not one. */
static bool add_total(const char *line, struct totals *t)
{
	unsigned long long v[6];

	if (sscanf(line, "total: queries %llu matched %llu changed %llu flipped %llu syncs %llu "
		   "apply_us %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]) != 6)
		return false;
	for (int i = 0; i < 6; i++)
		t->v[i] += v[i];
	t->unbatched |= strstr(line, "(unbatched)") != NULL;
	return true;
}

/* Piece @p's reply @body into @f: "query N" numbered through, the total
 * added up into @t (NULL: a message, no total). */
static void merge_reply(FILE *f, const struct piece *p, const char *body, size_t len,
			struct totals *t)
{
	const char *end = body + len;

	for (const char *l = body, *nl; l < end; l = nl + 1) {
		int dy = strncmp(l, "dyndbg: ", 8) ? 0 : 8, used = 0;	/* (its messages too) */
		unsigned n;

		nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		if (sscanf(l + dy, "query %u %n", &n, &used) == 1 && used)
			fprintf(f, "%.*squery %u %.*s\n", dy, l, n + p->first,
				(int)(nl - l - dy - used), l + dy + used);
		else if (!t || strncmp(l, "total: ", 7) || !add_total(l, t))
			fprintf(f, "%.*s\n", (int)(nl - l), l);
	}
}

/* The process's message about piece @p, its queries numbered through. */
static void renumber(const struct piece *p, struct result *res)
{
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);

	if (!f || !res->body)
		return;
	merge_reply(f, p, res->body, res->len, NULL);
	if (fclose(f)) {
		free(out);
		return;
	}
	while (olen && out[olen - 1] == '\n')
		olen--;
	free(res->body);
	res->body = out;
	res->len = olen;
}

/* Why piece @k failed, in res->err: which queries were applied. */
static void piece_failed(unsigned k, struct result *res)
{
	const struct piece *p = &dd.pieces[k];
	char was[sizeof(res->err)];

	snprintf(was, sizeof(was), "%s", res->err);
	if (!k)
		snprintf(res->err, sizeof(res->err), "%.300s (piece 1 of %u, queries 1-%u: nothing "
			 "was written)", was, dd.np, p->n);
	else
		snprintf(res->err, sizeof(res->err), "%.300s (piece %u of %u, queries %u-%u; "
			 "queries 1-%u were applied, %u and after were not)", was, k + 1, dd.np,
			 p->first + 1, p->first + p->n, p->first, p->first + 1);
}

/* The write to @t, piece by piece; the replies as one into @res. */
static void request_pieces(const struct target *t, struct result *res)
{
	struct totals tot = { { 0 }, false };
	char *out = NULL;
	size_t olen = 0;
	FILE *f = open_memstream(&out, &olen);

	for (unsigned k = 0; f && k < dd.np; k++) {
		const struct piece *p = &dd.pieces[k];

		kkctl_request(t, "write", DD_CONTROL, dd.text + p->off, p->len, res);
		if (!res->ok) {
			renumber(p, res);
			piece_failed(k, res);
			fclose(f);
			free(out);
			return;
		}
		merge_reply(f, p, res->body, res->len, &tot);
		free(res->body);
		res->body = NULL;
	}
	if (!f) {
		memset(res, 0, sizeof(*res));
		snprintf(res->err, sizeof(res->err), "out of memory");
		return;
	}
	fprintf(f, "total: queries %llu matched %llu changed %llu flipped %llu syncs %llu "
		"apply_us %llu%s\n", tot.v[0], tot.v[1], tot.v[2], tot.v[3], tot.v[4], tot.v[5],
		tot.unbatched ? " (unbatched)" : "");
	res->ok = !fclose(f);
	res->body = out;
	res->len = olen;
}

/* Serve @t: the request, in pieces if this write is cut. */
void kkctl_dd_request(const struct target *t, const char *verb, const char *file,
		      const char *body, size_t blen, struct result *res)
{
	if (dd.np > 1)
		request_pieces(t, res);
	else
		kkctl_request(t, verb, file, body, blen, res);
}

/* ---- what matched ---------------------------------------------------------- */

/* The queries whose text is @q (@ql bytes) matched @m sites here. */
static void count_query(const char *q, size_t ql, unsigned long m)
{
	for (size_t i = 0; i < dd.block.n; i++) {
		const char *qt = dd.block.q[i].text;

		if (strlen(qt) == ql && !memcmp(qt, q, ql)) {
			dd.seen[i] = true;
			dd.matched[i] |= m > 0;
		}
	}
}

/* A process's reply (ok) to this write: what each query matched
 * ('query N "TEXT": matched M changed C'). */
void kkctl_dd_count(const struct result *r)
{
	const char *end = r->body + r->len;

	if (!dd.on || !dd.block.n || !r->ok)
		return;
	dd.reached++;
	for (const char *l = r->body, *nl; l < end; l = nl + 1) {
		const char *q, *m = NULL;
		unsigned long n;

		nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		if (strncmp(l, "query ", 6) || !(q = memchr(l, '"', (size_t)(nl - l))))
			continue;
		/* the last '": matched ': the query's text may hold one */
		for (const char *s = q + 1; (s = memmem(s, (size_t)(nl - s), "\": matched ", 11));
		     s++)
			m = s;
		if (m && sscanf(m + 11, "%lu", &n) == 1)
			count_query(q + 1, (size_t)(m - q - 1), n);
	}
}

/* After every reply: name the queries that matched no site in any process
 * reached.  True if there were (--strict makes that exit status 3). */
bool kkctl_dd_finish(void)
{
	const char *pfx = kkctl_strict ? "" : "warning: ";
	unsigned named = 0, more = 0;

	for (size_t i = 0; dd.reached && i < dd.block.n; i++) {
		const char *qt = dd.block.q[i].text;

		if (!dd.seen[i] || dd.matched[i])
			continue;
		if (named++ == DD_WARN_MAX) {
			named--;
			more++;
			continue;
		}
		fprintf(stderr, "%s: %squery %zu \"", kkctl_prog, pfx, i + 1);
		kkctl_put_escaped(stderr, qt, strlen(qt), "");
		if (dd.reached > 1)
			fprintf(stderr, "\" matched no site in any of %u processes\n", dd.reached);
		else
			fputs("\" matched no site\n", stderr);
	}
	if (more)
		fprintf(stderr, "%s: %sand %u more quer%s matched no site\n", kkctl_prog, pfx, more,
			more == 1 ? "y" : "ies");
	ddebug_block_free(&dd.block);
	free(dd.pieces);
	free(dd.seen);
	free(dd.matched);
	return named > 0;
}
