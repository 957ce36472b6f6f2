// SPDX-License-Identifier: MIT
/*
 * kkctl record: a trace session across processes (and hosts, -H: see
 * record_remote.c), merged in time order into one file.
 *
 *   kkctl TARGET... record [-o PATH] [--format ctf|perfetto|jsonl|text]
 *         [--duration S] [--count N] [--threads TID|NAME,...] [--wallclock] QUERY...
 *
 * In every selected process: `begin 1000 held` and the queries on
 * dynamic_debug/session (the library remembers what it changed, and puts it
 * back by itself as soon as we are gone, SIGKILL included: it watches us
 * with a pidfd; where it cannot see us, when 1000 ms pass with no renew;
 * docs/dynamic_debug.md; a library older than `held` refuses the word, and
 * gets `begin 1000`: that time lease alone); then reads of
 * dynamic_debug/trace_pipe_json back to back, by one thread per process
 * (a read sends at most 128 KiB, the oldest records first, and keeps the
 * rest for the next; with nothing to send it waits up to 250 ms for a
 * record; it renews the lease).  A reader pauses while the merge holds
 * READ_ROOM records (the writer is behind: the records wait in the rings,
 * where an overwrite is counted, not in our memory), and renews its lease
 * with `renew` every RENEW_NS while it pauses: the lease never depends on
 * how fast the file is written.  At the end: `end` in every process at once
 * (each reader sends it as soon as its request in flight returns; a reader
 * that sees the signal first begins the end itself, so that the sites go
 * back while the writer is stuck on an output nobody reads), and reads,
 * pausing as before, until what is left is later than the `end`, or until
 * the end's one deadline (END_NS from the stop) for all of them.  A second
 * signal ends the end at once: no more reads, no more records written
 * (counted), and no more writes to a pipe or terminal.  Every exchange is one
 * kkctl_request(): one deadline, a capped reply; a process that exits is
 * marked so, one that misbehaves is dropped with one line.
 *
 * The merge: records wait in a heap ordered by their wall-clock time (ts)
 * until every live process has been read past it (a read that brought
 * events has sent every record up to its last one's time; one that brought
 * none, every record written before it began), or for at most HOLD_NS, and are then
 * handed to the writer: memory holds about a second of records (and never
 * more than READ_ROOM of them: then the oldest go, and the readers pause), the rest is on disk.
 *
 * New processes the selectors match are picked up every PICKUP_NS, by a
 * thread of its own (a scan of /proc takes seconds on a loaded machine, and
 * the writer must not wait for it): a child that inherited a session of ours
 * is joined with `renew`, any other gets `begin`.
 */
#include <errno.h>
#include <fnmatch.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "kkctl.h"
#include "record_int.h"
#include "record_raw.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* The formats: a writer is a file (record_<name>.c) and a line here. */
static const struct kkr_writer_ops *const kkr_writers[] = {
	&kkr_ctf_ops, &kkr_perfetto_ops, &kkr_jsonl_ops, &kkr_text_ops,
};

enum {
	LEASE_MS = 1000,
	BATCH = 256,
	READ_ROOM = 1 << 16,		/* readers pause while the merge holds this many, and the
					   oldest of them are written whatever the horizon */
};
#define HOLD_NS 1000000000ull		/* a record waits for the slowest process at most this */
#define PICKUP_NS 500000000ull		/* new processes are looked for this often */
#define SLACK_NS 2000000ull		/* a record stamped just before a read may come after it */
#define RENEW_NS 300000000ull		/* a pausing reader renews its lease this often */
#define END_NS 20000000000ull		/* the end reads what is left for this long, at most */
#define TRACE_FILE "dynamic_debug/trace_pipe_json"
#define RAW_FILE "dynamic_debug/trace_pipe_raw"
#define SESSION_FILE "dynamic_debug/session"

/* ---- the state --------------------------------------------------------- */

enum tstate { T_BEGIN, T_LIVE, T_GONE, T_FAILED };

/* A process we record, and the thread that reads it. */
struct rtarget {
	struct kkr_src src;
	struct kkr_pinfo p;
	struct target t;
	enum tstate state;
	char id[17];		/* its session */
	uint64_t matched, restored, left;
	uint64_t renewed;	/* kk_now_ns() when its last renewing request began */
	bool joined, thread, ended, warned;
	bool first;		/* of the first selection: its begin counts in the start */
	bool plain;		/* its library is older than `held`: a time lease */
	enum { CUT_NOT, CUT_DEADLINE, CUT_SIGNAL } cut;	/* what came before it was
						   read to its end: the end's deadline, a second signal */
	pthread_t th;
	struct kkr_rec **batch;	/* one read's records, on their way to the heap */
	size_t bcap;
	struct kkr_chunk *chunk;	/* where its records are carved from */
	struct kkr_raw *raw;	/* read from trace_pipe_raw into the ctf directory (record_raw.c) */
	struct kkr_rawdec *dec;	/* or decoded into records for the merge (record_rawdec.c) */
	bool no_raw;		/* it has no trace_pipe_raw, or raw is not for this recording */
};

struct kkr_state kkr = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
};

static volatile sig_atomic_t got_signal;
static volatile sig_atomic_t hurried;	/* a second signal: end now, write no more */
static bool raw_on;		/* the local targets are read from trace_pipe_raw if they have it */
static struct ctf *raw_ctf;	/* the ctf writer, when they are (other formats: decoded) */

/*
 * The start (under kkr.lock).  Each process of the first selection is begun
 * by its own reader thread; the thread whose begin answers last decides
 * whether the recording starts (no begin failed, one at least is live, a
 * site matched, no signal) and opens the output; every reader then reads at
 * once, so a process's first read follows its begin in the same thread.
 * (kkctl joined begin threads, opened the output, then made the readers:
 * two wake-ups on the way to the first record, milliseconds each on a
 * loaded machine.)  Refused: the main thread ends every session begun.
 */
static struct {
	size_t n, left;		/* the first selection; the begins not answered yet */
	int verdict;		/* 0 not yet, 1 recording, -1 refused */
	bool open_failed;	/* the output could not be opened (said) */
	struct kkr_writer *w;
} start;

static bool raw_wanted(void);

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* ---- the heap of records waiting to be ordered --------------------------- */

static bool rec_before(const struct kkr_rec *a, const struct kkr_rec *b)
{
	return a->ts < b->ts || (a->ts == b->ts && a->seq < b->seq);
}

static void heap_swap(size_t i, size_t j)
{
	struct kkr_rec *t = kkr.heap[i];

	kkr.heap[i] = kkr.heap[j];
	kkr.heap[j] = t;
}

/* What the heap holds, counted as records come and go: what a second
 * signal leaves unwritten is known at once. */
static void held(const struct kkr_rec *r, int64_t sign)
{
	if (r->kind == KKR_EVENT)
		kkr.held_events += (uint64_t)sign;
	else if (r->kind == KKR_LOST)
		kkr.held_lost += (uint64_t)sign * r->count;
}

/* Push @r (under kkr.lock).  -1: out of memory (@r is not taken). */
static int heap_push(struct kkr_rec *r)
{
	size_t i;

	if (kkr.n == kkr.cap) {
		size_t cap = kkr.cap ? 2 * kkr.cap : 1024;
		struct kkr_rec **v = realloc(kkr.heap, cap * sizeof(*v));

		if (!v)
			return -1;
		kkr.heap = v;
		kkr.cap = cap;
	}
	r->seq = kkr.seq++;
	held(r, 1);
	kkr.heap[i = kkr.n++] = r;
	for (; i && rec_before(kkr.heap[i], kkr.heap[(i - 1) / 2]); i = (i - 1) / 2)
		heap_swap(i, (i - 1) / 2);
	return 0;
}

static struct kkr_rec *heap_pop(void)
{
	struct kkr_rec *top = kkr.heap[0];
	size_t i = 0;

	held(top, -1);
	kkr.heap[0] = kkr.heap[--kkr.n];
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < kkr.n && rec_before(kkr.heap[l], kkr.heap[m]))
			m = l;
		if (r < kkr.n && rec_before(kkr.heap[r], kkr.heap[m]))
			m = r;
		if (m == i)
			return top;
		heap_swap(i, m);
		i = m;
	}
}

/* Push records of one read or one host, and what their source has been
 * read up to; wake the writer.  Those that did not fit are dropped. */
void kkr_push(struct kkr_src *src, struct kkr_rec **v, size_t n, uint64_t horizon)
{
	pthread_mutex_lock(&kkr.lock);
	for (size_t i = 0; i < n; i++)
		if (heap_push(v[i])) {
			kkr.dropped++;
			kkr_rec_free(v[i]);
		}
	if (src && horizon > src->horizon)
		src->horizon = horizon;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
}

/* ---- records -------------------------------------------------------------- */

static size_t str_size(const char *s)
{
	return s ? strlen(s) + 1 : 1;
}

/* @s copied to *@at (advanced). */
static const char *str_copy(char **at, const char *s)
{
	char *d = *at;
	size_t n = str_size(s);

	memcpy(d, s ? s : "", n);
	*at += n;
	return d;
}

/* The bytes a record of @l takes, its strings and arguments included. */
static size_t rec_size(const struct kkr_line *l)
{
	const char *strs[] = { l->comm, l->module, l->function, l->file, l->format, l->message };
	size_t size = sizeof(struct kkr_rec) + l->nargs * sizeof(struct kkr_arg);

	for (size_t i = 0; i < ARRAY_SIZE(strs); i++)
		size += str_size(strs[i]);
	for (size_t i = 0; i < l->nargs; i++)
		size += str_size(l->args[i].name) +
			(l->args[i].type == KKR_STRING ? str_size(l->args[i].v.s) : 0);
	return size;
}

/* @l into the @size bytes at @r, of @chunk (NULL: its own). */
static struct kkr_rec *rec_fill(struct kkr_rec *r, struct kkr_chunk *chunk,
				const struct kkr_line *l, struct kkr_pinfo *p)
{
	char *at;

	*r = (struct kkr_rec){ .chunk = chunk, .ts = l->ts, .arrived = kk_now_ns(),
			       .kind = l->kind, .p = p, .tid = (int)l->tid, .count = l->count,
			       .mono = l->mono, .line = (unsigned int)l->line, .nargs = l->nargs };
	r->args = (struct kkr_arg *)(r + 1);
	at = (char *)(r->args + l->nargs);
	r->comm = str_copy(&at, l->comm);
	r->module = str_copy(&at, l->module);
	r->function = str_copy(&at, l->function);
	r->file = str_copy(&at, l->file);
	r->format = str_copy(&at, l->format);
	r->message = str_copy(&at, l->message);
	for (size_t i = 0; i < l->nargs; i++) {
		r->args[i] = l->args[i];
		r->args[i].name = str_copy(&at, l->args[i].name);
		if (l->args[i].type == KKR_STRING)
			r->args[i].v.s = str_copy(&at, l->args[i].v.s);
	}
	return r;
}

/* A record of process @p made from @l, in one allocation of its own (a
 * host's record, an exit).  NULL: out of memory. */
struct kkr_rec *kkr_rec_new(const struct kkr_line *l, struct kkr_pinfo *p)
{
	struct kkr_rec *r = malloc(rec_size(l));

	return r ? rec_fill(r, NULL, l, p) : NULL;
}

static void chunk_put(struct kkr_chunk *c)
{
	if (c && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
		free(c);
}

void kkr_rec_free(struct kkr_rec *r)
{
	if (r && r->chunk)
		chunk_put(r->chunk);
	else
		free(r);
}

enum { CHUNK = 256 * 1024 };	/* about a read's records (a read is 128 KiB of JSON) */

/* A record of @l carved from the reader's chunk *@cur (a new one when it is
 * full: the reader lets go of the old, which its records keep).  NULL: out
 * of memory. */
static struct kkr_rec *rec_carve(struct kkr_chunk **cur, const struct kkr_line *l,
				 struct kkr_pinfo *p)
{
	size_t size = (rec_size(l) + 15) & ~(size_t)15;
	struct kkr_chunk *c = *cur;

	if (!c || c->used + size > c->size) {
		size_t cap = size > CHUNK ? size : CHUNK;

		if (!(c = malloc(sizeof(*c) + cap)))
			return NULL;
		*c = (struct kkr_chunk){ .refs = 1, .size = cap };
		chunk_put(*cur);
		*cur = c;
	}
	__atomic_add_fetch(&c->refs, 1, __ATOMIC_RELAXED);
	c->used += size;
	return rec_fill((struct kkr_rec *)(c->mem + c->used - size), c, l, p);
}

/* An entry of --threads that is all digits: a thread id. */
static bool thread_entry_is_id(const char *e)
{
	return *e && e[strspn(e, "0123456789")] == '\0';
}

/* Is thread @tid named @comm ("" when gone) one --threads asks for?  Each
 * entry as dynamic_debug/trace_threads takes it (parsed once, by
 * opt_threads()): a thread id as the process sees it, or a glob of names. */
bool kkr_thread_wanted(int tid, const char *comm)
{
	const struct kkr_opts *o = kkr.opts;

	if (!o->nthreads)
		return true;
	for (size_t i = 0; i < o->nthreads; i++) {
		const struct kkr_thread *e = &o->threads[i];

		if (e->tid ? e->tid == tid : comm[0] && !fnmatch(e->text, comm, 0))
			return true;
	}
	return false;
}

/* ---- one target: its session and its reads ------------------------------- */

static void set_state(struct rtarget *rt, enum tstate s)
{
	pthread_mutex_lock(&kkr.lock);
	rt->state = s;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
}

/* Say why @rt failed, in one line (threads print whole lines). */
static void say(struct rtarget *rt, struct result *res)
{
	flockfile(stderr);
	kkctl_report(&rt->t, res, true);
	funlockfile(stderr);
}

/* The process exited: every record it wrote is in; say so in the file. */
static void target_exited(struct rtarget *rt)
{
	struct kkr_line l = { .kind = KKR_EXITED, .ts = wall_ns() };
	struct kkr_rec *r = kkr_rec_new(&l, &rt->p);

	set_state(rt, T_GONE);
	if (r)
		kkr_push(&rt->src, &r, 1, 0);
}

/* A request's deadline: the target's bounds (--timeout), and after the
 * stop no later than the end's one deadline (kkr.end_by), whatever the
 * request. */
static uint64_t req_deadline(void)
{
	uint64_t d = kk_now_ns() + (uint64_t)(kkctl_bounds.timeout_s * 1e9), end_by;

	pthread_mutex_lock(&kkr.lock);
	end_by = kkr.stop ? kkr.end_by : 0;
	pthread_mutex_unlock(&kkr.lock);
	return end_by && end_by < d ? end_by : d;
}

/* The request by @deadline failed because the end's deadline came: not the
 * target's failure (the summary counts it as not read to its end). */
static bool cut_by_end(uint64_t deadline, const struct result *res)
{
	bool cut;

	pthread_mutex_lock(&kkr.lock);
	cut = !res->gone && kkr.stop && deadline == kkr.end_by && kk_now_ns() >= deadline;
	pthread_mutex_unlock(&kkr.lock);
	return cut;
}

/* A request failed: gone (not a failure) or failed (said). */
static void target_failed(struct rtarget *rt, struct result *res)
{
	if (res->gone || !kkctl_target_alive(&rt->t)) {
		target_exited(rt);
		return;
	}
	kkctl_settle_gone(&rt->t, res);
	say(rt, res);
	set_state(rt, T_FAILED);
}

/* Is @id the session of one of our targets?  (A forked child has its
 * parent's: it is joined, not begun.) */
static bool our_session(const char *id)
{
	bool ours = false;

	pthread_mutex_lock(&kkr.lock);
	for (size_t i = 0; i < kkr.nt && !ours; i++)
		ours = kkr.tv[i]->id[0] && !strcmp(kkr.tv[i]->id, id);
	pthread_mutex_unlock(&kkr.lock);
	return ours;
}

/* @rt refused `begin` as busy: join the session if it is ours ("busy:
 * session ID is open ..."). */
static bool join_ours(struct rtarget *rt, const struct result *res)
{
	char id[17], req[32];
	struct result r2;

	if (!res->body || sscanf(res->body, "busy: session %16[0-9a-f] is open", id) != 1 ||
	    strlen(id) != 16 || !our_session(id))
		return false;
	/* (held: by us, from now; a library older than `held` renews plainly) */
	snprintf(req, sizeof(req), "renew %s%s\n", id, rt->plain ? "" : " held");
	kkctl_request_by(&rt->t, "write", SESSION_FILE, req, strlen(req), req_deadline(), &r2);
	free(r2.body);
	if (!r2.ok)
		return false;
	pthread_mutex_lock(&kkr.lock);
	memcpy(rt->id, id, sizeof(id));
	rt->joined = true;
	pthread_mutex_unlock(&kkr.lock);
	return true;
}

static char *begin_body(char **queries, int nq, bool held, size_t *len);

/* A library older than `held` (before it, a lease was digits alone) refuses
 * `begin 1000 held` with exactly this line, and nothing else does. */
static bool refused_held(const struct result *res)
{
	char want[80];
	int n = snprintf(want, sizeof(want), "bad lease '%d held': expected 'begin LEASE_MS',",
			 LEASE_MS);

	return !res->ok && !res->gone && res->body && !strncmp(res->body, want, (size_t)n);
}

/* `begin LEASE held` and the queries; where the library is older than
 * `held`, `begin LEASE` again: the time lease, renewed by our reads (and
 * joins of its children are plain `renew`s).  The reply in @res. */
static void begin_request(struct rtarget *rt, struct result *res)
{
	size_t len;
	char *plain;

	kkctl_request_by(&rt->t, "write", SESSION_FILE, kkr.body, kkr.blen, req_deadline(), res);
	if (!refused_held(res) || !(plain = begin_body(kkr.opts->queries, kkr.opts->nq, false, &len)))
		return;		/* (out of memory: the refusal is said as it is) */
	free(res->body);
	rt->plain = true;
	kkctl_request_by(&rt->t, "write", SESSION_FILE, plain, len, req_deadline(), res);
	free(plain);
}

/* `begin LEASE` and the queries: "session ID: matched N changed M". */
static void target_begin(struct rtarget *rt)
{
	struct result res;
	unsigned long long matched, changed;
	char id[17];

	begin_request(rt, &res);
	if (res.ok && sscanf(res.body, "session %16[0-9a-f]: matched %llu changed %llu", id,
			     &matched, &changed) == 3 && strlen(id) == 16) {
		pthread_mutex_lock(&kkr.lock);
		memcpy(rt->id, id, sizeof(id));
		rt->matched = matched;
		pthread_mutex_unlock(&kkr.lock);
		set_state(rt, T_LIVE);
	} else if (res.ok) {
		snprintf(res.err, sizeof(res.err), "write %s: an answer kkctl does not know",
			 SESSION_FILE);
		res.ok = 0;
		say(rt, &res);
		set_state(rt, T_FAILED);
	} else if (!res.gone && join_ours(rt, &res)) {
		set_state(rt, T_LIVE);
	} else {
		target_failed(rt, &res);
	}
	free(res.body);
}

/* `end ID`: the library puts back what the session changed and nobody
 * changed since ("session ID ended: restored N, left M"). */
static void target_end(struct rtarget *rt)
{
	char req[32];
	struct result res;
	unsigned long long restored, left;

	snprintf(req, sizeof(req), "end %s\n", rt->id);
	kkctl_request_by(&rt->t, "write", SESSION_FILE, req, strlen(req), req_deadline(), &res);
	if (res.ok && sscanf(res.body, "session %*16[0-9a-f] ended: restored %llu, left %llu",
			     &restored, &left) == 2) {
		rt->restored = restored;
		rt->left = left;
	} else if (!res.ok && !res.gone && kkctl_target_alive(&rt->t)) {
		kkctl_settle_gone(&rt->t, &res);
		say(rt, &res);
	}
	rt->ended = res.ok;
	free(res.body);
}

/* One read's records on their way into rt->batch (take_line()). */
struct take {
	struct rtarget *rt;
	size_t n, waiting;	/* "lost" records still without a time */
};

/* One line (parsed, or decoded from trace_pipe_raw) into rt->batch.  A
 * "lost" line comes before its thread's events of the read: it gets the
 * time of the first of them (take_end(): or of the read, if none came).
 * 1: not taken (a thread --threads leaves out: it does not count in the
 * reply's time, kkr_rawdec_take()); -1: no memory (the read's other
 * records are not taken). */
static int take_line(void *arg, const struct kkr_line *l)
{
	struct take *tk = arg;
	struct rtarget *rt = tk->rt;
	struct kkr_rec *r, **v = rt->batch;

	if (l->kind == KKR_EXITED || !kkr_thread_wanted((int)l->tid, l->comm))
		return 1;
	if (tk->n == rt->bcap) {
		size_t nc = rt->bcap ? 2 * rt->bcap : 64;

		if (!(v = realloc(v, nc * sizeof(*v))))
			return -1;
		rt->batch = v;
		rt->bcap = nc;
	}
	if (!(r = rec_carve(&rt->chunk, l, &rt->p)))
		return -1;
	if (l->kind == KKR_LOST) {
		r->ts = 0;	/* (set below) */
		tk->waiting++;
	}
	/* (only while a "lost" waits: a read is hundreds of events) */
	for (size_t i = tk->n; tk->waiting && l->kind == KKR_EVENT && i-- > 0;)
		if (v[i]->kind == KKR_LOST && !v[i]->ts && v[i]->tid == r->tid) {
			v[i]->ts = r->ts;
			tk->waiting--;
		}
	v[tk->n++] = r;
	return 0;
}

/* The read's records taken: the "lost" ones still without a time get @start's. */
static size_t take_end(struct take *tk, uint64_t start)
{
	for (size_t i = 0; i < tk->n; i++)
		if (!tk->rt->batch[i]->ts)
			tk->rt->batch[i]->ts = start;
	return tk->n;
}

/* One read's lines into records. */
static size_t take_lines(struct rtarget *rt, char *s, size_t len, uint64_t start)
{
	struct kkr_line l = { 0 };
	struct take tk = { rt, 0, 0 };

	for (char *e, *end = s + len; s < end; s = e + 1) {
		const char *why;

		if (!(e = memchr(s, '\n', (size_t)(end - s))))
			e = end;
		if (e == s)
			continue;
		if (kkr_parse_line(s, (size_t)(e - s), &l, &why)) {
			if (!rt->warned)
				fprintf(stderr, "%s: process %d: a malformed record line (%s): "
					"skipped\n", kkctl_prog, (int)rt->t.pid, why);
			rt->warned = true;
			__atomic_fetch_add(&kkr.malformed, 1, __ATOMIC_RELAXED);
			continue;
		}
		if (take_line(&tk, &l) < 0)
			break;
	}
	kkr_line_free(&l);
	return take_end(&tk, start);
}

/*
 * How far the target has been read, by a read that kkctl began at @start
 * and that brought events up to @last (0: none).  What may still come:
 * records at or after @last (a read sends in time order, at most 128 KiB,
 * and keeps the rest), and records stamped before the read's copy but put
 * in their ring after it, stamped at most SLACK_NS before the copy, which
 * is after @start and after @last.  Every record older than both bounds is
 * in: so the first read's records are written at once, not after a second
 * read (it was @last - SLACK_NS, which held every record of a read within
 * 2 ms of its last: a burst waited for the next read, or that read's 250 ms
 * wait for a record).
 */
static uint64_t read_horizon(uint64_t start, uint64_t last)
{
	uint64_t copy = last > start ? last : start;

	return last && last < copy - SLACK_NS ? last : copy - SLACK_NS;
}

/* read_horizon() for a trace_pipe_raw read, or the bound its reply gave:
 * the library knows which writes were under way when it copied. */
static uint64_t raw_horizon(const struct rtarget *rt, uint64_t start, uint64_t last)
{
	uint64_t complete = !raw_ctf && rt->dec ? kkr_rawdec_complete(rt->dec) : 0;

	return complete ? complete : read_horizon(start, last);
}

/* The time of the last event of @v. */
static uint64_t last_event(struct kkr_rec **v, size_t n)
{
	uint64_t last = 0;

	for (size_t i = 0; i < n; i++)
		if (v[i]->kind == KKR_EVENT && v[i]->ts > last)
			last = v[i]->ts;
	return last;
}

/*
 * One read of trace_pipe_raw: its frames written into the ctf directory
 * (record_raw.c), or decoded into records for the merge (record_rawdec.c:
 * the other formats).  False: the target has no such file (an older
 * library): it is read from trace_pipe_json from now on.  *@last: as
 * target_read().
 */
static bool target_read_raw(struct rtarget *rt, uint64_t start, uint64_t dl, uint64_t *last)
{
	struct take tk = { rt, 0, 0 };
	struct result res;
	bool bad = false, failed = false;

	*last = 0;
	if (raw_ctf ? !rt->raw && !(rt->raw = kkr_raw_new(raw_ctf, &rt->p)) :
		      !rt->dec && !(rt->dec = kkr_rawdec_new(rt->t.pid))) {
		rt->no_raw = true;
		return false;
	}
	kkctl_request_by(&rt->t, "read", RAW_FILE, NULL, 0, dl, &res);
	if (!res.ok && res.body && !strncmp(res.body, "no such file", 12)) {
		rt->no_raw = true;
		free(res.body);
		return false;
	}
	if (!res.ok) {
		if (cut_by_end(dl, &res))
			rt->cut = CUT_DEADLINE;
		else
			target_failed(rt, &res);
	} else if (raw_ctf) {
		failed = kkr_raw_take(rt->raw, (unsigned char *)res.body, res.len, &bad, last);
	} else {	/* (no memory for a record: the rest of the read is not taken, as json) */
		failed = false;
		(void)kkr_rawdec_take(rt->dec, (unsigned char *)res.body, res.len, &bad,
				      take_line, &tk, last);
		take_end(&tk, start);
	}
	if (res.ok && failed) {
		set_state(rt, T_FAILED);	/* (the trace cannot be written: said) */
		__atomic_store_n(&kkr.host_failed, true, __ATOMIC_RELAXED);
	} else if (res.ok && bad) {
		__atomic_fetch_add(&kkr.malformed, 1, __ATOMIC_RELAXED);
	}
	free(res.body);
	if (res.ok)
		kkr_push(&rt->src, rt->batch, tk.n, raw_horizon(rt, start, *last));
	return true;
}

/* One read of the target's records (it renews the lease): its last event's
 * time, 0 if it brought none, or failed. */
static uint64_t target_read(struct rtarget *rt)
{
	uint64_t start = wall_ns(), last, dl = req_deadline();
	struct result res;
	size_t n;

	rt->renewed = kk_now_ns();
	if (raw_on && !rt->no_raw && target_read_raw(rt, start, dl, &last))
		return last;
	kkctl_request_by(&rt->t, "read", TRACE_FILE, NULL, 0, dl, &res);
	if (!res.ok) {
		if (cut_by_end(dl, &res))
			rt->cut = CUT_DEADLINE;
		else
			target_failed(rt, &res);
		free(res.body);
		return 0;
	}
	n = take_lines(rt, res.body, res.len, start);
	free(res.body);
	last = last_event(rt->batch, n);
	kkr_push(&rt->src, rt->batch, n, read_horizon(start, last));
	return last;
}

/* `renew ID`: the lease runs 1000 ms from now (a reader that pauses). */
static void target_renew(struct rtarget *rt)
{
	char req[32];
	struct result res;

	snprintf(req, sizeof(req), "renew %s\n", rt->id);
	rt->renewed = kk_now_ns();
	kkctl_request_by(&rt->t, "write", SESSION_FILE, req, strlen(req), req_deadline(), &res);
	if (!res.ok)
		target_failed(rt, &res);
	free(res.body);
}

/* Wait on kkr.cond (under kkr.lock) until @until (kk_now_ns()). */
static void wait_until(uint64_t until)
{
	struct timespec ts = kk_ns_to_ts(until);

	pthread_cond_timedwait(&kkr.cond, &kkr.lock, &ts);
}

/*
 * The end begins (under kkr.lock; again: nothing new, but a writer that
 * failed since makes the final reads pointless).  The main thread begins it
 * when it sees the end; a reader begins it when it sees a signal, so that
 * the sessions end, and the sites go back, also while the main thread is
 * stuck in a write to an output nobody reads.
 */
static void stop_begin(bool final_read)
{
	if (!kkr.stop) {
		kkr.stop = true;
		kkr.stop_at = kk_now_ns();
		kkr.end_by = kkr.stop_at + END_NS;
		kkr.final_read = true;
	}
	kkr.final_read &= final_read;
	pthread_cond_broadcast(&kkr.cond);
}

/*
 * Before a read: while the merge holds READ_ROOM records (the writer is
 * behind), pause, renewing the lease every RENEW_NS; the records wait in the
 * target's rings meanwhile.  @ending: after `end`, until @end_by.  False: do
 * not read (the end came, or its deadline).
 */
static bool room_to_read(struct rtarget *rt, bool ending, uint64_t end_by)
{
	bool go = false;

	pthread_mutex_lock(&kkr.lock);
	for (;;) {
		uint64_t now = kk_now_ns(), due = rt->renewed + RENEW_NS;

		if (got_signal)	/* (the main thread may be stuck in a write) */
			stop_begin(true);
		if (hurried || (ending && !kkr.final_read))	/* (a writer that failed takes none) */
			break;
		/* (at the end too: what is left in the rings is finite, but
		 * 100 busy processes left 2 million records, 500 MB read into
		 * memory, and minutes of writing after the end's deadline) */
		go = kkr.n < READ_ROOM;
		if (go || kkr.stop != ending || (end_by && now >= end_by))
			break;
		if (ending || now < due) {	/* (after `end` there is no lease) */
			wait_until(ending ? end_by : due);
			continue;
		}
		pthread_mutex_unlock(&kkr.lock);
		target_renew(rt);
		pthread_mutex_lock(&kkr.lock);
		if (rt->state != T_LIVE)
			break;
	}
	go = go && !hurried && kkr.stop == ending && rt->state == T_LIVE &&
	     !(end_by && kk_now_ns() >= end_by);
	pthread_mutex_unlock(&kkr.lock);
	return go;
}

/*
 * May a source that can wait (a host of -H: its lines wait in its pipe, and
 * its kkctl pauses in turn) hand the merge more now?  Not while the merge
 * holds READ_ROOM records, as room_to_read(); yes once nothing will be
 * written (a second signal, or an end that takes nothing), so that its
 * kkctl can finish and exit.
 */
bool kkr_room(void)
{
	bool room;

	pthread_mutex_lock(&kkr.lock);
	room = kkr.n < READ_ROOM || hurried || (kkr.stop && !kkr.final_read);
	pthread_mutex_unlock(&kkr.lock);
	return room;
}

/* After `end` (at @ended): read until the target has nothing older left
 * (a site somebody else keeps on would give records for ever), or until
 * the end's deadline (then it is marked cut: the summary says so). */
static void target_drain(struct rtarget *rt, uint64_t ended)
{
	uint64_t last, end_by = kkr.end_by;

	do {
		if (!room_to_read(rt, true, end_by)) {
			rt->cut = rt->state != T_LIVE ? CUT_NOT : hurried ? CUT_SIGNAL : CUT_DEADLINE;
			return;
		}
		last = target_read(rt);
	} while (last && last < ended && rt->state == T_LIVE);
}

/* Every begin of the first selection answered: decide the start, and open
 * the output when it goes (called once, without kkr.lock). */
static void start_decide(void)
{
	bool failed = false, ok;
	size_t live = 0;
	uint64_t matched = 0;
	int v = -1;

	pthread_mutex_lock(&kkr.lock);
	for (size_t i = 0; i < start.n; i++) {
		failed |= kkr.tv[i]->state == T_FAILED;
		live += kkr.tv[i]->state == T_LIVE;
		matched += kkr.tv[i]->matched + kkr.tv[i]->joined;
	}
	pthread_mutex_unlock(&kkr.lock);
	ok = !failed && live && matched && !got_signal;
	if (ok && kkr_writer_open(start.w)) {
		start.open_failed = true;
	} else if (ok) {
		/* trace_pipe_raw: ctf's readers write its frames themselves, the
		 * other formats' decode them for the merge (KKCTL_RECORD_RAW=0:
		 * every record through trace_pipe_json) */
		if ((raw_on = raw_wanted()))
			raw_ctf = kkr_ctf_of(start.w);
		v = 1;
	}
	pthread_mutex_lock(&kkr.lock);
	kkr.begun_ok = v > 0;
	start.verdict = v;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
}

/* @rt's begin answered: the last of the first selection decides the start. */
static void start_answered(struct rtarget *rt)
{
	bool last;

	pthread_mutex_lock(&kkr.lock);
	last = rt->first && !--start.left;
	pthread_mutex_unlock(&kkr.lock);
	if (last)
		start_decide();
}

/* Wait for the start's verdict: 1 recording, -1 refused. */
static int start_wait(void)
{
	int v;

	pthread_mutex_lock(&kkr.lock);
	while (!(v = start.verdict))
		pthread_cond_wait(&kkr.cond, &kkr.lock);
	pthread_mutex_unlock(&kkr.lock);
	return v;
}

/* A target's thread: its session begun (unless it was), its reads from
 * the moment the start is decided, and at the end `end` and the reads of
 * what is left. */
static void *target_thread(void *arg)
{
	struct rtarget *rt = arg;

	if (rt->state == T_BEGIN) {
		target_begin(rt);
		start_answered(rt);
	}
	if (start_wait() > 0)
		while (rt->state == T_LIVE && room_to_read(rt, false, 0))
			target_read(rt);
	if (rt->state == T_LIVE && kkr.begun_ok) {
		uint64_t ended = wall_ns();
		bool drain;

		target_end(rt);
		pthread_mutex_lock(&kkr.lock);	/* (a failed writer clears it) */
		drain = kkr.final_read;
		pthread_mutex_unlock(&kkr.lock);
		if (drain)
			target_drain(rt, ended);
	}
	free(rt->batch);
	rt->batch = NULL;
	kkr_raw_free(rt->raw);
	rt->raw = NULL;
	kkr_rawdec_free(rt->dec);
	rt->dec = NULL;
	chunk_put(rt->chunk);
	rt->chunk = NULL;
	pthread_mutex_lock(&kkr.lock);
	rt->src.live = false;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
	return NULL;
}

/* Start @rt's thread, with the signals kkctl ends on blocked (they are the
 * main thread's). */
static int target_start(struct rtarget *rt, void *(*fn)(void *))
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&rt->th, NULL, fn, rt);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	rt->thread = !err;
	if (err)
		fprintf(stderr, "%s: process %d: cannot start a thread: %s\n", kkctl_prog,
			(int)rt->t.pid, strerror(err));
	return err ? -1 : 0;
}

/* A new target for @t (taken: its pidfd is the target's now). */
static struct rtarget *target_add(struct target *t)
{
	struct rtarget *rt = calloc(1, sizeof(*rt));
	struct rtarget **v;

	if (!rt)
		return NULL;
	rt->t = *t;
	t->watched = false;
	rt->src.live = true;
	snprintf(rt->p.name, sizeof(rt->p.name), "%s", t->name);
	rt->p.proc = (struct kkr_proc){ .host = "", .pid = (int)t->pid,
					.vpid = (int)(t->contained ? t->inpid : t->pid),
					.name = rt->p.name };
	pthread_mutex_lock(&kkr.lock);
	v = kkr.tv;
	if (kkr.nt == kkr.tcap) {	/* (grown in place or moved: the capacity is new) */
		size_t cap = kkr.tcap ? 2 * kkr.tcap : 16;

		if ((v = realloc(kkr.tv, cap * sizeof(*v)))) {
			kkr.tv = v;
			kkr.tcap = cap;
		}
	}
	if (v)
		kkr.tv[kkr.nt++] = rt;
	pthread_mutex_unlock(&kkr.lock);
	if (!v) {
		free(rt);
		return NULL;
	}
	return rt;
}

/* ---- the selection, begun ------------------------------------------------ */

/* End the sessions begun so far (a refused start changes nothing). */
static void end_begun(void)
{
	for (size_t i = 0; i < kkr.nt; i++)
		if (kkr.tv[i]->state == T_LIVE)
			target_end(kkr.tv[i]);
}

/* Begin a session in every selected process, all at once, each by its
 * reader thread (see start), and open the output @w.  0: recording; or 1
 * after one line, every session begun ended again. */
static int begin_all(struct tlist *l, struct kkr_writer *w)
{
	uint64_t matched = 0;
	size_t live = 0;
	bool failed = false;

	for (size_t i = 0; i < l->n; i++)
		if (!target_add(&l->v[i])) {
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
			return 1;
		}
	start.n = start.left = kkr.nt;
	start.w = w;
	for (size_t i = 0; i < kkr.nt; i++)
		kkr.tv[i]->first = true;
	if (!kkr.nt)
		start_decide();
	for (size_t i = 0; i < kkr.nt; i++)
		if (target_start(kkr.tv[i], target_thread)) {
			kkr.tv[i]->src.live = false;	/* (begun, not read) */
			target_begin(kkr.tv[i]);
			start_answered(kkr.tv[i]);
		}
	if (start_wait() > 0)
		return 0;
	for (size_t i = 0; i < kkr.nt; i++) {
		struct rtarget *rt = kkr.tv[i];

		if (rt->thread)
			pthread_join(rt->th, NULL);
		rt->thread = false;
		failed |= rt->state == T_FAILED;
		live += rt->state == T_LIVE;
		matched += rt->matched + rt->joined;
	}
	end_begun();
	if (start.open_failed)
		return 1;	/* (said) */
	if (got_signal)
		fprintf(stderr, "%s: interrupted before the recording began: nothing changed\n",
			kkctl_prog);
	else if (!failed && !live)
		fprintf(stderr, "%s: every selected process exited before its session began\n",
			kkctl_prog);
	else if (!failed && !matched)
		fprintf(stderr, "%s: the query matches no site in any selected process\n",
			kkctl_prog);
	return 1;
}

static bool kkr_stopped(void)
{
	bool stop;

	pthread_mutex_lock(&kkr.lock);
	stop = kkr.stop;
	pthread_mutex_unlock(&kkr.lock);
	return stop;
}

/* Processes the selectors match now that are not targets yet: begun (or
 * joined) and read by threads of their own. */
static void pick_up(void)
{
	struct tlist fresh = { 0 };

	if (kkctl_select_again(&kkr.opts->sel, &fresh) < 0 || kkr_stopped()) {
		kkctl_tlist_free(&fresh);	/* (stopped meanwhile: nothing new begins) */
		return;
	}
	for (size_t i = 0; i < fresh.n; i++) {
		struct target *t = &fresh.v[i];
		struct rtarget *rt;
		bool known = false;

		for (size_t j = 0; j < kkr.nt && !known; j++)
			known = kkr.tv[j]->t.pid == t->pid && kkr.tv[j]->t.start == t->start;
		if (known || !t->start || !(rt = target_add(t)))
			continue;
		if (target_start(rt, target_thread))
			rt->src.live = false;
	}
	kkctl_tlist_free(&fresh);
}

static pthread_t picker;
static bool picking;
static bool picker_done;	/* (under kkr.lock) */

/* The picker: pick_up() every PICKUP_NS until the end. */
static void *picker_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&kkr.lock);
	for (;;) {
		wait_until(kk_now_ns() + PICKUP_NS);
		if (kkr.stop)
			break;
		pthread_mutex_unlock(&kkr.lock);
		pick_up();
		pthread_mutex_lock(&kkr.lock);
	}
	picker_done = true;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
	return NULL;
}

/* Wait for the picker until the end's deadline: a scan of /proc in flight
 * (seconds, with many busy processes on a loaded machine) must not hold the
 * end past it.  One still scanning then is left to exit() (what it begins
 * after the stop ends by itself: held sessions end with us). */
static void picker_join(void)
{
	bool done;

	pthread_mutex_lock(&kkr.lock);
	while (!picker_done && kk_now_ns() < kkr.end_by)
		wait_until(kkr.end_by);
	done = picker_done;
	pthread_mutex_unlock(&kkr.lock);
	if (done)
		pthread_join(picker, NULL);
	else
		pthread_detach(picker);
}

/* Start the picker (with the signals kkctl ends on blocked) when a selector
 * may match new processes: -n, --tree, --all, -M. */
static void picker_start(void)
{
	const struct kkctl_sel *s = &kkr.opts->sel;
	sigset_t all, old;

	if (kkr.nsrc || !(s->nn || s->nt || s->all || s->nm))
		return;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	picking = !pthread_create(&picker, NULL, picker_thread, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!picking)
		fprintf(stderr, "%s: cannot start a thread: new processes will not be picked "
			"up\n", kkctl_prog);
}

/* ---- the writer's side ---------------------------------------------------- */

/* The oldest wall-clock time a live process may still send a record of. */
static uint64_t horizon(void)
{
	uint64_t min = UINT64_MAX;

	for (size_t i = 0; i < kkr.nt; i++) {
		struct rtarget *rt = kkr.tv[i];

		if (rt->src.live && (rt->state == T_LIVE || rt->state == T_BEGIN) &&
		    rt->src.horizon < min)
			min = rt->src.horizon;
	}
	for (size_t i = 0; i < kkr.nsrc; i++)
		if (kkr.srcs[i]->live && kkr.srcs[i]->horizon < min)
			min = kkr.srcs[i]->horizon;
	return min;
}

/* Take up to @max records that may be written now (all with @all), in
 * order (under kkr.lock). */
static size_t take_ready(struct kkr_rec **out, size_t max, bool all)
{
	uint64_t now = kk_now_ns(), min = horizon();
	size_t n = 0;

	while (kkr.n && n < max) {
		struct kkr_rec *r = kkr.heap[0];

		if (!all && r->ts >= min && now - r->arrived < HOLD_NS && kkr.n < READ_ROOM)
			break;
		out[n++] = heap_pop();
	}
	return n;
}

/* Hand @r to the writer (and free it).  -1: the writer failed. */
static int emit(struct kkr_writer *w, struct kkr_rec *r)
{
	struct kkr_event e;
	int ret = 0;

	if (r->kind == KKR_EVENT && kkr.opts->count && kkr.events >= kkr.opts->count) {
		kkr_rec_free(r);
		return 0;
	}
	switch (r->kind) {
	case KKR_EVENT:
		e = (struct kkr_event){ &r->p->proc, r->ts, r->mono, r->tid, r->comm, r->module,
					r->function, r->file, r->line, r->format, r->message,
					r->nargs, r->args };
		ret = w->ops->event(w, &e);
		kkr.events++;
		r->p->events++;
		break;
	case KKR_LOST:
		ret = w->ops->lost(w, &r->p->proc, r->tid, r->count, r->ts);
		kkr.lost += r->count;
		r->p->lost += r->count;
		break;
	case KKR_EXITED:
		ret = w->ops->exited(w, &r->p->proc, r->ts);
		break;
	}
	kkr_rec_free(r);
	return ret;
}

/* Open the output if it is not (-H opens it at the first record: a host
 * that refuses at the start leaves no file).  -1 after one line. */
int kkr_writer_open(struct kkr_writer *w)
{
	if (kkr.opened)
		return 0;
	if (w->ops->open(w, kkr.opts->path))
		return -1;
	kkr.opened = true;
	return 0;
}

/* @r is not written (the writer failed, or a second signal came): freed;
 * when a signal is why, an event is counted as not written, and a loss
 * still counts in the summary's. */
static void unwritten(struct kkr_rec *r)
{
	if (hurried && r->kind == KKR_EVENT)
		kkr.unwritten++;
	else if (hurried && r->kind == KKR_LOST)
		kkr.lost += r->count;
	kkr_rec_free(r);
}

/* Write what can be written, at most what the merge held when the round
 * began (readers that fill it as fast as we write would keep one round
 * going for ever, and the end, SIGINT included, is looked at between rounds:
 * with 4 processes writing flat out, kkctl did not end in 120 s); wait up to
 * 100 ms for more.  -1: the writer failed. */
static int write_round(struct kkr_writer *w, bool all)
{
	struct kkr_rec *batch[BATCH];
	size_t n, budget = SIZE_MAX;
	int ret = 0;

	do {
		pthread_mutex_lock(&kkr.lock);
		if (budget == SIZE_MAX)
			budget = kkr.n > BATCH ? kkr.n : BATCH;
		n = take_ready(batch, budget < BATCH ? budget : BATCH, all);
		budget -= n;
		if (n)	/* room for the readers that pause */
			pthread_cond_broadcast(&kkr.cond);
		if (!n && !all) {
			struct timespec ts;

			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_nsec += 100000000;
			ts.tv_sec += ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&kkr.cond, &kkr.lock, &ts);
		}
		pthread_mutex_unlock(&kkr.lock);
		if (n && kkr_writer_open(w))
			ret = -1;
		for (size_t i = 0; i < n; i++)	/* (after a failure: freed, not written) */
			if (ret || hurried)
				unwritten(batch[i]);
			else
				ret = emit(w, batch[i]);
	} while (n == BATCH && budget && !ret && !hurried);
	if (!ret && kkr.opened && w->ops->flush)
		ret = w->ops->flush(w);
	return ret;
}

/* Is there nothing more to wait for: no live source, and no selector that
 * could match a new process? */
static bool all_done(void)
{
	const struct kkctl_sel *s = &kkr.opts->sel;
	bool live = false;

	pthread_mutex_lock(&kkr.lock);
	for (size_t i = 0; i < kkr.nt && !live; i++)
		live = kkr.tv[i]->src.live;
	for (size_t i = 0; i < kkr.nsrc && !live; i++)
		live = kkr.srcs[i]->live;
	live |= kkr.n > 0;
	pthread_mutex_unlock(&kkr.lock);
	return !live && (kkr.nsrc || !(s->nn || s->nt || s->all || s->nm));
}

/* Why the recording ends now, or NULL. */
static const char *ending(uint64_t t0)
{
	const struct kkr_opts *o = kkr.opts;

	if (got_signal)
		return got_signal > 0 ? "signal" : "end of input";
	if (__atomic_load_n(&kkr.host_failed, __ATOMIC_RELAXED))
		return "a host failed";
	if (o->duration_ns && kk_now_ns() - t0 >= o->duration_ns)
		return "duration";
	if (o->count && kkr.events >= o->count)
		return "count";
	if (all_done())
		return "no process left";
	return NULL;
}

/* Record until the end comes.  0, or -1: the writer failed. */
int kkr_record_loop(struct kkr_writer *w)
{
	uint64_t t0 = kk_now_ns();

	picker_start();
	while (!ending(t0))
		if (write_round(w, false))
			return -1;
	return 0;
}

/* ---- the end ---------------------------------------------------------------- */

/* Is a reader still at work: a local one, or a host's (whose thread waits
 * for the writer to make room, kkr_room())? */
static bool readers_live(void)
{
	bool live = false;

	pthread_mutex_lock(&kkr.lock);
	for (size_t i = 0; i < kkr.nt && !live; i++)
		live = kkr.tv[i]->thread && kkr.tv[i]->src.live;
	for (size_t i = 0; i < kkr.nsrc && !live; i++)
		live = kkr.srcs[i]->live;
	pthread_mutex_unlock(&kkr.lock);
	return live;
}

/* An end that takes long (a writer far behind: 100 processes writing flat
 * out left 2 million records to write) says once, on a terminal, that a
 * second signal ends it at once. */
static void hint_hurry(void)
{
	static bool said;
	bool long_;

	if (said || hurried || !isatty(2))
		return;
	pthread_mutex_lock(&kkr.lock);
	long_ = kk_now_ns() - kkr.stop_at > 1000000000ull || kkr.n > READ_ROOM;
	pthread_mutex_unlock(&kkr.lock);
	if (!long_)
		return;
	said = true;
	fprintf(stderr, "%s: ending: writing what the processes recorded "
		"(interrupt again to end now, without the rest)\n", kkctl_prog);
}

/*
 * Stop every reader: each sends `end` as soon as its request in flight
 * returns (so all at once), and reads what is left until END_NS from now,
 * one deadline for all; the writer goes on writing meanwhile, so that the
 * merge never holds more than READ_ROOM records.  Then write what is left.
 * A second signal (hurried) ends all that at once: the readers stop after
 * the request in flight, and the records not written yet are counted, not
 * written (nor freed: kkctl exits).  -1: the writer failed.
 */
int kkr_finish(struct kkr_writer *w, bool writer_ok)
{
	int ret = 0;

	pthread_mutex_lock(&kkr.lock);
	stop_begin(writer_ok && !(kkr.opts->count && kkr.events >= kkr.opts->count));
	pthread_mutex_unlock(&kkr.lock);
	kkr_remote_stop();
	/* (the picker after the readers' first pass: its scan of /proc must not
	 * stall the writer, which the readers wait for; then any reader it
	 * started meanwhile) */
	for (int pass = 0; pass < 2; pass++) {
		while (writer_ok && !ret && !hurried && readers_live()) {
			hint_hurry();
			ret = write_round(w, false);
		}
		if (picking)
			picker_join();
		picking = false;
	}
	for (size_t i = 0; i < kkr.nt; i++)
		if (kkr.tv[i]->thread)
			pthread_join(kkr.tv[i]->th, NULL);
	kkr_remote_join();
	hint_hurry();
	if (writer_ok && !ret && !hurried)
		ret = write_round(w, true);
	pthread_mutex_lock(&kkr.lock);
	if (hurried) {	/* (counted, and left to the exit: among 100 busy
			 * processes, popping 2 million records took a minute) */
		kkr.unwritten += kkr.held_events;
		kkr.lost += kkr.held_lost;
	} else {
		while (kkr.n)
			kkr_rec_free(heap_pop());
	}
	pthread_mutex_unlock(&kkr.lock);
	return ret;
}

/* One line on what was recorded. */
void kkr_summary(const char *path)
{
	uint64_t restored = 0, left = 0;
	size_t procs = 0, cut = 0, cut_signal = 0;

	for (size_t i = 0; i < kkr.nt; i++) {
		restored += kkr.tv[i]->restored;
		left += kkr.tv[i]->left;
		procs += kkr.tv[i]->p.events > 0;
		cut += kkr.tv[i]->cut == CUT_DEADLINE;
		cut_signal += kkr.tv[i]->cut == CUT_SIGNAL;
	}
	procs += kkr_remote_procs();
	fprintf(stderr, "%s: %llu records from %zu process%s to %s", kkctl_prog,
		(unsigned long long)kkr.events, procs, procs == 1 ? "" : "es", path);
	fprintf(stderr, "; lost %llu", (unsigned long long)kkr.lost);
	if (kkr.malformed || kkr.dropped)
		fprintf(stderr, ", %llu malformed, %llu dropped",
			(unsigned long long)kkr.malformed, (unsigned long long)kkr.dropped);
	if (kkr.unwritten)
		fprintf(stderr, "; %llu records not written (a second signal)",
			(unsigned long long)kkr.unwritten);
	if (cut_signal)
		fprintf(stderr, "; %zu process%s not read to the end (a second signal)",
			cut_signal, cut_signal == 1 ? "" : "es");
	if (cut)
		fprintf(stderr, "; %zu process%s not read to the end within the end's %llu s "
			"(their last records are not in)", cut, cut == 1 ? "" : "es",
			END_NS / 1000000000ull);
	if (!kkr.nsrc)
		fprintf(stderr, "; sites put back %llu, left as others set them %llu",
			(unsigned long long)restored, (unsigned long long)left);
	fputc('\n', stderr);
}

/* ---- the command ---------------------------------------------------------- */

/* Can @path be written (made)?  Asked before any session begins, so that a
 * bad path changes nothing.  0, or -1 after one line. */
int kkr_check_output(const char *path, bool dir)
{
	char parent[PATH_MAX];
	const char *slash;
	struct stat st;

	if (!strcmp(path, "-")) {
		if (!dir)
			return 0;
		fprintf(stderr, "%s: this format writes a directory, not standard output\n",
			kkctl_prog);
		return -1;
	}
	if (!stat(path, &st)) {
		if (dir != !!S_ISDIR(st.st_mode))
			errno = dir ? ENOTDIR : EISDIR;
		else if (!access(path, W_OK))
			return 0;
	} else if (errno == ENOENT) {
		slash = strrchr(path, '/');
		snprintf(parent, sizeof(parent), "%.*s", slash ? (int)(slash - path) : 1,
			 slash ? (slash == path ? "/" : path) : ".");
		if (!access(parent, W_OK | X_OK))
			return 0;
	}
	fprintf(stderr, "%s: ", kkctl_prog);
	kkctl_put_escaped(stderr, path, strlen(path), "");
	fprintf(stderr, ": %s\n", strerror(errno));
	return -1;
}

/* The first signal ends the recording; a second (after any signal: the
 * end of --stdin-stop's input is no signal) ends the end at once. */
static void on_signal(int sig)
{
	if (got_signal > 0)
		hurried = 1;
	got_signal = sig;
}

bool kkr_signalled(void)
{
	return got_signal;
}

bool kkr_hurried(void)
{
	return hurried;
}

static void catch_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);	/* a closed output is an error we say */
}

/* --stdin-stop (a remote kkctl under -H): end when standard input closes. */
static void *stdin_watch(void *arg)
{
	char buf[256];

	(void)arg;
	while (read(0, buf, sizeof(buf)) > 0 || errno == EINTR)
		errno = 0;
	if (!got_signal)
		got_signal = -1;
	pthread_mutex_lock(&kkr.lock);
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
	return NULL;
}

static const struct kkr_writer_ops *find_writer(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(kkr_writers); i++)
		if (!strcmp(name, kkr_writers[i]->name))
			return kkr_writers[i];
	fprintf(stderr, "%s: unknown format '", kkctl_prog);
	kkctl_put_escaped(stderr, name, strlen(name), "");
	fputs("' (formats:", stderr);
	for (size_t i = 0; i < ARRAY_SIZE(kkr_writers); i++)
		fprintf(stderr, " %s", kkr_writers[i]->name);
	fputs(")\n", stderr);
	return NULL;
}

/* "begin 1000 held\n" and the queries, one a line (held: we hold the
 * session; it ends when we are gone), or without held (an older library). */
static char *begin_body(char **queries, int nq, bool held, size_t *len)
{
	size_t n = 32;
	char *b;

	for (int i = 0; i < nq; i++)
		n += strlen(queries[i]) + 1;
	if (!(b = malloc(n)))
		return NULL;
	*len = (size_t)snprintf(b, n, "begin %d%s\n", LEASE_MS, held ? " held" : "");
	for (int i = 0; i < nq; i++)
		*len += (size_t)snprintf(b + *len, n - *len, "%s\n", queries[i]);
	return b;
}

static void cond_init(void)
{
	pthread_condattr_t ca;

	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&kkr.cond, &ca);
	pthread_condattr_destroy(&ca);
}

static void free_targets(void)
{
	for (size_t i = 0; i < kkr.nt; i++) {
		kkctl_target_unwatch(&kkr.tv[i]->t);
		free(kkr.tv[i]);
	}
	free(kkr.tv);
	kkr.tv = NULL;
	kkr.nt = kkr.tcap = 0;
}

/* KKCTL_RECORD_RAW: 1 (or unset, or empty) reads trace_pipe_raw, 0 does not. */
static bool raw_wanted(void)
{
	const char *v = getenv("KKCTL_RECORD_RAW");

	return !v || strcmp(v, "0");	/* (checked by kkctl_record()) */
}

/* Record locally: select, begin, write, end.  The exit status. */
static int record_local(struct kkr_opts *o, struct kkr_writer *w)
{
	int ret;

	if (kkctl_select(&o->sel))
		return 1;
	if (begin_all(&o->sel.targets, w)) {
		free_targets();
		return 1;
	}
	ret = kkr_record_loop(w);
	ret |= kkr_finish(w, !ret);
	ret |= w->ops->close(w);
	kkr_summary(!strcmp(o->path, "-") ? "standard output" : o->path);
	for (size_t i = 0; i < kkr.nt; i++)
		ret |= kkr.tv[i]->state == T_FAILED;
	free_targets();
	return ret ? 1 : 0;
}

/* --threads TID|NAME,...: split at commas (in place), blanks around an
 * entry dropped, added to @o's list.  An entry must be able to name a
 * thread, as dynamic_debug/trace_threads requires: an id from 1 to
 * INT_MAX, a name (glob) of at most 15 bytes.  0, or 2 after one line. */
static int opt_threads(struct kkr_opts *o, char *arg)
{
	size_t had = o->nthreads;

	for (char *save = NULL, *t = strtok_r(arg, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *e = t + strlen(t);
		struct kkr_thread *v;
		const char *why = NULL;
		long id = 0;

		t += strspn(t, " \t");
		while (e > t && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = '\0';
		if (!*t)
			continue;
		if (thread_entry_is_id(t)) {
			errno = 0;
			id = strtol(t, NULL, 10);
			if (errno || id < 1 || id > INT_MAX)
				why = "not a thread id";
		} else if (e - t > 15) {
			why = "a thread name longer than 15 bytes";
		}
		if (why) {
			fprintf(stderr, "%s: record: --threads: %s: ", kkctl_prog, why);
			kkctl_put_escaped(stderr, t, strlen(t), "");
			fputc('\n', stderr);
			return 2;
		}
		if (!(v = realloc(o->threads, (o->nthreads + 1) * sizeof(*v)))) {
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
			return 2;
		}
		o->threads = v;
		o->threads[o->nthreads++] = (struct kkr_thread){ .text = t, .tid = (int)id };
	}
	if (o->nthreads > had)
		return 0;
	fprintf(stderr, "%s: record: --threads: no thread named in '%s'\n", kkctl_prog, arg);
	return 2;
}

enum { OPT_THREADS = 300, OPT_WALLCLOCK, OPT_STDIN_STOP };

/* One option of record's into @o.  0, or 2 after one line. */
static int record_option(struct kkr_opts *o, int c, char *arg)
{
	char *end;
	double d;

	switch (c) {
	case 'o':
		o->path = arg;
		return 0;
	case 'F':
		o->format = arg;
		return 0;
	case 'd':
		d = strtod(arg, &end);
		if (*end || !(d > 0) || d > 1e9)
			break;
		o->duration_ns = (uint64_t)(d * 1e9);
		return 0;
	case 'c':
		errno = 0;
		o->count = strtoull(arg, &end, 10);
		if (*end || errno || !o->count || *arg == '-')
			break;
		return 0;
	case OPT_THREADS:
		return opt_threads(o, arg);
	case OPT_WALLCLOCK:
		o->wallclock = true;
		return 0;
	case OPT_STDIN_STOP:
		o->stdin_stop = true;
		return 0;
	default:
		fprintf(stderr, "try '%s --help'\n", kkctl_prog);
		return 2;
	}
	fprintf(stderr, "%s: record: bad value: ", kkctl_prog);
	kkctl_put_escaped(stderr, arg, strlen(arg), "");
	fputc('\n', stderr);
	return 2;
}

/* kkctl ... record [options] QUERY...: @argv from "record" on.  The exit
 * status. */
int kkctl_record_main(struct kkctl_sel *sel, const char **hosts, int nh, int argc, char **argv)
{
	static const struct option longs[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "format", required_argument, NULL, 'F' },
		{ "duration", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "wallclock", no_argument, NULL, OPT_WALLCLOCK },
		{ "stdin-stop", no_argument, NULL, OPT_STDIN_STOP },
		{ NULL, 0, NULL, 0 },
	};
	static struct kkr_opts o;
	int c, st;

	o.sel = *sel;
	o.cmd_argc = argc;
	o.hosts = hosts;
	o.nh = nh;
	o.format = "ctf";
	optind = 0;	/* (a new scan: getopt_long() parsed kkctl's own options) */
	while ((c = getopt_long(argc, argv, "o:F:d:c:", longs, NULL)) != -1)
		if ((st = record_option(&o, c, optarg))) {
			free(o.threads);
			return st;
		}
	o.queries = argv + optind;
	o.nq = argc - optind;
	if (!o.nq) {
		fprintf(stderr, "%s: record needs a query, such as 'module http +T'\n", kkctl_prog);
		free(o.threads);
		return 2;
	}
	kkctl_json = false;	/* (record writes its own formats) */
	st = kkctl_record(&o);
	*sel = o.sel;
	free(o.threads);
	return st;
}

int kkctl_record(struct kkr_opts *o)
{
	static struct kkr_writer w;
	const char *raw;
	pthread_t th;
	int ret;

	kkr.opts = o;
	cond_init();
	if (!(w.ops = find_writer(o->format)))
		return 2;
	if ((raw = getenv("KKCTL_RECORD_RAW")) && *raw && strcmp(raw, "0") && strcmp(raw, "1")) {
		fprintf(stderr, "%s: KKCTL_RECORD_RAW: expected 0 or 1\n", kkctl_prog);
		return 2;
	}
	w.wallclock = o->wallclock;
	if (!o->path)
		o->path = w.ops->dir || !strcmp(w.ops->name, "perfetto") ? "kk-trace" : "-";
	if (kkr_check_output(o->path, w.ops->dir))
		return 1;
	if (!(kkr.body = begin_body(o->queries, o->nq, true, &kkr.blen))) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return 1;
	}
	catch_signals();
	if (o->stdin_stop && !pthread_create(&th, NULL, stdin_watch, NULL))
		pthread_detach(th);
	kkctl_our_netns();	/* (its cache, before the threads) */
	ret = o->nh ? kkr_record_hosts(o, &w) : record_local(o, &w);
	free(kkr.body);
	return ret;
}
