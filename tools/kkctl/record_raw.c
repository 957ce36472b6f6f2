// SPDX-License-Identifier: MIT
/*
 * kkctl record --format ctf, the raw path: a local process's
 * dynamic_debug/trace_pipe_raw replies (src/dynamic_debug/trace_raw.h)
 * written straight into the ctf directory by the process's reader thread,
 * with no work per record but a check of its length and class and a
 * rewrite of its class id and time in place (issue 39: the json path
 * parsed and re-encoded every record).
 *
 *   DIR/pid42-tid43    one stream a thread (stream class 1 of the metadata);
 *                      each RING frame of a reply is one packet
 *
 * A CLASS frame becomes an event class of stream 1 (the same name as the
 * json path's, its fields typed as packed), found again by its bytes: the
 * metadata is written again, whole, before a packet that needs a class it
 * lacks.  Nothing of a reply is trusted: every frame's and record's length
 * is checked against what holds it, a record's class against the reply's,
 * and a frame that fails is skipped whole (said once); a record's values
 * are not checked against its class (a process that lies spoils its own
 * streams, nothing else).  docs/tracing.md, "The raw stream".
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "dynamic_debug/trace_raw.h"
#include "record_int.h"
#include "record_raw.h"

#define RAW_HEADER	96		/* packet header (32) and context (64) */
#define RAW_LOST_EV	32		/* a kernelkit:records_lost event */
#define RAW_STREAMS	1024		/* a process's thread streams, at most */
#define CTF_MAGIC	0xC1FC1FC1u
#define NO_CLASS	UINT32_MAX
#define ROUND8(n)	(((n) + 7) & ~(size_t)7)

/* The raw classes of the trace, found by their CLASS frame's bytes (under the ctf lock). */
static struct {
	unsigned char **key;
	size_t *klen;
	uint32_t *gid;
	size_t n, cap;
	size_t *slot, scap;		/* 1 + index, 0 empty */
	bool lost_made;			/* kernelkit:records_lost: class 0 of stream 1 */
} cls;

/* A thread's stream. */
struct rstream {
	int tid, fd;
	char file[48];
	uint64_t instance, seq, discarded, last;
	unsigned char uuid[16];
};

struct kkr_raw {
	struct ctf *c;
	struct kkr_pinfo *p;
	struct rstream **s;
	size_t ns;
	uint32_t *map;			/* a reply's class ids to the trace's */
	size_t nmap;
	uint64_t off;			/* mono ns to the clock's value (this reply's; wraps) */
	int64_t real_off;		/* the first reply's: one for the session (below) */
	bool off_set, said_bad, said_many;
};

/* ---- classes -------------------------------------------------------------- */

static size_t key_hash(const unsigned char *k, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ k[i]) * 0x100000001b3ull;
	return (size_t)h;
}

/* A string of a frame, NUL-terminated, into @buf (@cap bytes). */
static const char *frame_str(const unsigned char *s, size_t n, char *buf, size_t cap)
{
	if (n >= cap)
		n = cap - 1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

/* The TSDL type of a field of @kind and @size; NULL: none such. */
static const char *field_type(unsigned kind, unsigned size)
{
	static const struct {
		uint8_t kind, size;
		const char *type;
	} types[] = {
		{ KK_RAW_INT, 4, "int32_t" }, { KK_RAW_INT, 8, "int64_t" },
		{ KK_RAW_UINT, 4, "uint32_t" }, { KK_RAW_UINT, 8, "uint64_t" },
		{ KK_RAW_CHAR, 4, "int32_t" }, { KK_RAW_PTR, 4, "xint32_t" },
		{ KK_RAW_PTR, 8, "xint64_t" }, { KK_RAW_FLOAT, 8, "double_t" },
		{ KK_RAW_STRING, 0, "" },
	};

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].kind == kind && types[i].size == size)
			return types[i].type;
	return NULL;
}

/*
 * The fields of a CLASS frame's @nf fields at @p (@end: the frame's end) as
 * TSDL into @f.  A string is its u16 length, then a sequence of UTF-8 bytes.
 * False: a field runs past the frame, or has a type that is not one.
 */
static bool class_fields(FILE *f, const unsigned char *p, const unsigned char *end, unsigned nf,
			 const unsigned char **at)
{
	char *names[256] = { 0 }, buf[128];
	bool ok = nf <= 256;

	for (unsigned i = 0; ok && i < nf; i++) {
		struct kk_raw_field fl;
		const char *type;

		ok = end - p >= (long)sizeof(fl);
		if (!ok)
			break;
		memcpy(&fl, p, sizeof(fl));
		p += sizeof(fl);
		type = field_type(fl.kind, fl.size);
		ok = type && end - p >= (long)fl.name_len &&
		     (names[i] = kkr_ctf_field_name(frame_str(p, fl.name_len, buf, sizeof(buf)),
						    i, names));
		if (!ok)
			break;
		p += fl.name_len;
		if (fl.kind == KK_RAW_STRING)
			fprintf(f, "\t\tuint16_t %s_len;\n\t\tutf8_t %s[%s_len];\n", names[i],
				names[i], names[i]);
		else
			fprintf(f, "\t\t%s %s;\n", type, names[i]);
	}
	for (unsigned i = 0; i < nf && i < 256; i++)
		free(names[i]);
	*at = p;
	return ok;
}

/*
 * The TSDL event class of CLASS frame @fr (@len bytes), id @gid; *@klen
 * the length of its key (its bytes after the id).  NULL: a bad frame, or
 * no memory (*@nomem).
 */
static char *class_tsdl(const unsigned char *fr, size_t len, uint32_t gid, size_t *klen,
			bool *nomem)
{
	struct kk_raw_class h;
	const unsigned char *p = fr + sizeof(h), *end = fr + len, *s[4];
	char mod[256], fn[256], *text = NULL;
	size_t tlen = 0;
	FILE *f;
	bool ok;

	*nomem = false;
	if (len < sizeof(h))
		return NULL;
	memcpy(&h, fr, sizeof(h));
	for (int i = 0; i < 4; i++) {
		if ((size_t)(end - p) < h.slen[i])
			return NULL;
		s[i] = p;
		p += h.slen[i];
	}
	if (!(f = open_memstream(&text, &tlen))) {
		*nomem = true;
		return NULL;
	}
	fputs("event {\n\tname = \"", f);
	kkr_ctf_tsdl_str(f, frame_str(s[0], h.slen[0], mod, sizeof(mod)));
	fputc(':', f);
	kkr_ctf_tsdl_str(f, frame_str(s[1], h.slen[1], fn, sizeof(fn)));
	fprintf(f, ":%u\";\n\tid = %" PRIu32 ";\n\tstream_id = 1;\n\tfields := struct {\n",
		h.line, gid);
	ok = class_fields(f, p, end, h.nfields, &p);
	fputs("\t};\n};\n\n", f);
	*nomem = fclose(f) != 0;
	if (!ok || *nomem) {
		free(text);
		return NULL;
	}
	*klen = (size_t)(p - fr) - offsetof(struct kk_raw_class, line);
	return text;
}

static bool cls_grow(void)
{
	size_t cap = cls.scap ? 2 * cls.scap : 64, *slot;

	if (cls.n == cls.cap) {
		size_t nc = cls.cap ? 2 * cls.cap : 32;
		unsigned char **k = realloc(cls.key, nc * sizeof(*k));
		size_t *kl = k ? realloc(cls.klen, nc * sizeof(*kl)) : NULL;
		uint32_t *g = kl ? realloc(cls.gid, nc * sizeof(*g)) : NULL;

		if (k)
			cls.key = k;
		if (kl)
			cls.klen = kl;
		if (!g)
			return false;
		cls.gid = g;
		cls.cap = nc;
	}
	if (2 * (cls.n + 1) <= cls.scap)
		return true;
	if (!(slot = calloc(cap, sizeof(*slot))))
		return false;
	free(cls.slot);
	cls.slot = slot;
	cls.scap = cap;
	for (size_t i = 0; i < cls.n; i++) {
		size_t j = key_hash(cls.key[i], cls.klen[i]);

		while (slot[j & (cap - 1)])
			j++;
		slot[j & (cap - 1)] = i + 1;
	}
	return true;
}

/* The trace's id of CLASS frame @fr (@len bytes), made if new; NO_CLASS: a bad frame or no memory. */
static uint32_t class_id(struct ctf *c, const unsigned char *fr, size_t len)
{
	const unsigned char *key = fr + offsetof(struct kk_raw_class, line);
	size_t klen, j;
	bool nomem;
	char *tsdl = class_tsdl(fr, len, (uint32_t)cls.n + 1, &klen, &nomem);
	long idx;

	if (!tsdl) {
		if (nomem)
			kkr_ctf_fail(c, NULL, ENOMEM);
		return NO_CLASS;
	}
	for (j = key_hash(key, klen); cls.scap && cls.slot[j & (cls.scap - 1)]; j++) {
		size_t i = cls.slot[j & (cls.scap - 1)] - 1;

		if (cls.klen[i] == klen && !memcmp(cls.key[i], key, klen)) {
			free(tsdl);
			return cls.gid[i];
		}
	}
	if (!cls_grow() || !(cls.key[cls.n] = malloc(klen))) {
		free(tsdl);
		kkr_ctf_fail(c, NULL, ENOMEM);
		return NO_CLASS;
	}
	if ((idx = kkr_ctf_add_raw_event(c, tsdl)) < 0) {
		free(cls.key[cls.n]);
		return NO_CLASS;
	}
	memcpy(cls.key[cls.n], key, klen);
	cls.klen[cls.n] = klen;
	cls.gid[cls.n] = (uint32_t)idx;	/* (== cls.n + 1: 0 is kernelkit:records_lost) */
	for (j = key_hash(key, klen); cls.slot[j & (cls.scap - 1)]; j++)
		;
	cls.slot[j & (cls.scap - 1)] = ++cls.n;
	return (uint32_t)idx;
}

/* Class 0 of stream 1, made before any other (under the ctf lock). */
static int lost_class(struct ctf *c)
{
	char *t;

	if (cls.lost_made)
		return 0;
	t = strdup("event {\n\tname = \"kernelkit:records_lost\";\n\tid = 0;\n\tstream_id = 1;\n"
		   "\tfields := struct {\n\t\tuint64_t _count;\n\t};\n};\n\n");
	if (!t)
		return kkr_ctf_fail(c, NULL, ENOMEM);
	if (kkr_ctf_add_raw_event(c, t) != 0)
		return -1;
	cls.lost_made = true;
	return 0;
}

/* ---- streams -------------------------------------------------------------- */

struct kkr_raw *kkr_raw_new(struct ctf *c, struct kkr_pinfo *p)
{
	struct kkr_raw *r = calloc(1, sizeof(*r));
	int ret;

	if (!r)
		return NULL;
	r->c = c;
	r->p = p;
	kkr_ctf_lock(c);
	ret = lost_class(c);
	kkr_ctf_unlock(c);
	if (ret) {
		free(r);
		return NULL;
	}
	return r;
}

void kkr_raw_free(struct kkr_raw *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ns; i++) {
		if (r->s[i]->fd >= 0 && close(r->s[i]->fd)) {
			kkr_ctf_lock(r->c);
			kkr_ctf_fail(r->c, r->s[i]->file, errno);
			kkr_ctf_unlock(r->c);
		}
		free(r->s[i]);
	}
	free(r->s);
	free(r->map);
	free(r);
}

/* Thread @tid's stream, opened at its first packet ("pid42-tid43", ".1" if taken).  NULL: said. */
static struct rstream *stream_of(struct kkr_raw *r, int tid)
{
	struct rstream *s, **v;
	int dirfd;

	for (size_t i = 0; i < r->ns; i++)
		if (r->s[i]->tid == tid)
			return r->s[i];
	if (r->ns == RAW_STREAMS) {
		if (!r->said_many)
			fprintf(stderr, "%s: process %d: more than %d threads: the records of the "
				"others are not written\n", kkctl_prog, r->p->proc.pid, RAW_STREAMS);
		r->said_many = true;
		return NULL;
	}
	if (!(s = calloc(1, sizeof(*s))) || !(v = realloc(r->s, (r->ns + 1) * sizeof(*v)))) {
		free(s);
		kkr_ctf_lock(r->c);
		kkr_ctf_fail(r->c, NULL, ENOMEM);
		kkr_ctf_unlock(r->c);
		return NULL;
	}
	r->s = v;
	s->tid = tid;
	kkr_ctf_lock(r->c);
	dirfd = kkr_ctf_dirfd(r->c);
	s->instance = kkr_ctf_instance(r->c, s->uuid);
	s->fd = -1;
	for (unsigned i = 0; dirfd >= 0 && i < 1000 && s->fd < 0; i++) {
		int n = snprintf(s->file, sizeof(s->file), "pid%d-tid%d", r->p->proc.pid, tid);

		if (i)
			snprintf(s->file + n, sizeof(s->file) - (size_t)n, ".%u", i);
		s->fd = openat(dirfd, s->file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (s->fd < 0 && errno != EEXIST)
			break;
	}
	if (s->fd < 0 && dirfd >= 0)
		kkr_ctf_fail(r->c, s->file, errno);
	kkr_ctf_unlock(r->c);
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	r->s[r->ns++] = s;
	return s;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);	/* (the host's order: the metadata says le; kkctl is local) */
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* The packet header and context of @s for @n bytes of events after them, the last
 * one's values ending at @content (the padding after it is not an event). */
static void pkt_head(unsigned char *h, const struct rstream *s, uint64_t begin, uint64_t end,
		     size_t n, size_t content, const char comm[16])
{
	uint64_t bits = (uint64_t)(RAW_HEADER + n) * 8;

	put32(h, CTF_MAGIC);
	memcpy(h + 4, s->uuid, 16);
	put32(h + 20, 1);		/* stream_id */
	put64(h + 24, s->instance);
	put64(h + 32, begin);
	put64(h + 40, end);
	put64(h + 48, (uint64_t)(RAW_HEADER + content) * 8);
	put64(h + 56, bits);
	put64(h + 64, s->seq);
	put64(h + 72, s->discarded);
	memcpy(h + 80, comm, 16);
}

/* @iov (@n pieces) to @s's file, whole or not at all (cut back).  0, or -1 said. */
static int pkt_write(struct kkr_raw *r, struct rstream *s, struct iovec *iov, int n)
{
	off_t at = lseek(s->fd, 0, SEEK_CUR);
	int err = 0;

	kkr_ctf_lock(r->c);
	if (kkr_ctf_sync(r->c))	/* (the metadata first: it has every class of the packet) */
		err = -1;
	kkr_ctf_unlock(r->c);
	while (!err && n) {
		ssize_t w = writev(s->fd, iov, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			err = w < 0 ? errno : ENOSPC;
			break;
		}
		for (; n && (size_t)w >= iov->iov_len; iov++, n--)
			w -= (ssize_t)iov->iov_len;
		if (n) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	if (err > 0) {
		if (at >= 0)
			(void)!ftruncate(s->fd, at);
		kkr_ctf_lock(r->c);
		kkr_ctf_fail(r->c, s->file, err);
		kkr_ctf_unlock(r->c);
	}
	if (err)
		return -1;
	s->seq++;
	return 0;
}

/* ---- frames --------------------------------------------------------------- */

static void said_bad(struct kkr_raw *r, bool *bad, const char *why)
{
	if (!r->said_bad)
		fprintf(stderr, "%s: process %d: a malformed trace_pipe_raw frame (%s): skipped\n",
			kkctl_prog, r->p->proc.pid, why);
	r->said_bad = true;
	*bad = true;
}

/* The records of a RING frame (@p, @n bytes) checked: how many, or -1 (a length or a class). */
static long ring_check(const struct kkr_raw *r, const unsigned char *p, size_t n)
{
	long k = 0;

	for (size_t at = 0; at < n; k++) {
		struct kk_raw_rec h;

		if (n - at < sizeof(h))
			return -1;
		memcpy(&h, p + at, sizeof(h));
		if (h.len < sizeof(h) || ROUND8((size_t)h.len) > n - at || h.cls >= r->nmap ||
		    r->map[h.cls] == NO_CLASS)
			return -1;
		at += ROUND8((size_t)h.len);
	}
	return k;
}

/* The first @k records at @p (checked): their class and time set in place; their bytes
 * (*@content: to the end of the last one's values). */
static size_t ring_records(const struct kkr_raw *r, struct rstream *s, unsigned char *p, long k,
			   uint64_t *first, size_t *content)
{
	size_t at = 0;

	*content = 0;
	for (long i = 0; i < k; i++) {
		struct kk_raw_rec h;
		uint64_t v;

		memcpy(&h, p + at, sizeof(h));
		v = h.ts + r->off;
		if (v < s->last)	/* a stream's times never go back (CTF) */
			v = s->last;
		s->last = v;
		if (!i)
			*first = v;
		put32(p + at + offsetof(struct kk_raw_rec, cls), r->map[h.cls]);
		put64(p + at + offsetof(struct kk_raw_rec, ts), v);
		*content = at + h.len;
		at += ROUND8((size_t)h.len);
	}
	return at;
}

/* The records --count still lets in, at most @n (taken now). */
static uint64_t count_take(struct kkr_raw *r, uint64_t n, uint64_t lost)
{
	uint64_t max = kkr.opts ? kkr.opts->count : 0;

	pthread_mutex_lock(&kkr.lock);
	if (max)
		n = kkr.events >= max ? 0 : (max - kkr.events < n ? max - kkr.events : n);
	kkr.events += n;
	kkr.lost += lost;
	r->p->events += n;
	r->p->lost += lost;
	pthread_mutex_unlock(&kkr.lock);
	return n;
}

/* A kernelkit:records_lost event of @count at @v, for thread @tid. */
static void lost_event(unsigned char *e, uint64_t v, int tid, int pid, uint64_t count)
{
	put32(e, RAW_LOST_EV);
	put32(e + 4, 0);
	put64(e + 8, v);
	put32(e + 16, (uint32_t)tid);
	put32(e + 20, (uint32_t)pid);
	put64(e + 24, count);
}

/* A RING frame @f (@len bytes, checked to be in the reply) as a packet of its thread's stream. */
static int ring_frame(struct kkr_raw *r, unsigned char *f, size_t len, bool *bad,
		      uint64_t *last_clock)
{
	unsigned char head[RAW_HEADER + RAW_LOST_EV];
	struct kk_raw_ring h;
	char comm[sizeof(h.comm) + 1];
	struct rstream *s;
	uint64_t first = 0, last = 0;
	size_t used = 0, content = 0, lo;
	struct iovec iov[2];
	long k;

	if (len < sizeof(h)) {
		said_bad(r, bad, "a ring frame too short");
		return 0;
	}
	memcpy(&h, f, sizeof(h));
	k = ring_check(r, f + sizeof(h), len - sizeof(h));
	if (k < 0 || (uint64_t)k != h.nrec) {
		said_bad(r, bad, "a record's length or class");
		return 0;
	}
	memcpy(comm, h.comm, sizeof(h.comm));
	comm[sizeof(h.comm)] = '\0';
	if (!kkr_thread_wanted(h.tid, comm))	/* --threads leaves it out: not taken, not lost */
		return 0;
	if (!(s = stream_of(r, h.tid)))
		return kkr_ctf_dirfd(r->c) < 0 ? -1 : 0;
	k = (long)count_take(r, (uint64_t)k, h.lost);
	used = ring_records(r, s, f + sizeof(h), k, &first, &content);
	last = s->last;
	if (h.lost && !s->seq) {	/* (babeltrace2 counts no loss in a stream's first packet) */
		pkt_head(head, s, first, first, 0, 0, h.comm);
		iov[0] = (struct iovec){ head, RAW_HEADER };
		if (pkt_write(r, s, iov, 1))
			return -1;
	}
	lo = h.lost ? RAW_LOST_EV : 0;
	if (!k)
		first = last = s->last;
	s->discarded += h.lost;
	if (lo)
		lost_event(head + RAW_HEADER, first, h.tid, r->p->proc.vpid, h.lost);
	if (!k && !lo)
		return 0;
	pkt_head(head, s, first, last, lo + used, k ? lo + content : lo, h.comm);
	iov[0] = (struct iovec){ head, RAW_HEADER + lo };
	iov[1] = (struct iovec){ f + sizeof(h), used };
	kkr_reply_time(last_clock, k ? last : 0);
	return pkt_write(r, s, iov, k ? 2 : 1);
}

/* A CLASS frame: the reply's id @id mapped to the trace's. */
static int class_frame(struct kkr_raw *r, const unsigned char *f, size_t len, bool *bad)
{
	struct kk_raw_class h;
	uint32_t gid;

	if (len < sizeof(h)) {
		said_bad(r, bad, "a class frame too short");
		return 0;
	}
	memcpy(&h, f, sizeof(h));
	if (h.id > (1u << 20)) {	/* (ids are 0, 1, ...: one a frame) */
		said_bad(r, bad, "a class id out of range");
		return 0;
	}
	if (h.id >= r->nmap) {
		size_t n = h.id + 64;
		uint32_t *m = realloc(r->map, n * sizeof(*m));

		if (!m)
			return -1;
		for (size_t i = r->nmap; i < n; i++)
			m[i] = NO_CLASS;
		r->map = m;
		r->nmap = n;
	}
	kkr_ctf_lock(r->c);
	gid = class_id(r->c, f, len);
	kkr_ctf_unlock(r->c);
	if (gid == NO_CLASS) {
		if (kkr_ctf_dirfd(r->c) < 0)
			return -1;
		said_bad(r, bad, "a class");
	}
	r->map[h.id] = gid;
	return 0;
}

/* The HEAD frame: this reply's clock.  False: not one. */
static bool head_frame(struct kkr_raw *r, const unsigned char *f, size_t len)
{
	struct kk_raw_head h;
	struct timespec now;
	uint64_t utc;

	if (!kk_raw_head_get(f, len, &h))
		return false;
	clock_gettime(CLOCK_REALTIME, &now);
	utc = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
	/* (one offset for the session, as the trace has one clock offset: a
	 * reply's is read from two clocks, tens of ns apart, and a stream's
	 * packets would overlap) */
	if (!r->off_set)
		r->real_off = h.real_off;
	r->off_set = true;
	kkr_ctf_lock(r->c);
	r->off = (uint64_t)r->real_off + (uint64_t)kkr_ctf_raw_clock(r->c, utc);
	kkr_ctf_unlock(r->c);
	return true;
}

int kkr_raw_take(struct kkr_raw *r, unsigned char *body, size_t len, bool *bad, uint64_t *utc)
{
	uint64_t last = 0;
	size_t at = 0;

	*bad = false;
	*utc = 0;
	for (size_t i = 0; i < r->nmap; i++)
		r->map[i] = NO_CLASS;
	if (!head_frame(r, body, len)) {
		said_bad(r, bad, "no head");
		return 0;
	}
	while (len - at >= sizeof(struct kk_raw_frame)) {
		struct kk_raw_frame f;
		int ret = 0;

		memcpy(&f, body + at, sizeof(f));
		if (f.len < sizeof(f) || f.len % 8 || f.len > len - at) {
			said_bad(r, bad, "a frame's length");
			break;
		}
		if (f.type == KK_RAW_CLASS)
			ret = class_frame(r, body + at, f.len, bad);
		else if (f.type == KK_RAW_RING)
			ret = ring_frame(r, body + at, f.len, bad, &last);
		if (ret)
			return -1;
		at += f.len;
	}
	*utc = last ? last - r->off : 0;	/* (the clock's value back to UTC) */
	return 0;
}
