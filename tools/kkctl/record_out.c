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
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kkctl.h"
#include "record_int.h"

enum { OUT_CHUNK = 64 * 1024 };

int kkr_out_open(struct kkr_out *o, const char *path)
{
	memset(o, 0, sizeof(*o));
	o->path = path;
	if (!strcmp(path, "-")) {
		o->fd = 1;
		o->path = "standard output";
		return 0;
	}
	o->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (o->fd < 0) {
		fprintf(stderr, "%s: %s: %s\n", kkctl_prog, path, strerror(errno));
		return -1;
	}
	o->own = true;
	return 0;
}

/* Room for @n more bytes (and a NUL).  False: out of memory, said. */
static bool room(struct kkr_out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : OUT_CHUNK * 2;
	char *b;

	if (o->len + n + 1 <= o->cap)
		return true;
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

void kkr_out_printf(struct kkr_out *o, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !room(o, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(o->buf + o->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	o->len += (size_t)n;
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

/* A JSON string: quotes, backslashes and control characters escaped (the
 * rest is UTF-8 already: record_json.c checked it). */
void kkr_out_json(struct kkr_out *o, const char *s)
{
	static const char from[] = "\"\\\n\t\r\b\f", to[] = "\"\\ntrbf";

	if (!room(o, 1))
		return;
	o->buf[o->len++] = '"';
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		const char *k = strchr(from, c);

		if (k)
			kkr_out_printf(o, "\\%c", to[k - from]);
		else if (c < 0x20 || c == 0x7f)
			kkr_out_printf(o, "\\u%04x", c);
		else if (room(o, 1))
			o->buf[o->len++] = (char)c;
	}
	if (room(o, 1))
		o->buf[o->len++] = '"';
}

/* Text for a terminal: control characters as \xNN (a record stays one line). */
void kkr_out_text(struct kkr_out *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			kkr_out_printf(o, "\\x%02x", c);
		else if (room(o, 1))
			o->buf[o->len++] = (char)c;
	}
}

/* A write failed after @wrote bytes of the buffer: cut the file back to its
 * last whole line, and say why once. */
static int write_failed(struct kkr_out *o, size_t wrote, int err)
{
	const char *nl = wrote ? memrchr(o->buf, '\n', wrote) : NULL;
	uint64_t keep = o->done + (nl ? (uint64_t)(nl - o->buf + 1) : 0);

	if (o->own && ftruncate(o->fd, (off_t)keep) == 0)
		o->done = keep;
	fprintf(stderr, "%s: %s: %s (the records up to there are in it)\n", kkctl_prog, o->path,
		strerror(err));
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
		ssize_t w = write(o->fd, o->buf + off, o->len - off);

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
