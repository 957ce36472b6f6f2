// SPDX-License-Identifier: MIT
/*
 * kkctl --json read dynamic_debug/trace: one object per record, not the
 * whole text in one string.
 *
 * The records are trace_pipe_json's, with its names ("type":"event",
 * "tid", "mono" or "ts", "message"), after the process's own fields as in
 * every --json object.  They are taken from the text of `trace` (which,
 * unlike trace_pipe_json, consumes nothing): a record's line is
 * "TID [SECONDS.NANOSECONDS] MESSAGE", its time in the clock
 * dynamic_debug/trace_clock chose, read just before ("mono": CLOCK_MONOTONIC
 * nanoseconds, "ts" for "realtime": UTC nanoseconds since the epoch).  The
 * message is the text's, decorations (m f s l) included; a line that is no
 * record's continues the message before it (a message with a newline).
 * The header's numbers are one "type":"header" object first, and "# N
 * records of unloaded objects not shown" one "type":"not_shown" object.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kkctl.h"

#define DD_TRACE	"dynamic_debug/trace"

/* Is this a --json read of dynamic_debug/trace?  Then the clock @t's
 * trace shows: 2 realtime, else 1 (mono, and a process that cannot say);
 * 0 if it is not. */
int kkctl_trace_clock(const struct target *t, const char *verb, const char *file)
{
	struct result r;
	int clock;

	if (!kkctl_json || strcmp(verb, "read") || !file || strcmp(file, DD_TRACE))
		return 0;
	kkctl_request(t, "read", "dynamic_debug/trace_clock", NULL, 0, &r);
	clock = r.ok && r.body && strstr(r.body, "[realtime]") ? 2 : 1;
	free(r.body);
	return clock;
}

/* One record's line: "TID [SEC.NSEC] MESSAGE".  False if it is not one. */
static bool parse_record(const char *l, const char *nl, int *tid, unsigned long long *ns,
			 const char **msg)
{
	unsigned long long s, n;
	int used = 0;

	if (*l == '#' || sscanf(l, "%d [%llu.%9llu]%n", tid, &s, &n, &used) != 3 || !used ||
	    l + used >= nl || l[used] != ' ')
		return false;
	*ns = s * 1000000000ull + n;
	*msg = l + used + 1;
	return true;
}

/* A record: its object. */
static void put_record(const struct target *t, const struct result *r, int tid,
		       unsigned long long ns, const char *msg, const char *end)
{
	kkctl_put_json_head(t, true);
	printf(",\"type\":\"event\",\"tid\":%d,\"%s\":%llu,\"message\":", tid,
	       r->trace_clock == 2 ? "ts" : "mono", ns);
	kkctl_put_json(stdout, msg, (size_t)(end - msg));
	fputs("}\n", stdout);
}

/* The header's numbers (its lines "# entries-in-buffer/entries-written:
 * E/W   rings: R" and "# lost: overwritten O, nested N, no buffer B"):
 * one object, if the text has them. */
static void put_header(const struct target *t, const char *body)
{
	const char *e = strstr(body, "# entries-in-buffer/entries-written: ");
	const char *l = strstr(body, "# lost: overwritten ");
	unsigned long v[6];

	if (!e || !l ||
	    sscanf(e, "# entries-in-buffer/entries-written: %lu/%lu rings: %lu", &v[0], &v[1],
		   &v[2]) != 3 ||
	    sscanf(l, "# lost: overwritten %lu, nested %lu, no buffer %lu", &v[3], &v[4],
		   &v[5]) != 3)
		return;
	kkctl_put_json_head(t, true);
	printf(",\"type\":\"header\",\"entries\":%lu,\"written\":%lu,\"rings\":%lu,"
	       "\"overwritten\":%lu,\"nested\":%lu,\"no_buffer\":%lu}\n", v[0], v[1], v[2],
	       v[3], v[4], v[5]);
}

/* "# N records of unloaded objects not shown": N, or 0 if @l is not that. */
static unsigned long not_shown(const char *l)
{
	unsigned long n;
	int used = 0;

	if (sscanf(l, "# %lu records of unloaded objects not shown%n", &n, &used) != 1 || !used)
		return 0;
	return n;
}

/* @t's trace (@r, ok), one object a line. */
void kkctl_report_trace(const struct target *t, const struct result *r)
{
	const char *end = r->body + r->len, *msg = NULL, *mend = NULL;
	unsigned long long ns = 0;
	int tid = 0;

	put_header(t, r->body);
	for (const char *l = r->body, *nl; l < end; l = nl + 1) {
		int ntid;
		unsigned long long nns;
		const char *nmsg;

		nl = memchr(l, '\n', (size_t)(end - l));
		if (!nl)
			nl = end;
		if (parse_record(l, nl, &ntid, &nns, &nmsg)) {
			if (msg)
				put_record(t, r, tid, ns, msg, mend);
			tid = ntid;
			ns = nns;
			msg = nmsg;
			mend = nl;
		} else if (*l == '#' && (nns = not_shown(l))) {
			if (msg)	/* (after the records) */
				put_record(t, r, tid, ns, msg, mend);
			msg = NULL;
			kkctl_put_json_head(t, true);
			printf(",\"type\":\"not_shown\",\"count\":%llu}\n", nns);
		} else if (msg && *l != '#') {
			mend = nl;	/* the message goes on */
		}
	}
	if (msg)
		put_record(t, r, tid, ns, msg, mend);
}
