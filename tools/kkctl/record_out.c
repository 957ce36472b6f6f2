// SPDX-License-Identifier: MIT
/*
 * kkctl record: the output file of a line writer (jsonl, text).
 *
 * Records are formatted into memory and written in whole lines, at most
 * 64 KiB at a time (and whenever record.c has handed over what it can
 * order): a record that does not fit on the disk is cut back, so that the
 * file stays readable up to its last whole record.  The file is made 0600:
 * a process's records are as private as its memory (what only who may
 * ptrace it may read).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kkctl.h"
#include "record_int.h"

enum { OUT_CHUNK = 64 * 1024 };

const char *kkr_out_strerror(int err)
{
	if (err == KKR_EHURRIED)
		return "not written to the end: a second signal ended kkctl";
	if (err == KKR_ENOREADER)
		return "a fifo that nobody opened for reading before the end: nothing written";
	return strerror(err);
}

static bool is_fifo(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISFIFO(st.st_mode);
}

/*
 * Open @path to write the recording (made 0600).  A fifo that has no reader
 * yet is waited for, but not past the end: open(2) would wait for it in the
 * kernel, in a reader thread with the signals blocked, and no signal would
 * end kkctl.  The descriptor, or -1 and *err (an errno, or KKR_ENOREADER).
 */
int kkr_open_output(const char *path, int *err)
{
	int ms = 1;

	for (;;) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NONBLOCK, 0600);
		int fl;

		if (fd >= 0) {
			fl = fcntl(fd, F_GETFL);
			if (fl >= 0 && !fcntl(fd, F_SETFL, fl & ~O_NONBLOCK))
				return fd;
			*err = errno;
			close(fd);
			return -1;
		}
		*err = errno;
		if (*err != ENXIO || !is_fifo(path))	/* (ENXIO: no reader yet) */
			return -1;
		if (kkr_signalled()) {
			*err = KKR_ENOREADER;
			return -1;
		}
		poll(NULL, 0, ms);	/* (a reader may come at any time: no event says so) */
		ms = ms < 64 ? ms * 2 : 64;
	}
}

bool kkr_fd_regular(int fd)
{
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode);
}

int kkr_out_open(struct kkr_out *o, const char *path)
{
	int err;

	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!strcmp(path, "-")) {
		o->fd = 1;
		o->path = "standard output";
		o->regular = kkr_fd_regular(1);
		return 0;
	}
	o->fd = kkr_open_output(path, &err);
	if (o->fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", kkctl_prog, path, kkr_out_strerror(err));
		return -1;
	}
	o->own = true;
	o->regular = kkr_fd_regular(o->fd);
	return 0;
}

/* Grow the buffer to hold @n more bytes (and a NUL).  False: out of
 * memory, said. */
static bool grow(struct kkr_out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : OUT_CHUNK * 2;
	char *b;

	while (cap < o->len + n + 1)
		cap *= 2;
	if (!(b = realloc(o->buf, cap))) {
		if (!o->failed)
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		o->failed = true;
		return false;
	}
	o->buf = b;
	o->cap = cap;
	return true;
}

/* Room for @n more bytes (and a NUL). */
static inline bool room(struct kkr_out *o, size_t n)
{
	return o->len + n + 1 <= o->cap || grow(o, n);
}

/* Formatted once into the room there is (made first), again only when it
 * did not fit. */
void kkr_out_printf(struct kkr_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!room(o, 128))
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= o->cap - o->len) {
		if (!room(o, (size_t)n))
			return;
		va_start(ap, fmt);
		vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	o->len += (size_t)n;
}

/* Is byte @c one a JSON string holds as it is?  Not a control character,
 * '"', '\\' or DEL; nor, unless @out (the writer of strings checked
 * already), a byte past ASCII (to check as UTF-8 first). */
static inline bool json_plain(unsigned char c, bool out)
{
	return c >= 0x20 && c != '"' && c != '\\' && c != 0x7f && (out || c < 0x80);
}

#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
/* Some byte of @x is zero; some is below @n (n <= 128): exact, no false hits. */
#define HAS_ZERO(x) (((x) - ONES) & ~(x) & HIGHS)
#define HAS_LESS(x, n) (((x) - ONES * (n)) & ~(x) & HIGHS)

/* The first byte from @p on (before @end) that is not json_plain(@out):
 * eight bytes a step (the strings are most of a record's bytes). */
const char *kkr_json_run(const char *p, const char *end, bool out)
{
	for (; end - p >= 8; p += 8) {
		uint64_t x, m;

		memcpy(&x, p, 8);
		m = HAS_LESS(x, 0x20) | HAS_ZERO(x ^ (ONES * '"')) | HAS_ZERO(x ^ (ONES * '\\')) |
		    HAS_ZERO(x ^ (ONES * 0x7f)) | (out ? 0 : x & HIGHS);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		if (m)	/* (its lowest bit is exact: the first such byte) */
			return p + __builtin_ctzll(m) / 8;
#else
		if (m)	/* (the bytes below tell) */
			break;
#endif
	}
	while (p < end && json_plain((unsigned char)*p, out))
		p++;
	return p;
}

/* The length of the UTF-8 sequence at @p (@left bytes there), 0 if it is
 * none (overlong forms, surrogates and values past U+10FFFF are none).
 * The parser and every writer check UTF-8 with this one function. */
size_t kkr_utf8_len(const unsigned char *p, size_t left)
{
	unsigned int c = p[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c < 0x80)
		return 1;
	if (c < 0xc2 || c > 0xf4)
		return 0;
	n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (left < n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

/* @n bytes at @s. */
void kkr_out_mem(struct kkr_out *o, const char *s, size_t n)
{
	if (!room(o, n))
		return;
	memcpy(o->buf + o->len, s, n);
	o->len += n;
}

/* The decimal digits of @v, ending at @end (returned: where they begin);
 * the writers' numbers, without printf's parse of a format. */
char *kkr_digits(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/* Numbers in decimal, as "%llu" and "%lld" print them (a record has a
 * dozen: printf's parse of its format cost more than the record). */
void kkr_out_u64(struct kkr_out *o, uint64_t v)
{
	char b[24], *p = kkr_digits(b + sizeof(b), v);

	kkr_out_mem(o, p, (size_t)(b + sizeof(b) - p));
}

void kkr_out_i64(struct kkr_out *o, int64_t v)
{
	char b[24], *p = kkr_digits(b + sizeof(b), v < 0 ? 0 - (uint64_t)v : (uint64_t)v);

	if (v < 0)
		*--p = '-';
	kkr_out_mem(o, p, (size_t)(b + sizeof(b) - p));
}

/* The escape of byte @c at @d: its length. */
static size_t json_escape(char *d, unsigned char c)
{
	static const char from[] = "\"\\\n\t\r\b\f", to[] = "\"\\ntrbf", hex[] = "0123456789abcdef";
	const char *k = strchr(from, c);

	d[0] = '\\';
	if (k) {
		d[1] = to[k - from];
		return 2;
	}
	memcpy(d + 1, "u00", 3);
	d[4] = hex[c >> 4];
	d[5] = hex[c & 15];
	return 6;
}

/* A JSON string: quotes, backslashes and control characters escaped; runs
 * of plain bytes copied at once, into room made once for the worst case. */
void kkr_out_json(struct kkr_out *o, const char *s)
{
	size_t n = strlen(s);
	const char *end = s + n;
	char *d;

	if (!room(o, 6 * n + 2))
		return;
	d = o->buf + o->len;
	*d++ = '"';
	for (;;) {
		const char *run = s;

		s = kkr_json_run(s, end, true);
		memcpy(d, run, (size_t)(s - run));
		d += s - run;
		if (!*s)
			break;
		d += json_escape(d, (unsigned char)*s++);
	}
	*d++ = '"';
	o->len = (size_t)(d - o->buf);
}

/* Text for a terminal: control characters as \xNN (a record stays one
 * line); runs of the rest copied at once. */
void kkr_out_text(struct kkr_out *o, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(s);
	char *d;

	if (!room(o, 4 * n))
		return;
	d = o->buf + o->len;
	while (*s) {
		const char *run = s;
		unsigned char c;

		while ((unsigned char)*s >= 0x20 && *s != 0x7f)
			s++;
		memcpy(d, run, (size_t)(s - run));
		d += s - run;
		if (!*s)
			break;
		c = (unsigned char)*s++;
		memcpy(d, "\\x", 2);
		d[2] = hex[c >> 4];
		d[3] = hex[c & 15];
		d += 4;
	}
	o->len = (size_t)(d - o->buf);
}

/* A write failed after @wrote bytes of the buffer: cut the file back to its
 * last whole line, and say why once. */
static int write_failed(struct kkr_out *o, size_t wrote, int err)
{
	const char *nl = wrote ? memrchr(o->buf, '\n', wrote) : NULL;
	uint64_t keep = o->done + (nl ? (uint64_t)(nl - o->buf + 1) : 0);

	if (o->own && o->regular && ftruncate(o->fd, (off_t)keep) == 0)
		o->done = keep;
	fprintf(stderr, "%s: %s: %s (the records up to there are in it)\n", kkctl_prog, o->path,
		kkr_out_strerror(err));
	o->failed = true;
	o->len = 0;
	return -1;
}

int kkr_out_flush(struct kkr_out *o)
{
	size_t off = 0;

	if (o->failed)
		return -1;
	while (off < o->len) {
		ssize_t w;

		/* (a second signal: a pipe or a terminal may never take the
		 * rest, and kkctl ends now; a regular file takes it at once) */
		if (!o->regular && kkr_hurried())
			return write_failed(o, off, KKR_EHURRIED);
		w = write(o->fd, o->buf + off, o->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return write_failed(o, off, w < 0 ? errno : ENOSPC);
		off += (size_t)w;
	}
	o->done += o->len;
	o->len = 0;
	return 0;
}

/* A record is complete: write what is held once it is a chunk. */
int kkr_out_record(struct kkr_out *o)
{
	if (o->failed)
		return -1;
	return o->len >= OUT_CHUNK ? kkr_out_flush(o) : 0;
}

int kkr_out_close(struct kkr_out *o)
{
	int ret = kkr_out_flush(o);

	if (o->own && close(o->fd) && !ret) {
		fprintf(stderr, "%s: %s: %s\n", kkctl_prog, o->path, strerror(errno));
		ret = -1;
	}
	free(o->buf);
	o->buf = NULL;
	return ret;
}
