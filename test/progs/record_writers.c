// SPDX-License-Identifier: MIT
/*
 * kkctl record's ctf and perfetto writers, fed synthetic records
 * (test/scripts/record_writers.sh checks what they wrote).  Built with
 * tools/kkctl/record_ctf.c and record_perfetto.c (mk/record_writers.mk).
 *
 *   record_writers FORMAT OUT EXPECT [N]
 *
 * Feeds N records (default 3000) through the writer of FORMAT (ctf,
 * perfetto) into OUT: five processes on two hosts (one pid on both, one pid
 * reused after an exit), several threads, every kkr_type with its extremes,
 * names that collide or are not identifiers, strings with quotes, control
 * characters and bytes that are not UTF-8, one record larger than a packet,
 * one record out of time order, lost records and an exit.  Writes to EXPECT
 * what it fed, one JSON object a line (strings as hex: the checker makes its
 * own idea of what a writer must do with them).
 *
 * Exit 0; 2 when open returned -1 (it said why); 3 when a call failed (then the
 * writer is closed, and "failed at I" is printed: I records went in).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

/* record_out.c (built in for kkr_utf8_len) says why under kkctl's name. */
#include "record_stubs.h"

static const struct kkr_writer_ops *const writers[] = { &kkr_ctf_ops, &kkr_perfetto_ops };

static struct kkr_proc procs[] = {
	{ "", 1001, 1001, "master" },
	{ "", 1002, 1002, "worker" },
	{ "b\"host", 1001, 7, "nginx \"b\"" },	/* pid 1001 on another host, a container */
	{ "", 1002, 1002, "worker-2" },		/* 1002 again, after the first exited */
	{ "", 1003, 1003, "late" },		/* its first record is a loss */
};

static const struct { int proc, tid; const char *comm; } threads[] = {
	{ 0, 1001, "master" }, { 0, 1010, "pool \"q\" \\ \x01\xff" }, { 1, 1002, "worker" },
	{ 1, 1020, "w\xc3\xa9rk\xe2\x9c\x93" }, { 2, 7, "nginx" }, { 2, 8, "" }, { 3, 1002, "worker-2" },
	{ 4, 1003, "late" },
};

static const char *const strings[] = {
	"", "plain", "quote\" back\\slash 'single'", "ctl\x01\x1f\n\t\r\x7f end",
	"bad\xff\xfe \xc3( \xe2\x82 \xed\xa0\x80 \xf4\x90\x80\x80 \xc0\xaf \xe2\x82\xac",
	"\xc3\xbcn\xc3\xaf" "c\xc3\xb6" "d\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x98\x80", "%s %d {}[]:,",
};

static const double floats[] = { 3.25, -1e300, 5e-324, -0.0, 0.1, 1e21, NAN, INFINITY, -INFINITY };

struct site {
	const char *module, *function;
	unsigned line;
	size_t nargs;
	struct { const char *name; enum kkr_type type; } args[8];
};

static const struct site sites[] = {
	{ "http", "handle", 120, 2, { { "len", KKR_INT }, { "path", KKR_STRING } } },
	{ "db", "query", 7, 4, { { "rows", KKR_UINT }, { "ratio", KKR_FLOAT }, { "arg2", KKR_CHAR },
				  { "arg3", KKR_POINTER } } },
	{ "nasty", "we\"ird", 33, 8, { { "a.b-c", KKR_INT }, { "a_b_c", KKR_INT },
				       { "message", KKR_STRING }, { "x", KKR_UINT }, { "x", KKR_INT },
				       { NULL, KKR_STRING }, { "integer", KKR_FLOAT },
				       { "x_4", KKR_UINT } } },
	{ "http", "handle", 120, 1, { { "len", KKR_INT } } },	/* packed incompletely */
	{ "mod", "empty", 1, 0, { { NULL, KKR_INT } } },
};

static FILE *expect;
static uint64_t rnd = 42;

static uint64_t next(void)
{
	rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
	return rnd >> 17;
}

static void hex(const char *s)
{
	fputc('"', expect);
	for (; *s; s++)
		fprintf(expect, "%02x", (unsigned char)*s);
	fputc('"', expect);
}

static void proc_json(const struct kkr_proc *p)
{
	fprintf(expect, "\"host\":");
	hex(p->host);
	fprintf(expect, ",\"pid\":%d,\"vpid\":%d,\"pname\":", p->pid, p->vpid);
	hex(p->name);
}

static void arg_value(struct kkr_arg *a, uint64_t i, char *big)
{
	static const int64_t ints[] = { 0, -1, 12, INT64_MIN, INT64_MAX };
	static const uint64_t uints[] = { 0, 1, UINT64_MAX, 0x7fffdeadbeefull };

	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		a->v.i = i % 7 < 5 ? ints[i % 7] : (int64_t)next() - (1ll << 45);
		break;
	case KKR_UINT:
	case KKR_POINTER:
		a->v.u = i % 6 < 4 ? uints[i % 6] : next();
		break;
	case KKR_FLOAT:
		a->v.f = floats[i % (sizeof(floats) / sizeof(floats[0]))];
		break;
	case KKR_STRING:
		a->v.s = i == 777 ? big : strings[i % (sizeof(strings) / sizeof(strings[0]))];
		break;
	}
}

static const char *const type_names[] = {
	[KKR_INT] = "int", [KKR_UINT] = "uint", [KKR_FLOAT] = "float",
	[KKR_STRING] = "string", [KKR_POINTER] = "pointer", [KKR_CHAR] = "char",
};

static void expect_arg(const struct kkr_arg *a)
{
	fprintf(expect, "{\"name\":");
	hex(a->name ? a->name : "");
	fprintf(expect, ",\"type\":\"%s\",\"value\":", type_names[a->type]);
	if (a->type == KKR_INT || a->type == KKR_CHAR)
		fprintf(expect, "%" PRId64, a->v.i);
	else if (a->type == KKR_UINT || a->type == KKR_POINTER)
		fprintf(expect, "%" PRIu64, a->v.u);
	else if (a->type == KKR_STRING)
		hex(a->v.s);
	else	/* a string: JSON has no -0, nan or inf */
		fprintf(expect, "\"%.17g\"", a->v.f);
	fputc('}', expect);
}

static void expect_event(const struct kkr_event *e)
{
	fprintf(expect, "{\"kind\":\"event\",");
	proc_json(e->proc);
	fprintf(expect, ",\"tid\":%d,\"ts\":%" PRIu64 ",\"comm\":", e->tid, e->ts);
	hex(e->comm);
	fprintf(expect, ",\"module\":");
	hex(e->module);
	fprintf(expect, ",\"function\":");
	hex(e->function);
	fprintf(expect, ",\"line\":%u,\"message\":", e->line);
	hex(e->message);
	fprintf(expect, ",\"args\":[");
	for (size_t i = 0; i < e->nargs; i++) {
		if (i)
			fputc(',', expect);
		expect_arg(&e->args[i]);
	}
	fprintf(expect, "]}\n");
}

/* Record @i: a site, a thread of a live process, values. */
static int feed_event(struct kkr_writer *w, uint64_t i, uint64_t ts, int alive[5], char *big)
{
	const struct site *s = &sites[i % (sizeof(sites) / sizeof(sites[0]))];
	struct kkr_arg args[8];
	size_t t = next() % (sizeof(threads) / sizeof(threads[0]));
	char msg[128];
	struct kkr_event e;

	while (!alive[threads[t].proc])
		t = (t + 1) % (sizeof(threads) / sizeof(threads[0]));
	for (size_t k = 0; k < s->nargs; k++) {
		args[k] = (struct kkr_arg){ .name = s->args[k].name, .type = s->args[k].type };
		arg_value(&args[k], i + k, big);
	}
	snprintf(msg, sizeof(msg), "record %" PRIu64 " \"%s\"%s", i, s->function,
		 i % 11 ? "" : " \x02\xff");
	e = (struct kkr_event){ .proc = &procs[threads[t].proc], .ts = ts, .mono = ts / 7,
				.tid = threads[t].tid, .comm = threads[t].comm,
				.module = s->module, .function = s->function, .file = "src/x.c",
				.line = s->line, .format = "fmt", .message = msg,
				.nargs = s->nargs, .args = args };
	expect_event(&e);
	return w->ops->event(w, &e);
}

static int feed_lost(struct kkr_writer *w, int proc, int tid, uint64_t count, uint64_t ts)
{
	fprintf(expect, "{\"kind\":\"lost\",");
	proc_json(&procs[proc]);
	fprintf(expect, ",\"tid\":%d,\"count\":%" PRIu64 ",\"ts\":%" PRIu64 "}\n", tid, count, ts);
	return w->ops->lost(w, &procs[proc], tid, count, ts);
}

static int feed_exit(struct kkr_writer *w, int proc, uint64_t ts)
{
	fprintf(expect, "{\"kind\":\"exit\",");
	proc_json(&procs[proc]);
	fprintf(expect, ",\"ts\":%" PRIu64 "}\n", ts);
	return w->ops->exited(w, &procs[proc], ts);
}

/*
 * The script: records in time order, but for record 600, 50 us before the
 * one before it; process 1 exits at N/3, and process 3 (its pid) starts;
 * lost records at N/6 and N/2, at N/4 for process 4 before its first
 * record, and at the end for a thread with none after.
 */
static uint64_t feed(struct kkr_writer *w, uint64_t n, char *big)
{
	int alive[5] = { 1, 1, 1, 0, 0 };
	uint64_t ts = 1795939200123456789ull, i;

	for (i = 0; i < n; i++) {
		ts += 1 + next() % 5000;
		if ((i == n / 6 && feed_lost(w, 0, 1010, 17, ts++)) ||
		    (i == n / 2 && feed_lost(w, 2, 8, 5, ts++)))
			return i;
		if (i == n / 4) {
			if (feed_lost(w, 4, 1003, 2, ts++))
				return i;
			alive[4] = 1;
		}
		if (i == n / 3) {
			if (feed_exit(w, 1, ts++))
				return i;
			alive[1] = 0;
			alive[3] = 1;
		}
		if (feed_event(w, i, i == 600 ? ts - 50000 : ts, alive, big))
			return i;
	}
	if (feed_lost(w, 3, 1002, 3, ts + 1))
		return i;
	return UINT64_MAX;
}

int main(int argc, char **argv)
{
	struct kkr_writer w = { 0 };
	uint64_t n = argc > 4 ? strtoull(argv[4], NULL, 10) : 3000, failed;
	char *big = malloc(40001);
	int rc;

	if (argc < 4 || !big) {
		fprintf(stderr, "usage: record_writers ctf|perfetto OUT EXPECT [N]\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(writers) / sizeof(writers[0]); i++)
		if (!strcmp(writers[i]->name, argv[1]))
			w.ops = writers[i];
	expect = fopen(argv[3], "w");
	if (!w.ops || !expect) {
		fprintf(stderr, "record_writers: bad format or %s\n", argv[3]);
		return 1;
	}
	memset(big, 'B', 40000);	/* larger than a ctf packet */
	big[40000] = '\0';
	rc = w.ops->open(&w, argv[2]);
	if (rc) {
		free(big);
		fclose(expect);
		return rc == -1 ? 2 : 1;
	}
	failed = feed(&w, n, big);
	rc = w.ops->close(&w);
	if (failed != UINT64_MAX)
		printf("failed at %" PRIu64 "\n", failed);
	free(big);
	return fclose(expect) ? 1 : failed != UINT64_MAX || rc ? 3 : 0;
}
