// SPDX-License-Identifier: MIT
/*
 * kkctl record --format ctf: a CTF 1.8 trace directory, which babeltrace2
 * and Trace Compass read (docs/tracing.md, "Formats").
 *
 *   DIR/metadata       the TSDL text: trace, env, the clock, the stream
 *                      class, and one event class per site (and signature)
 *   DIR/pid42          one binary stream per process (DIR/b-pid42 for host
 *                      "b"; DIR/pid42.1 for a later process with that pid)
 *
 * Event classes are known only as records come, so the metadata is written
 * again (a new file renamed over the old: always whole) before a packet that
 * uses a class it does not have yet goes to disk, and at close: the
 * directory is a readable trace at every moment, up to its last whole packet.
 * Memory is bounded: a process's stream holds one packet of at most
 * CTF_PACKET bytes (or one record, if larger), written when full, at its
 * exit and at close; a write that fails is cut back off the file.
 *
 * Layout: little endian, every field byte-aligned (as LTTng lays out its
 * user-space traces).  Packet header: magic 0xC1FC1FC1, the trace's uuid,
 * stream_id 0, stream_instance_id.  Packet context: timestamp_begin,
 * timestamp_end, content_size, packet_size (bits, equal: no padding),
 * packet_seq_num, events_discarded (the stream's records lost so far).  Event
 * header: id, timestamp (64 bits of the clock).  Event context: vpid, vtid,
 * procname (the thread's name), hostname.  Field names carry CTF's leading
 * underscore, which readers take off ("_len" reads as "len").
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record_int.h"
#include "record_raw.h"

#define CTF_PACKET (32 << 10)	/* a packet's bytes, header included */
#define CTF_HEADER 80		/* packet header (32) and context (48) */
#define CTF_MAGIC 0xC1FC1FC1u

enum { CTF_ID_LOST, CTF_ID_EXIT, CTF_ID_SITES };	/* the fixed event classes first */

/* An event class: a site, with the names and types of its record's args. */
struct ctf_class {
	char *key;		/* module, function, line and args: what tells it apart */
	size_t klen;
	char *name;		/* "module:function:line" */
	size_t nfields;
	char **fields;		/* TSDL names, "_" + the arg's unique name */
	enum kkr_type *types;
};

/* A process's stream, while it lives. */
struct ctf_stream {
	char *host;
	int pid, vpid;
	int fd;
	char *file;		/* its name in the directory */
	uint64_t instance, seq;
	uint64_t begin, last;	/* the packet's first and the stream's last clock value */
	uint64_t discarded;	/* records lost so far */
	unsigned char *pkt;	/* the packet being filled */
	size_t len, cap;
};

struct ctf {
	pthread_mutex_t lock;	/* the writer's calls, and the raw readers' (record_raw.c) */
	char *path;
	int dirfd;
	bool failed;		/* said why once; every later call fails quietly */
	bool meta_dirty;	/* a class the metadata on disk lacks */
	unsigned char uuid[16];
	char hostname[256];
	bool have_base;
	uint64_t base;		/* the clock's offset: UTC ns of its 0 */
	uint64_t instances;
	struct ctf_class *classes;	/* by id - CTF_ID_SITES */
	size_t nclasses, ccap;
	size_t *hash;		/* open addressing: 1 + index into classes, 0 empty */
	size_t hcap;
	struct ctf_stream **streams;
	size_t nstreams;
	unsigned char *ev;	/* scratch: one event, encoded */
	size_t evlen, evcap;
	char *scratch;		/* scratch: a class's key */
	size_t slen, scap;
	char **raw_ev;		/* the raw streams' event classes, TSDL (record_raw.c) */
	size_t nraw, rawcap;
};

static int ctf_fail(struct ctf *c, const char *file, int err)
{
	if (!c->failed)
		fprintf(stderr, "kkctl: %s%s%s: %s\n", c->path, file ? "/" : "", file ? file : "",
			strerror(err));
	c->failed = true;
	return -1;
}

/* ---- growing buffers ------------------------------------------------------ */

static int grow(struct ctf *c, void *pp, size_t *cap, size_t need, size_t size)
{
	void **p = pp;
	size_t n = *cap ? *cap : 64;
	void *q;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	q = realloc(*p, n * size);
	if (!q)
		return ctf_fail(c, NULL, ENOMEM);
	*p = q;
	*cap = n;
	return 0;
}

static void ev_put(struct ctf *c, const void *s, size_t n)
{
	if (!c->failed && !grow(c, &c->ev, &c->evcap, c->evlen + n, 1)) {
		memcpy(c->ev + c->evlen, s, n);
		c->evlen += n;
	}
}

static void ev_u64(struct ctf *c, uint64_t v)
{
	unsigned char b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> 8 * i);
	ev_put(c, b, 8);
}

static void ev_u32(struct ctf *c, uint32_t v)
{
	unsigned char b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> 8 * i);
	ev_put(c, b, 4);
}

/* A string field: NUL-terminated UTF-8 (a byte that is not becomes U+FFFD). */
static void ev_str(struct ctf *c, const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");
	const unsigned char *end = s + strlen((const char *)s);

	while (*s) {
		const unsigned char *run = s;
		size_t n;

		/* a run of valid text, put at once */
		while (*s && (n = kkr_utf8_len(s, (size_t)(end - s))))
			s += n;
		ev_put(c, run, (size_t)(s - run));
		if (*s) {
			ev_put(c, "\xef\xbf\xbd", 3);
			s++;
		}
	}
	ev_put(c, "", 1);
}

/* ---- files ---------------------------------------------------------------- */

static int write_all(int fd, const void *buf, size_t n)
{
	const char *s = buf;

	while (n) {
		ssize_t r = write(fd, s, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? errno : ENOSPC;
		s += r;
		n -= (size_t)r;
	}
	return 0;
}

/* A TSDL string literal's text: printable ASCII, '"' and '\' escaped. */
void kkr_ctf_tsdl_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			fprintf(f, "\\%c", ch);
		else
			putc(ch >= 0x20 && ch < 0x7f ? ch : '_', f);
	}
}

static const char *const tsdl_type[] = {
	[KKR_INT] = "int64_t", [KKR_UINT] = "uint64_t", [KKR_FLOAT] = "double_t",
	[KKR_STRING] = "string", [KKR_POINTER] = "xint64_t", [KKR_CHAR] = "int64_t",
};

static void meta_event(FILE *f, unsigned long id, const char *name, size_t n,
		       char *const *fields, const enum kkr_type *types)
{
	fprintf(f, "event {\n\tname = \"");
	kkr_ctf_tsdl_str(f, name);
	fprintf(f, "\";\n\tid = %lu;\n\tstream_id = 0;\n\tfields := struct {\n", id);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "\t\t%s %s;\n", tsdl_type[types[i]], fields[i]);
	fprintf(f, "\t};\n};\n\n");
}

static const char meta_types[] =
	"/* CTF 1.8 */\n"
	"/* kkctl record --format ctf (kernelkit): docs/tracing.md */\n\n"
	"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
	"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
	"typealias integer { size = 64; align = 8; signed = true; } := int64_t;\n"
	"typealias integer { size = 64; align = 8; signed = false; base = 16; } := xint64_t;\n"
	"typealias floating_point { exp_dig = 11; mant_dig = 53; align = 8; } := double_t;\n"
	"typealias integer { size = 32; align = 8; signed = false; base = 16; } := xint32_t;\n"
	"typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n"
	"typealias integer { size = 8; align = 8; signed = false; encoding = UTF8; } := utf8_t;\n\n";

/*
 * The raw streams (record_raw.c): one a thread, each packet a RING frame of
 * trace_pipe_raw with its records as the process packed them.  The event
 * header is the record's (its length, the class, the time), aligned to 8
 * bytes by its first field (babeltrace2 ignores a struct's align()): the
 * padding after a record's values is skipped.  The thread's name is the
 * packet's.
 */
static const char meta_stream_raw[] =
	"stream {\n\tid = 1;\n"
	"\tevent.header := struct {\n"
	"\t\tinteger { size = 32; align = 64; signed = false; } _len;\n"
	"\t\tuint32_t id;\n\t\tclock_t timestamp;\n\t};\n"
	"\tpacket.context := struct {\n\t\tclock_t timestamp_begin;\n\t\tclock_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n\t\tutf8_t _procname[16];\n\t};\n"
	"\tevent.context := struct {\n\t\tint32_t _vtid;\n\t\tint32_t _vpid;\n\t};\n};\n\n";

static const char meta_stream[] =
	"typealias integer { size = 64; align = 8; signed = false; map = clock.realtime.value; }"
	" := clock_t;\n\n"
	"stream {\n\tid = 0;\n"
	"\tevent.header := struct {\n\t\tuint32_t id;\n\t\tclock_t timestamp;\n\t};\n"
	"\tpacket.context := struct {\n\t\tclock_t timestamp_begin;\n\t\tclock_t timestamp_end;\n"
	"\t\tuint64_t content_size;\n\t\tuint64_t packet_size;\n\t\tuint64_t packet_seq_num;\n"
	"\t\tuint64_t events_discarded;\n\t};\n"
	"\tevent.context := struct {\n\t\tint32_t _vpid;\n\t\tint32_t _vtid;\n"
	"\t\tstring _procname;\n\t\tstring _hostname;\n\t};\n};\n\n";

static void meta_text(struct ctf *c, FILE *f)
{
	static char *const lost[] = { "_count" }, *const exited[] = { "_pid" };
	static const enum kkr_type lost_t[] = { KKR_UINT }, exited_t[] = { KKR_INT };
	const unsigned char *u = c->uuid;
	char uuid[40];

	snprintf(uuid, sizeof(uuid),
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
		 u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
		 u[14], u[15]);
	fputs(meta_types, f);
	fprintf(f, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n"
		"\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t uuid[16];\n"
		"\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n", uuid);
	fprintf(f, "env {\n\thostname = \"");
	kkr_ctf_tsdl_str(f, c->hostname);
	fprintf(f, "\";\n\tdomain = \"kernelkit\";\n\ttracer_name = \"kkctl record\";\n};\n\n");
	fprintf(f, "clock {\n\tname = \"realtime\";\n"
		"\tdescription = \"CLOCK_REALTIME: UTC nanoseconds since the epoch\";\n"
		"\tfreq = 1000000000;\n\tprecision = 1;\n\toffset_s = %" PRIu64 ";\n"
		"\toffset = %" PRIu64 ";\n\tabsolute = true;\n};\n\n",
		c->base / 1000000000, c->base % 1000000000);
	fputs(meta_stream, f);
	meta_event(f, CTF_ID_LOST, "kernelkit:records_lost", 1, lost, lost_t);
	meta_event(f, CTF_ID_EXIT, "kernelkit:process_exit", 1, exited, exited_t);
	for (size_t i = 0; i < c->nclasses; i++)
		meta_event(f, CTF_ID_SITES + i, c->classes[i].name, c->classes[i].nfields,
			   c->classes[i].fields, c->classes[i].types);
	if (c->nraw)
		fputs(meta_stream_raw, f);
	for (size_t i = 0; i < c->nraw; i++)
		fputs(c->raw_ev[i], f);
}

/* The metadata, whole: a new file renamed over the old one. */
static int meta_write(struct ctf *c)
{
	int fd = openat(c->dirfd, ".metadata.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	int err;

	if (!f) {
		err = errno;
		if (fd >= 0)
			close(fd);
		return ctf_fail(c, "metadata", err);
	}
	meta_text(c, f);
	err = ferror(f) | fflush(f) ? (errno ? errno : EIO) : 0;
	if (fclose(f) && !err)
		err = errno;
	if (!err && renameat(c->dirfd, ".metadata.new", c->dirfd, "metadata"))
		err = errno;
	if (err) {
		unlinkat(c->dirfd, ".metadata.new", 0);
		return ctf_fail(c, "metadata", err ? err : EIO);
	}
	c->meta_dirty = false;
	return 0;
}

/* ---- streams and packets -------------------------------------------------- */

static void put_u64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> 8 * i);
}

/* Write the stream's packet, whole, or nothing of it. */
static int pkt_write(struct ctf *c, struct ctf_stream *s)
{
	unsigned char *p = s->pkt;
	off_t end;
	int err;

	if (c->failed)
		return -1;
	if (c->meta_dirty && meta_write(c))
		return -1;
	put_u64(p, CTF_MAGIC);	/* and 4 bytes of uuid, set next */
	memcpy(p + 4, c->uuid, 16);
	put_u64(p + 20, 0);	/* stream_id, and 4 bytes of the instance */
	put_u64(p + 24, s->instance);
	put_u64(p + 32, s->begin);
	put_u64(p + 40, s->last);
	put_u64(p + 48, (uint64_t)s->len * 8);
	put_u64(p + 56, (uint64_t)s->len * 8);
	put_u64(p + 64, s->seq);
	put_u64(p + 72, s->discarded);
	end = lseek(s->fd, 0, SEEK_CUR);
	err = write_all(s->fd, p, s->len);
	if (err) {
		if (end >= 0)
			(void)!ftruncate(s->fd, end);
		return ctf_fail(c, s->file, err);
	}
	s->seq++;
	s->len = CTF_HEADER;
	return 0;
}

/* Write the stream's packet if it has events. */
static int pkt_flush(struct ctf *c, struct ctf_stream *s)
{
	return s->len > CTF_HEADER ? pkt_write(c, s) : c->failed ? -1 : 0;
}

static bool is_stream(const struct ctf_stream *s, const struct kkr_proc *p)
{
	return s->pid == p->pid && !strcmp(s->host, p->host ? p->host : "");
}

/* The stream file's name: pid42, b-pid42 for host "b"; pid42.1 if taken. */
static int stream_file(struct ctf *c, struct ctf_stream *s)
{
	size_t n = strlen(s->host) + 48;
	char *name = malloc(n), *q = name;

	if (!name)
		return ctf_fail(c, NULL, ENOMEM);
	for (const char *h = s->host; *h; h++)
		*q++ = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._",
			      *h) ? *h : '_';
	snprintf(q, n - (size_t)(q - name), "%spid%d", *s->host ? "-" : "", s->pid);
	q += strlen(q);
	for (unsigned i = 1; ; i++) {
		s->fd = openat(c->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (s->fd >= 0 || errno != EEXIST || i > 1000)
			break;
		snprintf(q, n - (size_t)(q - name), ".%u", i);
	}
	s->file = name;
	return s->fd < 0 ? ctf_fail(c, name, errno) : 0;
}

static void stream_free(struct ctf_stream *s)
{
	if (s->fd >= 0)
		close(s->fd);
	free(s->host);
	free(s->file);
	free(s->pkt);
	free(s);
}

/* @p's stream, opened at its first record. */
static struct ctf_stream *stream_get(struct ctf *c, const struct kkr_proc *p)
{
	struct ctf_stream *s, **v;

	for (size_t i = 0; i < c->nstreams; i++)
		if (is_stream(c->streams[i], p))
			return c->streams[i];
	if (c->failed)
		return NULL;
	s = calloc(1, sizeof(*s));
	v = realloc(c->streams, (c->nstreams + 1) * sizeof(*v));
	if (v)
		c->streams = v;
	if (!s || !v || !(s->host = strdup(p->host ? p->host : "")) ||
	    !(s->pkt = malloc(CTF_PACKET))) {
		if (s)
			s->fd = -1;
		ctf_fail(c, NULL, ENOMEM);
		goto bad;
	}
	s->pid = p->pid;
	s->vpid = p->vpid;
	s->cap = CTF_PACKET;
	s->len = CTF_HEADER;
	s->instance = c->instances++;
	if (stream_file(c, s))
		goto bad;
	c->streams[c->nstreams++] = s;
	return s;
bad:
	if (s)
		stream_free(s);
	return NULL;
}

/* The clock value of UTC @ts in @s: never before the stream's last one (CTF
 * readers need each stream's times in order), never before the clock's 0. */
static uint64_t stream_time(struct ctf *c, struct ctf_stream *s, uint64_t ts)
{
	uint64_t v;

	if (!c->have_base) {
		/* A minute before the first record, in whole seconds: a record
		 * merged a little late still falls after it. */
		c->base = (ts / 1000000000 > 60 ? ts / 1000000000 - 60 : 0) * 1000000000;
		c->have_base = true;
		c->meta_dirty = true;
	}
	v = ts > c->base ? ts - c->base : 0;
	return v > s->last ? v : s->last;
}

/* Put the encoded event (c->ev) in @s's packet, the packet out first if full. */
static int stream_add(struct ctf *c, struct ctf_stream *s, uint64_t v)
{
	if (c->failed)
		return -1;
	if (s->len + c->evlen > s->cap && pkt_flush(c, s))
		return -1;
	if (CTF_HEADER + c->evlen > s->cap) {
		unsigned char *p = realloc(s->pkt, CTF_HEADER + c->evlen);

		if (!p)
			return ctf_fail(c, NULL, ENOMEM);
		s->pkt = p;
		s->cap = CTF_HEADER + c->evlen;
	}
	if (s->len == CTF_HEADER)
		s->begin = v;
	s->last = v;
	memcpy(s->pkt + s->len, c->ev, c->evlen);
	s->len += c->evlen;
	return 0;
}

/* Start encoding an event: header and context. */
static void ev_begin(struct ctf *c, uint32_t id, uint64_t v, int vpid, int vtid,
		     const char *procname, const char *host)
{
	c->evlen = 0;
	ev_u32(c, id);
	ev_u64(c, v);
	ev_u32(c, (uint32_t)vpid);
	ev_u32(c, (uint32_t)vtid);
	ev_str(c, procname);
	ev_str(c, host && *host ? host : c->hostname);
}

/* ---- event classes -------------------------------------------------------- */

static const char kkr_type_key[] = {
	[KKR_INT] = 'i', [KKR_UINT] = 'u', [KKR_FLOAT] = 'f', [KKR_STRING] = 's',
	[KKR_POINTER] = 'p', [KKR_CHAR] = 'c',
};

static void key_put(struct ctf *c, const char *s, size_t n)
{
	if (!grow(c, &c->scratch, &c->scap, c->slen + n + 1, 1)) {
		memcpy(c->scratch + c->slen, s, n);
		c->slen += n;
		c->scratch[c->slen] = '\0';
	}
}

/* What tells a class apart: its name, and its args' types and names. */
static const char *class_key(struct ctf *c, const struct kkr_event *e)
{
	char line[16];

	c->slen = 0;
	key_put(c, e->module ? e->module : "", strlen(e->module ? e->module : "") + 1);
	key_put(c, e->function ? e->function : "", strlen(e->function ? e->function : "") + 1);
	snprintf(line, sizeof(line), "%u", e->line);
	key_put(c, line, strlen(line) + 1);
	for (size_t i = 0; i < e->nargs; i++) {
		const char *name = e->args[i].name ? e->args[i].name : "";

		key_put(c, &kkr_type_key[e->args[i].type], 1);
		key_put(c, name, strlen(name) + 1);
	}
	return c->failed ? NULL : c->scratch;
}

static size_t key_len(const char *key, size_t nargs)
{
	const char *k = key;

	for (size_t i = 0; i < 3 + nargs; i++)
		k += strlen(k) + 1;
	return (size_t)(k - key);
}

static size_t key_hash(const char *key, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)key[i]) * 0x100000001b3ull;
	return (size_t)h;
}

/*
 * A field's TSDL name: "_" and the arg's name, a character that may not be in
 * an identifier made '_'; a name taken (by an earlier field, or "message",
 * the record's text) gets "_N" added, N the arg's index, until it is not.
 */
char *kkr_ctf_field_name(const char *name, size_t i, char **fields)
{
	size_t n = (name ? strlen(name) : 0) + 24 * (i + 3);
	char *f = malloc(n), *q;
	bool taken;

	if (!f)
		return NULL;
	if (name && *name)
		snprintf(f, n, "_%s", name);
	else
		snprintf(f, n, "_arg%zu", i);
	for (q = f + 1; *q; q++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", *q))
			*q = '_';
	do {
		taken = !strcmp(f, "_message");
		for (size_t k = 0; k < i && !taken; k++)
			taken = !strcmp(fields[k], f);
		if (taken)
			sprintf(f + strlen(f), "_%zu", i);
	} while (taken);
	return f;
}

static int class_init(struct ctf_class *k, const struct kkr_event *e, const char *key,
		      size_t klen)
{
	const char *mod = e->module ? e->module : "", *fn = e->function ? e->function : "";
	size_t n = e->nargs + 1;

	k->key = malloc(klen);
	k->klen = klen;
	k->name = malloc(strlen(mod) + strlen(fn) + 16);
	k->fields = calloc(n, sizeof(*k->fields));
	k->types = calloc(n, sizeof(*k->types));
	if (!k->key || !k->name || !k->fields || !k->types)
		return -1;
	memcpy(k->key, key, klen);
	sprintf(k->name, "%s:%s:%u", mod, fn, e->line);
	for (size_t i = 0; i < e->nargs; i++, k->nfields++) {
		k->types[i] = e->args[i].type;
		k->fields[i] = kkr_ctf_field_name(e->args[i].name, i, k->fields);
		if (!k->fields[i])
			return -1;
	}
	k->types[k->nfields] = KKR_STRING;
	k->fields[k->nfields] = strdup("_message");
	return k->fields[k->nfields++] ? 0 : -1;
}

static void class_free(struct ctf_class *k)
{
	for (size_t i = 0; i < k->nfields; i++)
		free(k->fields[i]);
	free(k->fields);
	free(k->types);
	free(k->name);
	free(k->key);
}

static int hash_insert(struct ctf *c, size_t idx)
{
	size_t h = key_hash(c->classes[idx].key, c->classes[idx].klen);

	for (size_t j = 0; ; j++) {
		size_t *slot = &c->hash[(h + j) & (c->hcap - 1)];

		if (!*slot) {
			*slot = idx + 1;
			return 0;
		}
	}
}

/* Twice as many slots as classes at least; rehashed when it fills. */
static int hash_grow(struct ctf *c)
{
	size_t cap = c->hcap ? 2 * c->hcap : 64;
	size_t *h;

	if (2 * (c->nclasses + 1) <= c->hcap)
		return 0;
	h = calloc(cap, sizeof(*h));
	if (!h)
		return ctf_fail(c, NULL, ENOMEM);
	free(c->hash);
	c->hash = h;
	c->hcap = cap;
	for (size_t i = 0; i < c->nclasses; i++)
		hash_insert(c, i);
	return 0;
}

/* The event class of @e's site and signature: its index, made if new. */
static long class_get(struct ctf *c, const struct kkr_event *e)
{
	const char *key = class_key(c, e);
	size_t klen, h;
	struct ctf_class *k;

	if (!key || hash_grow(c))
		return -1;
	klen = key_len(key, e->nargs);
	h = key_hash(key, klen);
	for (size_t j = 0; ; j++) {
		size_t slot = c->hash[(h + j) & (c->hcap - 1)];

		if (!slot)
			break;
		k = &c->classes[slot - 1];
		if (k->klen == klen && !memcmp(k->key, key, klen))
			return (long)slot - 1;
	}
	if (grow(c, &c->classes, &c->ccap, c->nclasses + 1, sizeof(*c->classes)))
		return -1;
	k = memset(&c->classes[c->nclasses], 0, sizeof(*k));
	if (class_init(k, e, key, klen)) {
		class_free(k);
		return ctf_fail(c, NULL, ENOMEM);
	}
	hash_insert(c, c->nclasses);
	c->meta_dirty = true;
	return (long)c->nclasses++;
}

/* ---- the writer ----------------------------------------------------------- */

/* @path must be new or an empty directory: a trace is not mixed with another. */
static int ctf_dir(const char *path, bool *made)
{
	DIR *d;
	struct dirent *de;
	int err = 0;

	*made = !mkdir(path, 0700);
	if (*made || errno != EEXIST)
		return *made ? 0 : errno;
	d = opendir(path);
	if (!d)
		return errno;
	while (!err && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			err = ENOTEMPTY;
	closedir(d);
	return err;
}

static void ctf_uuid(unsigned char u[16])
{
	if (getrandom(u, 16, 0) != 16) {
		struct timespec t;

		clock_gettime(CLOCK_REALTIME, &t);
		for (int i = 0; i < 16; i++)
			u[i] = (unsigned char)((uint64_t)t.tv_nsec * 2654435761u >> (i % 8 * 4)) ^
			       (unsigned char)(getpid() >> i % 3 * 8) ^ (unsigned char)t.tv_sec;
	}
	u[6] = (u[6] & 0x0f) | 0x40;	/* version 4 */
	u[8] = (u[8] & 0x3f) | 0x80;
}

static void ctf_free(struct ctf *c)
{
	for (size_t i = 0; i < c->nstreams; i++)
		stream_free(c->streams[i]);
	for (size_t i = 0; i < c->nclasses; i++)
		class_free(&c->classes[i]);
	for (size_t i = 0; i < c->nraw; i++)
		free(c->raw_ev[i]);
	free(c->raw_ev);
	pthread_mutex_destroy(&c->lock);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->streams);
	free(c->classes);
	free(c->hash);
	free(c->ev);
	free(c->scratch);
	free(c->path);
	free(c);
}

static int ctf_open(struct kkr_writer *w, const char *path)
{
	struct ctf *c = calloc(1, sizeof(*c));
	bool made = false;
	int err;

	if (!c || !(c->path = strdup(path))) {
		free(c);
		fprintf(stderr, "kkctl: %s: %s\n", path, strerror(ENOMEM));
		return -1;
	}
	c->dirfd = -1;
	pthread_mutex_init(&c->lock, NULL);
	err = strcmp(path, "-") ? ctf_dir(path, &made) : EISDIR;
	if (err == ENOTEMPTY || err == EISDIR) {
		fprintf(stderr, "kkctl: %s: %s\n", path, err == EISDIR ?
			"the ctf format writes a directory, not to stdout" :
			"exists and is not empty (a ctf trace goes in a new directory)");
		ctf_free(c);
		return -1;
	}
	if (!err && (c->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		err = errno;
	if (err) {
		fprintf(stderr, "kkctl: %s: %s\n", path, strerror(err));
		goto bad;
	}
	if (gethostname(c->hostname, sizeof(c->hostname) - 1))
		strcpy(c->hostname, "localhost");
	ctf_uuid(c->uuid);
	if (!meta_write(c)) {
		w->priv = c;
		return 0;
	}
bad:
	if (c->dirfd >= 0)
		unlinkat(c->dirfd, "metadata", 0);
	if (made)
		rmdir(path);
	ctf_free(c);
	return -1;
}

static void ev_arg(struct ctf *c, const struct kkr_arg *a)
{
	uint64_t bits;

	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		ev_u64(c, (uint64_t)a->v.i);
		break;
	case KKR_UINT:
	case KKR_POINTER:
		ev_u64(c, a->v.u);
		break;
	case KKR_FLOAT:
		memcpy(&bits, &a->v.f, 8);
		ev_u64(c, bits);
		break;
	case KKR_STRING:
		ev_str(c, a->v.s);
		break;
	}
}

static int ctf_event_locked(struct kkr_writer *w, const struct kkr_event *e)
{
	struct ctf *c = w->priv;
	struct ctf_stream *s = stream_get(c, e->proc);
	long id = s ? class_get(c, e) : -1;
	uint64_t v;

	if (id < 0)
		return -1;
	v = stream_time(c, s, e->ts);
	ev_begin(c, (uint32_t)(CTF_ID_SITES + id), v, s->vpid, e->tid, e->comm, s->host);
	for (size_t i = 0; i < e->nargs; i++)
		ev_arg(c, &e->args[i]);
	ev_str(c, e->message);
	return stream_add(c, s, v);
}

/*
 * Lost records: the stream's packet so far goes out, and the next one counts
 * them in events_discarded (readers report the difference between two
 * packets), with a kernelkit:records_lost event that says the thread.  A
 * stream whose first news is a loss starts with an empty packet that counts
 * none: babeltrace2 gives no count for a loss in a stream's first packet
 * ("may have discarded events").
 */
static int ctf_lost_locked(struct kkr_writer *w, const struct kkr_proc *p, int tid,
			   uint64_t count, uint64_t ts)
{
	struct ctf *c = w->priv;
	struct ctf_stream *s = stream_get(c, p);
	uint64_t v;

	if (!s || pkt_flush(c, s))
		return -1;
	v = stream_time(c, s, ts);
	if (!s->seq) {
		s->begin = s->last = v;
		if (pkt_write(c, s))
			return -1;
	}
	s->discarded += count;
	ev_begin(c, CTF_ID_LOST, v, s->vpid, tid, "", s->host);
	ev_u64(c, count);
	return stream_add(c, s, v);
}

/* An exit: a kernelkit:process_exit event ends the stream, which is closed;
 * a later process with the same pid gets a stream of its own. */
static int ctf_exited_locked(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct ctf *c = w->priv;
	struct ctf_stream *s = stream_get(c, p);
	uint64_t v;
	int ret;

	if (!s)
		return -1;
	v = stream_time(c, s, ts);
	ev_begin(c, CTF_ID_EXIT, v, s->vpid, s->vpid, p->name, s->host);
	ev_u64(c, (uint64_t)(int64_t)p->pid);
	ret = stream_add(c, s, v) ? -1 : pkt_flush(c, s);
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i] == s)
			c->streams[i] = c->streams[--c->nstreams];
	stream_free(s);
	return ret;
}

/* The writer's calls, under the lock that the raw readers take too (record_raw.c). */
static int ctf_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct ctf *c = w->priv;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = ctf_event_locked(w, e);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int ctf_lost(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		    uint64_t ts)
{
	struct ctf *c = w->priv;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = ctf_lost_locked(w, p, tid, count, ts);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

static int ctf_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct ctf *c = w->priv;
	int ret;

	pthread_mutex_lock(&c->lock);
	ret = ctf_exited_locked(w, p, ts);
	pthread_mutex_unlock(&c->lock);
	return ret;
}

/* ---- what the raw readers share (record_raw.h) ------------------------------ */

struct ctf *kkr_ctf_of(struct kkr_writer *w)
{
	return w && w->ops == &kkr_ctf_ops ? w->priv : NULL;
}

void kkr_ctf_lock(struct ctf *c)
{
	pthread_mutex_lock(&c->lock);
}

void kkr_ctf_unlock(struct ctf *c)
{
	pthread_mutex_unlock(&c->lock);
}

int kkr_ctf_fail(struct ctf *c, const char *file, int err)
{
	return ctf_fail(c, file, err);
}

int kkr_ctf_dirfd(const struct ctf *c)
{
	return c->failed ? -1 : c->dirfd;
}

long kkr_ctf_add_raw_event(struct ctf *c, char *tsdl)
{
	if (c->failed || grow(c, &c->raw_ev, &c->rawcap, c->nraw + 1, sizeof(*c->raw_ev))) {
		free(tsdl);
		return -1;
	}
	c->raw_ev[c->nraw] = tsdl;
	c->meta_dirty = true;
	return (long)c->nraw++;
}

int64_t kkr_ctf_raw_clock(struct ctf *c, uint64_t utc_ns)
{
	struct ctf_stream s = { .last = 0 };

	(void)stream_time(c, &s, utc_ns);	/* (sets the clock's 0 at the first) */
	return -(int64_t)c->base;
}

int kkr_ctf_sync(struct ctf *c)
{
	if (c->failed)
		return -1;
	return c->meta_dirty ? meta_write(c) : 0;
}

uint64_t kkr_ctf_instance(struct ctf *c, unsigned char uuid[16])
{
	memcpy(uuid, c->uuid, 16);
	return c->instances++;
}

static int ctf_close(struct kkr_writer *w)
{
	struct ctf *c = w->priv;
	int ret = 0;

	for (size_t i = 0; i < c->nstreams && !ret; i++)
		ret = pkt_flush(c, c->streams[i]);
	if (!ret && c->meta_dirty)
		ret = meta_write(c);
	for (size_t i = 0; i < c->nstreams && !ret; i++)
		if (close(c->streams[i]->fd))
			ret = ctf_fail(c, c->streams[i]->file, errno);
		else
			c->streams[i]->fd = -1;
	ret = c->failed ? -1 : ret;
	ctf_free(c);
	w->priv = NULL;
	return ret;
}

const struct kkr_writer_ops kkr_ctf_ops = {
	.name = "ctf",
	.dir = true,
	.open = ctf_open,
	.event = ctf_event,
	.lost = ctf_lost,
	.exited = ctf_exited,
	.close = ctf_close,
};
