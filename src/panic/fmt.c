// SPDX-License-Identifier: MIT
/*
 * Async-signal-safe printf for the panic path: no malloc, no locale, no
 * stdio, only write(2).  Handles the flags, width, precision and length
 * modifiers of C99 printf for d i u o x X c s p %; floating point is printed
 * in fixed notation (%e, %g and %a too) with up to 9 fractional digits.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "panic/internal.h"

void kkp_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	int tries = 0;

	while (n) {
		ssize_t r = write(fd, c, n);

		if (r < 0) {
			if (errno == EINTR && ++tries < 100)
				continue;
			return;
		}
		if (r == 0)
			return;
		c += r;
		n -= (size_t)r;
	}
}

void kkp_sink_flush(struct kkp_sink *s)
{
	if (s->fd >= 0 && s->len) {
		kkp_write_all(s->fd, s->buf, s->len);
		s->len = 0;
	}
}

void kkp_sink_putc(struct kkp_sink *s, char c)
{
	s->total++;
	if (s->fd >= 0) {
		if (s->len == s->cap)
			kkp_sink_flush(s);
		s->buf[s->len++] = c;
		return;
	}
	if (s->cap && s->len + 1 < s->cap) {
		s->buf[s->len++] = c;
		s->buf[s->len] = '\0';
	}
}

void kkp_sink_puts(struct kkp_sink *s, const char *str)
{
	while (*str)
		kkp_sink_putc(s, *str++);
}

static void pad(struct kkp_sink *s, char c, int n)
{
	while (n-- > 0)
		kkp_sink_putc(s, c);
}

/* Digits of v in base, reversed into tmp; returns the count. */
static int utoa_rev(char *tmp, uintmax_t v, unsigned base, int upper)
{
	const char *digits = upper ? "0123456789ABCDEF" : "0123456789abcdef";
	int n = 0;

	do {
		tmp[n++] = digits[v % base];
		v /= base;
	} while (v);
	return n;
}

struct spec {
	int left, zero, plus, space, alt;
	int width;
	int prec;		/* -1: none */
};

static void emit_number(struct kkp_sink *s, const struct spec *sp, uintmax_t v, int neg,
			unsigned base, int upper, const char *prefix)
{
	char tmp[72];
	int nd = 0, nprec, npre, total;
	char sign = 0;

	if (!(sp->prec == 0 && v == 0))
		nd = utoa_rev(tmp, v, base, upper);
	if (neg)
		sign = '-';
	else if (sp->plus)
		sign = '+';
	else if (sp->space)
		sign = ' ';
	if (base == 8 && sp->alt && (nd == 0 || tmp[nd - 1] != '0'))
		tmp[nd++] = '0';
	nprec = sp->prec > nd ? sp->prec - nd : 0;
	npre = (int)strlen(prefix) + (sign != 0);
	total = npre + nprec + nd;
	if (!sp->left && !(sp->zero && sp->prec < 0))
		pad(s, ' ', sp->width - total);
	if (sign)
		kkp_sink_putc(s, sign);
	kkp_sink_puts(s, prefix);
	if (!sp->left && sp->zero && sp->prec < 0)
		pad(s, '0', sp->width - total);
	pad(s, '0', nprec);
	while (nd)
		kkp_sink_putc(s, tmp[--nd]);
	if (sp->left)
		pad(s, ' ', sp->width - total);
}

static void emit_str(struct kkp_sink *s, const struct spec *sp, const char *str)
{
	size_t n = 0;

	if (!str)
		str = "(null)";
	while (str[n] && (sp->prec < 0 || n < (size_t)sp->prec))
		n++;
	if (!sp->left)
		pad(s, ' ', sp->width - (int)n);
	for (size_t i = 0; i < n; i++)
		kkp_sink_putc(s, str[i]);
	if (sp->left)
		pad(s, ' ', sp->width - (int)n);
}

static void emit_float(struct kkp_sink *s, const struct spec *sp, long double v)
{
	char buf[64];
	int prec = sp->prec < 0 ? 6 : (sp->prec > 9 ? 9 : sp->prec);
	int neg = 0, n = 0, len;
	struct spec nsp = *sp;
	uintmax_t ip, fp, scale = 1;
	long double frac;

	nsp.prec = -1;
	if (v != v) {
		emit_str(s, &nsp, "nan");
		return;
	}
	if (v < 0) {
		neg = 1;
		v = -v;
	}
	if (v > 1.8e19L) {
		emit_str(s, &nsp, neg ? "-inf" : "inf");	/* also "too big" */
		return;
	}
	for (int i = 0; i < prec; i++)
		scale *= 10;
	ip = (uintmax_t)v;
	frac = (v - (long double)ip) * (long double)scale;
	fp = (uintmax_t)frac;
	frac -= (long double)fp;
	/* round half to even, as glibc does for exact ties */
	if (frac > 0.5L || (frac == 0.5L && ((prec ? fp : ip) & 1)))
		fp++;
	if (fp >= scale) {
		ip++;
		fp -= scale;
	}
	/* fraction digits, reversed */
	for (int i = 0; i < prec; i++) {
		buf[n++] = (char)('0' + fp % 10);
		fp /= 10;
	}
	if (prec || sp->alt)
		buf[n++] = '.';
	do {
		buf[n++] = (char)('0' + ip % 10);
		ip /= 10;
	} while (ip && n < (int)sizeof(buf) - 2);
	if (neg)
		buf[n++] = '-';
	else if (sp->plus)
		buf[n++] = '+';
	else if (sp->space)
		buf[n++] = ' ';
	len = n;
	if (!sp->left)
		pad(s, ' ', sp->width - len);
	while (n)
		kkp_sink_putc(s, buf[--n]);
	if (sp->left)
		pad(s, ' ', sp->width - len);
}

void kkp_vformat(struct kkp_sink *s, const char *fmt, va_list ap)
{
	const char *p = fmt ? fmt : "(null)";

	while (*p) {
		struct spec sp = { 0, 0, 0, 0, 0, 0, -1 };
		int lmod = 0;	/* 0 int, 1 long, 2 long long, 3 size_t, 4 ptrdiff, 5 intmax, -1 short, -2 char, 6 long double */
		const char *start = p;
		uintmax_t u;
		intmax_t i;
		char c;

		if (*p != '%') {
			kkp_sink_putc(s, *p++);
			continue;
		}
		p++;
		for (;; p++) {
			if (*p == '-')
				sp.left = 1;
			else if (*p == '0')
				sp.zero = 1;
			else if (*p == '+')
				sp.plus = 1;
			else if (*p == ' ')
				sp.space = 1;
			else if (*p == '#')
				sp.alt = 1;
			else if (*p == '\'')
				;
			else
				break;
		}
		if (*p == '*') {
			sp.width = va_arg(ap, int);
			if (sp.width < 0) {
				sp.left = 1;
				sp.width = -sp.width;
			}
			p++;
		} else {
			while (*p >= '0' && *p <= '9') {
				if (sp.width < 100000)
					sp.width = sp.width * 10 + (*p - '0');
				p++;
			}
		}
		if (*p == '.') {
			p++;
			sp.prec = 0;
			if (*p == '*') {
				sp.prec = va_arg(ap, int);
				if (sp.prec < 0)
					sp.prec = -1;
				p++;
			} else {
				while (*p >= '0' && *p <= '9') {
					if (sp.prec < 100000)
						sp.prec = sp.prec * 10 + (*p - '0');
					p++;
				}
			}
		}
		switch (*p) {
		case 'h':
			lmod = -1;
			if (*++p == 'h') {
				lmod = -2;
				p++;
			}
			break;
		case 'l':
			lmod = 1;
			if (*++p == 'l') {
				lmod = 2;
				p++;
			}
			break;
		case 'q': lmod = 2; p++; break;
		case 'z': lmod = 3; p++; break;
		case 't': lmod = 4; p++; break;
		case 'j': lmod = 5; p++; break;
		case 'L': lmod = 6; p++; break;
		default: break;
		}
		c = *p;
		if (!c) {		/* dangling '%': print it as it was */
			while (start < p)
				kkp_sink_putc(s, *start++);
			break;
		}
		p++;
		switch (c) {
		case 'd':
		case 'i':
			switch (lmod) {
			case 1: i = va_arg(ap, long); break;
			case 2: i = va_arg(ap, long long); break;
			case 3: i = va_arg(ap, ssize_t); break;
			case 4: i = va_arg(ap, ptrdiff_t); break;
			case 5: i = va_arg(ap, intmax_t); break;
			case -1: i = (short)va_arg(ap, int); break;
			case -2: i = (signed char)va_arg(ap, int); break;
			default: i = va_arg(ap, int); break;
			}
			emit_number(s, &sp, i < 0 ? -(uintmax_t)i : (uintmax_t)i, i < 0, 10, 0, "");
			break;
		case 'u':
		case 'x':
		case 'X':
		case 'o':
			switch (lmod) {
			case 1: u = va_arg(ap, unsigned long); break;
			case 2: u = va_arg(ap, unsigned long long); break;
			case 3: u = va_arg(ap, size_t); break;
			case 4: u = (uintmax_t)va_arg(ap, ptrdiff_t); break;
			case 5: u = va_arg(ap, uintmax_t); break;
			case -1: u = (unsigned short)va_arg(ap, unsigned); break;
			case -2: u = (unsigned char)va_arg(ap, unsigned); break;
			default: u = va_arg(ap, unsigned); break;
			}
			sp.plus = sp.space = 0;
			if (c == 'u')
				emit_number(s, &sp, u, 0, 10, 0, "");
			else if (c == 'o')
				emit_number(s, &sp, u, 0, 8, 0, "");
			else
				emit_number(s, &sp, u, 0, 16, c == 'X',
					    sp.alt && u ? (c == 'X' ? "0X" : "0x") : "");
			break;
		case 'p': {
			void *ptr = va_arg(ap, void *);

			if (!ptr) {
				sp.prec = -1;
				emit_str(s, &sp, "(nil)");
			} else {
				emit_number(s, &sp, (uintptr_t)ptr, 0, 16, 0, "0x");
			}
			break;
		}
		case 'c': {
			char ch = (char)va_arg(ap, int);

			if (!sp.left)
				pad(s, ' ', sp.width - 1);
			kkp_sink_putc(s, ch);
			if (sp.left)
				pad(s, ' ', sp.width - 1);
			break;
		}
		case 's':
			emit_str(s, &sp, va_arg(ap, const char *));
			break;
		case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
			if (lmod == 6)
				emit_float(s, &sp, va_arg(ap, long double));
			else
				emit_float(s, &sp, va_arg(ap, double));
			break;
		case 'n':
			(void)va_arg(ap, void *);	/* never written */
			break;
		case 'm': {
			/* glibc's %m; strerror is not async-signal-safe: print the number. */
			struct spec d = { 0, 0, 0, 0, 0, 0, -1 };

			kkp_sink_puts(s, "errno ");
			emit_number(s, &d, (uintmax_t)errno, 0, 10, 0, "");
			break;
		}
		case '%':
			kkp_sink_putc(s, '%');
			break;
		default:		/* unknown: print the directive as written */
			while (start < p)
				kkp_sink_putc(s, *start++);
			break;
		}
	}
}

size_t kkp_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct kkp_sink s = { buf, size, 0, -1, 0 };

	if (size)
		buf[0] = '\0';
	kkp_vformat(&s, fmt, ap);
	return s.total;
}

size_t kkp_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = kkp_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void kkp_dprintf(int fd, const char *fmt, ...)
{
	char buf[512];
	struct kkp_sink s = { buf, sizeof(buf), 0, fd, 0 };
	va_list ap;

	va_start(ap, fmt);
	kkp_vformat(&s, fmt, ap);
	va_end(ap);
	kkp_sink_flush(&s);
}

int kkp_parse_long(const char *s, size_t n, long *out)
{
	size_t i = 0;
	int neg = 0;
	unsigned long v = 0, lim;

	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	while (n > i && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	if (i < n && (s[i] == '-' || s[i] == '+'))
		neg = s[i++] == '-';
	if (i == n)
		return -EINVAL;
	lim = neg ? (unsigned long)LONG_MAX + 1 : (unsigned long)LONG_MAX;
	for (; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		if (v > (lim - (unsigned long)(s[i] - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	*out = neg ? (long)(0 - v) : (long)v;
	return 0;
}

/* ---- raw helpers ---------------------------------------------------------- */

pid_t kkp_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

pid_t kkp_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

uint64_t kkp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

ssize_t kkp_read_file(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (!n)
		return -EINVAL;
	if (fd < 0)
		return -errno;
	while (got + 1 < n) {
		ssize_t r = read(fd, buf + got, n - 1 - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	close(fd);
	return (ssize_t)got;
}

int kkp_tracer_pid(pid_t tid)
{
	char path[64], buf[2048];
	const char *p;
	long v;
	size_t n = 0;

	if (tid)
		kkp_snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)tid);
	else
		kkp_snprintf(path, sizeof(path), "/proc/thread-self/status");
	if (kkp_read_file(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nTracerPid:");
	if (!p)
		return -1;
	p += 11;
	while (*p == ' ' || *p == '\t')
		p++;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	if (kkp_parse_long(p, n, &v))
		return -1;
	return (int)v;
}
