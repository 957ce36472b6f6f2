// SPDX-License-Identifier: MIT
/*
 * kkctl record --format perfetto: a Chrome trace-event JSON file, which
 * ui.perfetto.dev and chrome://tracing open (docs/tracing.md, "Formats").
 *
 *   {"traceEvents":[
 *   {"name":"process_name","ph":"M","pid":42,"tid":42,"args":{"name":"nginx"}},
 *   {"name":"thread_name","ph":"M","pid":42,"tid":43,"args":{"name":"worker-1"}},
 *   {"name":"http:handle:120","cat":"http","ph":"i","s":"t","ts":1795939200123456.789,
 *    "pid":42,"tid":43,"args":{"len":12,"path":"/a","message":"request len=12 path=/a"}},
 *   ...
 *   ],"displayTimeUnit":"ns"}
 *
 * Every record is an instant event on its thread's track, at its UTC time in
 * microseconds (three decimals: nanoseconds).  Events are streamed: they go
 * out in 64 KiB writes as they come, and a regular file is valid JSON after
 * every write, not only after close: each write puts the events where the
 * closing brackets were and the brackets after them, so that a kkctl killed
 * or stopped by a full disk leaves a file that opens, with every event of
 * the writes that were whole (a failed write is cut back off).  A pipe or
 * stdout gets the brackets at close.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record_int.h"

#define PF_FLUSH (64 << 10)	/* bytes buffered before a write */
#define PF_HOST_STRIDE 4194304	/* > pid_max: host N's pids are N * this + pid */

static const char pf_head[] = "{\"traceEvents\":[";
static const char pf_tail[] = "\n],\"displayTimeUnit\":\"ns\"}\n";

/* A process seen: its track, and which of its threads are named already. */
struct pf_proc {
	char *host;
	int pid;
	long long track;	/* "pid" in the file */
	int *tids;		/* threads given a thread_name */
	size_t ntids, tcap;
};

struct pf {
	char *path;
	int fd;
	bool regular;		/* keep the file valid JSON after every write */
	bool failed;		/* said why once; every later call fails quietly */
	bool any;		/* an event went out: the next one takes a comma */
	off_t pos;		/* regular: where the next bytes go (pf_tail follows) */
	char *buf;
	size_t len, cap;
	struct pf_proc *procs;
	size_t nprocs, pcap;
	char **hosts;		/* remote hosts, in order of appearance */
	size_t nhosts;
	char *keys;		/* scratch: an event's unique arg names */
	size_t kcap;
};

static int pf_fail(struct pf *pf, const char *what, int err)
{
	if (!pf->failed)
		fprintf(stderr, "kkctl: %s: %s\n", what, kkr_out_strerror(err));
	pf->failed = true;
	return -1;
}

static int pf_reserve(struct pf *pf, size_t n)
{
	char *p;
	size_t cap = pf->cap ? pf->cap : PF_FLUSH + 1024;

	if (pf->len + n <= pf->cap)
		return 0;
	while (cap < pf->len + n)
		cap *= 2;
	p = realloc(pf->buf, cap);
	if (!p)
		return pf_fail(pf, pf->path, ENOMEM);
	pf->buf = p;
	pf->cap = cap;
	return 0;
}

static void pf_put(struct pf *pf, const char *s, size_t n)
{
	if (!pf->failed && !pf_reserve(pf, n)) {
		memcpy(pf->buf + pf->len, s, n);
		pf->len += n;
	}
}

static void pf_puts(struct pf *pf, const char *s)
{
	pf_put(pf, s, strlen(s));
}

__attribute__((format(printf, 2, 3)))
static void pf_printf(struct pf *pf, const char *fmt, ...)
{
	char tmp[128];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n > 0)
		pf_put(pf, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

/* 0, or errno, or KKR_EHURRIED: a second signal came and @fd is a pipe or a
 * terminal (positioned is false), which may never take the rest. */
static int write_all(int fd, const char *s, size_t n, off_t at, bool positioned)
{
	while (n) {
		ssize_t r;

		if (!positioned && kkr_hurried())
			return KKR_EHURRIED;
		r = positioned ? pwrite(fd, s, n, at) : write(fd, s, n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? errno : ENOSPC;
		s += r;
		n -= (size_t)r;
		at += r;
	}
	return 0;
}

/*
 * Write what is buffered.  A regular file gets it where the closing brackets
 * were, the brackets after it; if that fails, the brackets go back where
 * they were (blocks the file has already) and the file is cut after them.
 */
static int pf_flush(struct pf *pf)
{
	int err;

	if (pf->failed)
		return -1;
	if (!pf->regular) {
		err = write_all(pf->fd, pf->buf, pf->len, 0, false);
	} else {
		pf_put(pf, pf_tail, sizeof(pf_tail) - 1);
		if (pf->failed)
			return -1;
		err = write_all(pf->fd, pf->buf, pf->len, pf->pos, true);
		if (!err)
			pf->pos += (off_t)(pf->len - (sizeof(pf_tail) - 1));
		else if (!write_all(pf->fd, pf_tail, sizeof(pf_tail) - 1, pf->pos, true))
			(void)!ftruncate(pf->fd, pf->pos + (off_t)sizeof(pf_tail) - 1);
	}
	pf->len = 0;
	return err ? pf_fail(pf, pf->path, err) : 0;
}

/* A JSON string: valid UTF-8 always (a byte that is not becomes U+FFFD). */
static void pf_str(struct pf *pf, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	const unsigned char *end = s + strlen((const char *)s);

	pf_put(pf, "\"", 1);
	while (*s) {
		const unsigned char *run = s;
		size_t n;

		/* A run of what needs no escape, put at once: ASCII found eight
		 * bytes a step, then what is valid UTF-8. */
		do {
			const unsigned char *a = s;

			s = (const unsigned char *)kkr_json_run((const char *)s, (const char *)end,
								false);
			while (*s >= 0x80 && (n = kkr_utf8_len(s, (size_t)(end - s))))
				s += n;
			if (s == a)
				break;
		} while (*s);
		pf_put(pf, (const char *)run, (size_t)(s - run));
		if (!*s)
			break;
		n = kkr_utf8_len(s, (size_t)(end - s));
		if (*s == '"' || *s == '\\') {
			pf_put(pf, "\\", 1);
			pf_put(pf, (const char *)s, 1);
		} else if (*s < 0x20 || *s == 0x7f) {
			pf_printf(pf, "\\u%04x", *s);
		} else if (!n) {
			pf_puts(pf, "\\ufffd");
			n = 1;
		} else {
			pf_put(pf, (const char *)s, n);
		}
		s += n ? n : 1;
	}
	pf_put(pf, "\"", 1);
}

static void pf_begin(struct pf *pf)
{
	pf_puts(pf, pf->any ? ",\n{" : "\n{");
	pf->any = true;
}

/* The host's number: 0 for this host, 1... for the others in order seen. */
static size_t pf_host(struct pf *pf, const char *host)
{
	char **h;

	if (!host || !*host)
		return 0;
	for (size_t i = 0; i < pf->nhosts; i++)
		if (!strcmp(pf->hosts[i], host))
			return i + 1;
	h = realloc(pf->hosts, (pf->nhosts + 1) * sizeof(*h));
	if (!h || !(h[pf->nhosts] = strdup(host))) {
		if (h)
			pf->hosts = h;
		pf_fail(pf, pf->path, ENOMEM);
		return 0;
	}
	pf->hosts = h;
	return ++pf->nhosts;
}

static void pf_meta(struct pf *pf, const char *what, long long pid, long long tid,
		    const char *host, const char *name)
{
	pf_begin(pf);
	pf_printf(pf, "\"name\":\"%s\",\"ph\":\"M\",\"pid\":%lld,\"tid\":%lld,\"args\":{\"name\":",
		  what, pid, tid);
	if (host && *host) {
		char *both = malloc(strlen(host) + strlen(name) + 3);

		if (!both) {
			pf_fail(pf, pf->path, ENOMEM);
			return;
		}
		sprintf(both, "%s: %s", host, name);
		pf_str(pf, both);
		free(both);
	} else {
		pf_str(pf, name);
	}
	pf_puts(pf, "}}");
}

/* @p's entry, made (and its process_name written) at its first record. */
static struct pf_proc *pf_proc(struct pf *pf, const struct kkr_proc *p)
{
	const char *host = p->host ? p->host : "";
	struct pf_proc *q;
	size_t h;

	for (size_t i = 0; i < pf->nprocs; i++)
		if (pf->procs[i].pid == p->pid && !strcmp(pf->procs[i].host, host))
			return &pf->procs[i];
	if (pf->nprocs == pf->pcap) {
		size_t cap = pf->pcap ? 2 * pf->pcap : 16;

		q = realloc(pf->procs, cap * sizeof(*q));
		if (!q) {
			pf_fail(pf, pf->path, ENOMEM);
			return NULL;
		}
		pf->procs = q;
		pf->pcap = cap;
	}
	h = pf_host(pf, host);
	q = &pf->procs[pf->nprocs];
	*q = (struct pf_proc){ .host = strdup(host), .pid = p->pid,
			       .track = (long long)h * PF_HOST_STRIDE + p->pid };
	if (!q->host || pf->failed) {
		free(q->host);
		pf_fail(pf, pf->path, ENOMEM);
		return NULL;
	}
	pf->nprocs++;
	pf_meta(pf, "process_name", q->track, q->track, host, p->name ? p->name : "");
	return q;
}

static long long pf_tid(const struct pf_proc *q, int tid)
{
	return q->track - q->pid + tid;
}

/* A thread's thread_name, once, at its first record that names it. */
static void pf_thread(struct pf *pf, struct pf_proc *q, int tid, const char *comm)
{
	int *t;

	if (!comm || !*comm)
		return;
	for (size_t i = 0; i < q->ntids; i++)
		if (q->tids[i] == tid)
			return;
	if (q->ntids == q->tcap) {
		size_t cap = q->tcap ? 2 * q->tcap : 8;

		t = realloc(q->tids, cap * sizeof(*t));
		if (!t) {
			pf_fail(pf, pf->path, ENOMEM);
			return;
		}
		q->tids = t;
		q->tcap = cap;
	}
	q->tids[q->ntids++] = tid;
	pf_meta(pf, "thread_name", q->track, pf_tid(q, tid), NULL, comm);
}

/* A number, without printf's parse of a format (a record has several). */
static void pf_u64(struct pf *pf, uint64_t v)
{
	char b[24], *p = kkr_digits(b + sizeof(b), v);

	pf_put(pf, p, (size_t)(b + sizeof(b) - p));
}

static void pf_i64(struct pf *pf, int64_t v)
{
	if (v < 0)
		pf_put(pf, "-", 1);
	pf_u64(pf, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
}

/* ,"ts":US.NNN (microseconds, to the ns) */
static void pf_ts(struct pf *pf, uint64_t ts)
{
	char frac[4] = { '.', (char)('0' + ts / 100 % 10), (char)('0' + ts / 10 % 10),
			 (char)('0' + ts % 10) };

	pf_put(pf, ",\"ts\":", 6);
	pf_u64(pf, ts / 1000);
	pf_put(pf, frac, 4);
}

static int pf_after(struct pf *pf)
{
	if (pf->failed)
		return -1;
	return pf->len >= PF_FLUSH ? pf_flush(pf) : 0;
}

static int pf_open(struct kkr_writer *w, const char *path)
{
	struct pf *pf = calloc(1, sizeof(*pf));
	int err = 0;

	if (!pf || !(pf->path = strdup(path))) {
		free(pf);
		fprintf(stderr, "kkctl: %s: %s\n", path, strerror(ENOMEM));
		return -1;
	}
	pf->fd = strcmp(path, "-") ? kkr_open_output(path, &err) : STDOUT_FILENO;
	if (pf->fd < 0) {
		fprintf(stderr, "kkctl: %s: %s\n", path, kkr_out_strerror(err));
		free(pf->path);
		free(pf);
		return -1;
	}
	pf->regular = pf->fd != STDOUT_FILENO && kkr_fd_regular(pf->fd);
	w->priv = pf;
	pf_puts(pf, pf_head);
	if (!pf_flush(pf))
		return 0;
	w->priv = NULL;
	if (pf->fd != STDOUT_FILENO)
		close(pf->fd);
	free(pf->buf);
	free(pf->path);
	free(pf);
	return -1;
}

static void pf_value(struct pf *pf, const struct kkr_arg *a)
{
	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		pf_i64(pf, a->v.i);
		break;
	case KKR_UINT:
	case KKR_POINTER:
		pf_u64(pf, a->v.u);
		break;
	case KKR_FLOAT:
		if (isfinite(a->v.f))
			pf_printf(pf, "%.17g", a->v.f);
		else
			pf_puts(pf, isnan(a->v.f) ? "\"nan\"" : a->v.f > 0 ? "\"inf\"" : "\"-inf\"");
		break;
	case KKR_STRING:
		pf_str(pf, a->v.s);
		break;
	}
}

/*
 * The args' keys, unique in the object: an arg whose name is taken (by an
 * earlier arg, or "message", the record's text) gets "_N" added, N its index,
 * until it is not.  Returns the keys one after another, NUL-separated.
 */
static const char *pf_keys(struct pf *pf, const struct kkr_event *e)
{
	size_t len = 0, need = 0;

	for (size_t i = 0; i < e->nargs; i++)
		need += (e->args[i].name ? strlen(e->args[i].name) : 0) + 24 * (i + 2);
	if (need > pf->kcap) {
		char *k = realloc(pf->keys, need);

		if (!k) {
			pf_fail(pf, pf->path, ENOMEM);
			return NULL;
		}
		pf->keys = k;
		pf->kcap = need;
	}
	for (size_t i = 0; i < e->nargs; i++) {
		const char *name = e->args[i].name;
		char *key = pf->keys + len;
		bool taken;

		if (name && *name)
			strcpy(key, name);
		else
			sprintf(key, "arg%zu", i);
		do {
			taken = !strcmp(key, "message");
			for (const char *k = pf->keys; k < key && !taken; k += strlen(k) + 1)
				taken = !strcmp(k, key);
			if (taken)
				sprintf(key + strlen(key), "_%zu", i);
		} while (taken);
		len += strlen(key) + 1;
	}
	return pf->keys;
}

static int pf_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct pf *pf = w->priv;
	struct pf_proc *q = pf_proc(pf, e->proc);
	const char *key = pf_keys(pf, e);

	if (!q || !key)
		return -1;
	pf_thread(pf, q, e->tid, e->comm);
	pf_begin(pf);
	pf_puts(pf, "\"name\":");
	{
		char name[512];

		snprintf(name, sizeof(name), "%s:%s:%u", e->module ? e->module : "",
			 e->function ? e->function : "", e->line);
		pf_str(pf, name);
	}
	pf_puts(pf, ",\"cat\":");
	pf_str(pf, e->module);
	pf_puts(pf, ",\"ph\":\"i\",\"s\":\"t\"");
	pf_ts(pf, e->ts);
	pf_put(pf, ",\"pid\":", 7);
	pf_i64(pf, q->track);
	pf_put(pf, ",\"tid\":", 7);
	pf_i64(pf, pf_tid(q, e->tid));
	pf_put(pf, ",\"args\":{", 9);
	for (size_t i = 0; i < e->nargs; i++, key += strlen(key) + 1) {
		pf_str(pf, key);
		pf_put(pf, ":", 1);
		pf_value(pf, &e->args[i]);
		pf_put(pf, ",", 1);
	}
	pf_puts(pf, "\"message\":");
	pf_str(pf, e->message);
	pf_puts(pf, "}}");
	return pf_after(pf);
}

static int pf_lost(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		   uint64_t ts)
{
	struct pf *pf = w->priv;
	struct pf_proc *q = pf_proc(pf, p);

	if (!q)
		return -1;
	pf_begin(pf);
	pf_puts(pf, "\"name\":\"kernelkit:records_lost\",\"cat\":\"kernelkit\",\"ph\":\"i\",\"s\":\"t\"");
	pf_ts(pf, ts);
	pf_printf(pf, ",\"pid\":%lld,\"tid\":%lld,\"args\":{\"tid\":%d,\"count\":%" PRIu64 "}}",
		  q->track, pf_tid(q, tid), tid, count);
	return pf_after(pf);
}

/* An exit is a process-wide instant; a later process with its pid is new. */
static int pf_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct pf *pf = w->priv;
	struct pf_proc *q = pf_proc(pf, p);

	if (!q)
		return -1;
	pf_begin(pf);
	pf_puts(pf, "\"name\":\"kernelkit:process_exit\",\"cat\":\"kernelkit\",\"ph\":\"i\",\"s\":\"p\"");
	pf_ts(pf, ts);
	pf_printf(pf, ",\"pid\":%lld,\"tid\":%lld,\"args\":{\"pid\":%d,\"vpid\":%d}}", q->track,
		  q->track, p->pid, p->vpid);
	free(q->host);
	free(q->tids);
	*q = pf->procs[--pf->nprocs];
	return pf_after(pf);
}

static int pf_close(struct kkr_writer *w)
{
	struct pf *pf = w->priv;
	int ret = 0;

	if (!pf->regular)
		pf_put(pf, pf_tail, sizeof(pf_tail) - 1);
	ret = pf_flush(pf);
	if (pf->fd != STDOUT_FILENO && close(pf->fd) && !ret)
		ret = pf_fail(pf, pf->path, errno);
	for (size_t i = 0; i < pf->nprocs; i++) {
		free(pf->procs[i].host);
		free(pf->procs[i].tids);
	}
	for (size_t i = 0; i < pf->nhosts; i++)
		free(pf->hosts[i]);
	free(pf->hosts);
	free(pf->procs);
	free(pf->keys);
	free(pf->buf);
	free(pf->path);
	free(pf);
	w->priv = NULL;
	return ret;
}

const struct kkr_writer_ops kkr_perfetto_ops = {
	.name = "perfetto",
	.dir = false,
	.open = pf_open,
	.event = pf_event,
	.lost = pf_lost,
	.exited = pf_exited,
	.close = pf_close,
};
