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
#include <unistd.h>

#include "common/internal.h"
#include "panic/internal.h"

void panic_write_all(int fd, const void *p, size_t n)
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

/*
 * A sink: formats into buf; when fd >= 0 a full buffer is flushed to fd,
 * otherwise the output is truncated (always NUL-terminated).
 */
struct panic_sink {
	char *buf;
	size_t cap;
	size_t len;
	int fd;
	size_t total;		/* bytes produced, including truncated ones */
};

static void panic_sink_flush(struct panic_sink *s)
{
	if (s->fd >= 0 && s->len) {
		panic_write_all(s->fd, s->buf, s->len);
		s->len = 0;
	}
}

static void panic_sink_putc(struct panic_sink *s, char c)
{
	s->total++;
	if (s->fd >= 0) {
		if (s->len == s->cap)
			panic_sink_flush(s);
		s->buf[s->len++] = c;
		return;
	}
	if (s->cap && s->len + 1 < s->cap) {
		s->buf[s->len++] = c;
		s->buf[s->len] = '\0';
	}
}

static void panic_sink_puts(struct panic_sink *s, const char *str)
{
	while (*str)
		panic_sink_putc(s, *str++);
}

static void pad(struct panic_sink *s, char c, int n)
{
	while (n-- > 0)
		panic_sink_putc(s, c);
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

/*
 * Length modifiers (C99 7.19.6.1).  An integer conversion reads its argument
 * at this width; LEN_BIG_L only changes the float conversions, an integer
 * conversion with 'L' reads an int.
 */
enum len_mod {
	LEN_NONE,
	LEN_HH,		/* char */
	LEN_H,		/* short */
	LEN_L,		/* long */
	LEN_LL,		/* long long; also BSD's 'q' */
	LEN_Z,		/* size_t */
	LEN_T,		/* ptrdiff_t */
	LEN_J,		/* intmax_t */
	LEN_BIG_L,	/* long double */
};

/* What a conversion does with its argument; one emitter per class. */
enum conv_class {
	CONV_SIGNED,	/* d i */
	CONV_UNSIGNED,	/* u o x X */
	CONV_PTR,	/* p */
	CONV_CHAR,	/* c */
	CONV_STR,	/* s */
	CONV_FLOAT,	/* f F e E g G a A */
	CONV_COUNT,	/* n: the argument is taken and never written */
	CONV_ERRNO,	/* m */
	CONV_PERCENT,	/* %% */
	CONV_VERBATIM,	/* unknown or cut short by the end of the format */
};

/* One decoded directive, as format_decode() in the kernel's lib/vsprintf.c fills its printf_spec. */
struct spec {
	int left, zero, plus, space, alt;
	int width;
	int prec;		/* -1: none */
	enum len_mod len;
	enum conv_class cls;
	char conv;		/* the conversion character; '\0' when the format ended first */
	const char *start, *end;	/* the directive as written, for CONV_VERBATIM */
};

static void emit_number(struct panic_sink *s, const struct spec *sp, uintmax_t v, int neg,
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
		panic_sink_putc(s, sign);
	panic_sink_puts(s, prefix);
	if (!sp->left && sp->zero && sp->prec < 0)
		pad(s, '0', sp->width - total);
	pad(s, '0', nprec);
	while (nd)
		panic_sink_putc(s, tmp[--nd]);
	if (sp->left)
		pad(s, ' ', sp->width - total);
}

static void emit_str(struct panic_sink *s, const struct spec *sp, const char *str)
{
	size_t n = 0;

	if (!str)
		str = "(null)";
	while (str[n] && (sp->prec < 0 || n < (size_t)sp->prec))
		n++;
	if (!sp->left)
		pad(s, ' ', sp->width - (int)n);
	for (size_t i = 0; i < n; i++)
		panic_sink_putc(s, str[i]);
	if (sp->left)
		pad(s, ' ', sp->width - (int)n);
}

static void emit_float(struct panic_sink *s, const struct spec *sp, long double v)
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
		panic_sink_putc(s, buf[--n]);
	if (sp->left)
		pad(s, ' ', sp->width - len);
}

/* ---- decoding one directive ---------------------------------------------- */

/* Flag characters; the "'" of glibc's grouping is accepted and ignored. */
static const char *decode_flags(struct spec *sp, const char *p)
{
	for (;; p++) {
		switch (*p) {
		case '-': sp->left = 1; break;
		case '0': sp->zero = 1; break;
		case '+': sp->plus = 1; break;
		case ' ': sp->space = 1; break;
		case '#': sp->alt = 1; break;
		case '\'': break;
		default: return p;
		}
	}
}

/* Decimal digits into *v; stops growing at 100000 so a long run cannot overflow. */
static const char *decode_digits(const char *p, int *v)
{
	while (*p >= '0' && *p <= '9') {
		if (*v < 100000)
			*v = *v * 10 + (*p - '0');
		p++;
	}
	return p;
}

/* Width: digits or '*', where a negative argument means '-' and its magnitude. */
static const char *decode_width(struct spec *sp, const char *p, va_list *ap)
{
	if (*p != '*')
		return decode_digits(p, &sp->width);
	sp->width = va_arg(*ap, int);
	if (sp->width < 0) {
		sp->left = 1;
		sp->width = -sp->width;
	}
	return p + 1;
}

/* Precision: '.' then digits or '*'; a negative '*' argument means none. */
static const char *decode_prec(struct spec *sp, const char *p, va_list *ap)
{
	if (*p != '.')
		return p;
	p++;
	sp->prec = 0;
	if (*p != '*')
		return decode_digits(p, &sp->prec);
	sp->prec = va_arg(*ap, int);
	if (sp->prec < 0)
		sp->prec = -1;
	return p + 1;
}

/* Longest match first: "hh" before "h", "ll" before "l". */
static const struct {
	char text[3];
	enum len_mod len;
} len_mods[] = {
	{ "hh", LEN_HH }, { "h", LEN_H }, { "ll", LEN_LL }, { "l", LEN_L },
	{ "q", LEN_LL }, { "z", LEN_Z }, { "t", LEN_T }, { "j", LEN_J },
	{ "L", LEN_BIG_L },
};

static const char *decode_len(struct spec *sp, const char *p)
{
	for (size_t i = 0; i < sizeof(len_mods) / sizeof(len_mods[0]); i++) {
		const char *t = len_mods[i].text;

		if (p[0] == t[0] && (!t[1] || p[1] == t[1])) {
			sp->len = len_mods[i].len;
			return p + (t[1] ? 2 : 1);
		}
	}
	return p;
}

static enum conv_class conv_class(char c)
{
	switch (c) {
	case 'd': case 'i':
		return CONV_SIGNED;
	case 'u': case 'o': case 'x': case 'X':
		return CONV_UNSIGNED;
	case 'p': return CONV_PTR;
	case 'c': return CONV_CHAR;
	case 's': return CONV_STR;
	case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': case 'a': case 'A':
		return CONV_FLOAT;
	case 'n': return CONV_COUNT;
	case 'm': return CONV_ERRNO;
	case '%': return CONV_PERCENT;
	default: return CONV_VERBATIM;
	}
}

/*
 * Decode the directive at p (which points at '%') into *sp and return the
 * first character after it.  The '*' arguments of width and precision are
 * taken here, in the order printf takes them.  A directive cut short by the
 * end of the format ends at that NUL, so the caller's loop stops there.
 */
static const char *format_decode(struct spec *sp, const char *p, va_list *ap)
{
	*sp = (struct spec){ .prec = -1, .start = p };
	p = decode_flags(sp, p + 1);
	p = decode_width(sp, p, ap);
	p = decode_prec(sp, p, ap);
	p = decode_len(sp, p);
	sp->conv = *p;
	sp->cls = *p ? conv_class(*p) : CONV_VERBATIM;
	if (*p)
		p++;
	sp->end = p;
	return p;
}

/* ---- one emitter per conversion class ---------------------------------- */

static intmax_t arg_signed(va_list *ap, enum len_mod len)
{
	switch (len) {
	case LEN_L: return va_arg(*ap, long);
	case LEN_LL: return va_arg(*ap, long long);
	case LEN_Z: return va_arg(*ap, ssize_t);
	case LEN_T: return va_arg(*ap, ptrdiff_t);
	case LEN_J: return va_arg(*ap, intmax_t);
	case LEN_H: return (short)va_arg(*ap, int);
	case LEN_HH: return (signed char)va_arg(*ap, int);
	default: return va_arg(*ap, int);
	}
}

static uintmax_t arg_unsigned(va_list *ap, enum len_mod len)
{
	switch (len) {
	case LEN_L: return va_arg(*ap, unsigned long);
	case LEN_LL: return va_arg(*ap, unsigned long long);
	case LEN_Z: return va_arg(*ap, size_t);
	case LEN_T: return (uintmax_t)va_arg(*ap, ptrdiff_t);
	case LEN_J: return va_arg(*ap, uintmax_t);
	case LEN_H: return (unsigned short)va_arg(*ap, unsigned);
	case LEN_HH: return (unsigned char)va_arg(*ap, unsigned);
	default: return va_arg(*ap, unsigned);
	}
}

static void conv_signed(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	intmax_t i = arg_signed(ap, sp->len);

	emit_number(s, sp, i < 0 ? -(uintmax_t)i : (uintmax_t)i, i < 0, 10, 0, "");
}

/* '+' and ' ' apply to signed conversions only. */
static void conv_unsigned(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	uintmax_t u = arg_unsigned(ap, sp->len);
	int upper = sp->conv == 'X';

	sp->plus = sp->space = 0;
	if (sp->conv == 'u')
		emit_number(s, sp, u, 0, 10, 0, "");
	else if (sp->conv == 'o')
		emit_number(s, sp, u, 0, 8, 0, "");
	else
		emit_number(s, sp, u, 0, 16, upper, sp->alt && u ? (upper ? "0X" : "0x") : "");
}

/* glibc's spelling: "(nil)" for NULL, 0x and lower-case hex otherwise. */
static void conv_ptr(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	void *ptr = va_arg(*ap, void *);

	if (ptr) {
		emit_number(s, sp, (uintptr_t)ptr, 0, 16, 0, "0x");
		return;
	}
	sp->prec = -1;
	emit_str(s, sp, "(nil)");
}

static void conv_char(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	char ch = (char)va_arg(*ap, int);

	if (!sp->left)
		pad(s, ' ', sp->width - 1);
	panic_sink_putc(s, ch);
	if (sp->left)
		pad(s, ' ', sp->width - 1);
}

static void conv_str(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	emit_str(s, sp, va_arg(*ap, const char *));
}

static void conv_float(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	if (sp->len == LEN_BIG_L)
		emit_float(s, sp, va_arg(*ap, long double));
	else
		emit_float(s, sp, va_arg(*ap, double));
}

/* %n is never written: a panic message must not be able to store through a pointer. */
static void conv_count(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	(void)s;
	(void)sp;
	(void)va_arg(*ap, void *);
}

/* glibc's %m; strerror is not async-signal-safe: print the number, without width or flags. */
static void conv_errno(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	struct spec plain = { .prec = -1 };

	(void)sp;
	(void)ap;
	panic_sink_puts(s, "errno ");
	emit_number(s, &plain, (uintmax_t)errno, 0, 10, 0, "");
}

static void conv_percent(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	(void)sp;
	(void)ap;
	panic_sink_putc(s, '%');
}

/* Unknown or unfinished directives are printed as written, as glibc does. */
static void conv_verbatim(struct panic_sink *s, struct spec *sp, va_list *ap)
{
	(void)ap;
	for (const char *c = sp->start; c < sp->end; c++)
		panic_sink_putc(s, *c);
}

static void (*const conv_emit[])(struct panic_sink *, struct spec *, va_list *) = {
	[CONV_SIGNED] = conv_signed,
	[CONV_UNSIGNED] = conv_unsigned,
	[CONV_PTR] = conv_ptr,
	[CONV_CHAR] = conv_char,
	[CONV_STR] = conv_str,
	[CONV_FLOAT] = conv_float,
	[CONV_COUNT] = conv_count,
	[CONV_ERRNO] = conv_errno,
	[CONV_PERCENT] = conv_percent,
	[CONV_VERBATIM] = conv_verbatim,
};

/*
 * The arguments go through a copy passed by address: the helpers take them
 * in turn, and a va_list parameter cannot be passed on by address portably
 * (on x86-64 it is an array that decays to a pointer).
 */
static void panic_vformat(struct panic_sink *s, const char *fmt, va_list ap)
{
	const char *p = fmt ? fmt : "(null)";
	va_list args;

	va_copy(args, ap);
	while (*p) {
		struct spec sp;

		if (*p != '%') {
			panic_sink_putc(s, *p++);
			continue;
		}
		p = format_decode(&sp, p, &args);
		conv_emit[sp.cls](s, &sp, &args);
	}
	va_end(args);
}

size_t panic_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	struct panic_sink s = { buf, size, 0, -1, 0 };

	if (size)
		buf[0] = '\0';
	panic_vformat(&s, fmt, ap);
	return s.total;
}

size_t panic_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	n = panic_vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

void panic_dprintf(int fd, const char *fmt, ...)
{
	char buf[512];
	struct panic_sink s = { buf, sizeof(buf), 0, fd, 0 };
	va_list ap;

	va_start(ap, fmt);
	panic_vformat(&s, fmt, ap);
	va_end(ap);
	panic_sink_flush(&s);
}

int panic_parse_long(const char *s, size_t n, long *out)
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

pid_t panic_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

pid_t panic_getpid(void)
{
	return (pid_t)syscall(SYS_getpid);
}

int panic_tracer_pid(pid_t tid)
{
	char path[64], buf[2048];
	const char *p;
	long v;
	size_t n = 0;

	if (kk_task_path(path, sizeof(path), tid, "status") || kk_read_proc(path, buf, sizeof(buf)) < 0)
		return -1;
	p = strstr(buf, "\nTracerPid:");
	if (!p)
		return -1;
	p += 11;
	while (*p == ' ' || *p == '\t')
		p++;
	while (p[n] >= '0' && p[n] <= '9')
		n++;
	if (panic_parse_long(p, n, &v))
		return -1;
	return (int)v;
}
