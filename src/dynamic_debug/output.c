// SPDX-License-Identifier: MIT
/*
 * Dynamic debug output: the decoration "[tid] module:func:file:line: ", the
 * sinks (stderr, a callback, syslog), hex dumps, the stack dump of the 'd'
 * flag, and the rate limit of pr_debug_ratelimited().
 */
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/ratelimit.h>
#include "common/internal.h"
#include "dynamic_debug/internal.h"

/* ---- sinks --------------------------------------------------------------------------- */

struct sink {
	kk_dyndbg_sink_fn fn;
	void *arg;
	struct sink *retired;	/* older sinks stay allocated: a printer may still use one */
};

static _Atomic(struct sink *) cur_sink;
static pthread_mutex_t sink_lock = PTHREAD_MUTEX_INITIALIZER;

KK_EXPORT void kk_dyndbg_set_sink(kk_dyndbg_sink_fn fn, void *arg)
{
	struct sink *s = NULL;

	pthread_mutex_lock(&sink_lock);
	if (fn) {
		s = malloc(sizeof(*s));
		if (!s) {
			pthread_mutex_unlock(&sink_lock);
			return;
		}
		s->fn = fn;
		s->arg = arg;
	}
	struct sink *old = atomic_exchange(&cur_sink, s);

	if (old) {		/* keep it reachable from the new one (or a static list) */
		static struct sink *graveyard;

		old->retired = graveyard;
		graveyard = old;
	}
	pthread_mutex_unlock(&sink_lock);
}

/* The sink in use now, for the control file dynamic_debug/sink (NULL: stderr). */
kk_dyndbg_sink_fn kk_dd_sink_current(void)
{
	struct sink *s = atomic_load_explicit(&cur_sink, memory_order_acquire);

	return s ? s->fn : NULL;
}

KK_EXPORT void kk_dyndbg_sink_syslog(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	int prio = (int)(long)arg;

	(void)desc;
	if (len && msg[len - 1] == '\n')
		len--;
	syslog(prio ? prio : LOG_DEBUG, "%.*s", (int)len, msg);
}

#ifdef __GLIBC__
#define STDIO_UNBUFFERED 0x0002		/* glibc's _IO_UNBUFFERED, part of its ABI */

/*
 * @msg to stderr in one write(), as fwrite() writes it, without fwrite().
 * On an unbuffered, byte-oriented stderr with nothing pending (glibc's
 * stderr unless the program changed it), fwrite() is one write() of the
 * line and about 250 instructions of stdio around it.  Under the stream's
 * lock, as fwrite() is, so that a line never lands inside another thread's
 * flockfile()d stderr output.  errno is kept: a debug print does not
 * change it.  Anything else (a buffered or wide stderr, bytes pending)
 * goes through fwrite(), which keeps the stream's order.
 */
static void emit_stderr(const char *msg, size_t len)
{
	FILE *f = stderr;
	int e = errno;

	flockfile(f);
	if ((f->_flags & STDIO_UNBUFFERED) && f->_mode <= 0 && f->_IO_write_ptr == f->_IO_write_base) {
		int fd = fileno_unlocked(f);

		while (len) {
			ssize_t n = write(fd, msg, len);

			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				break;
			msg += n;
			len -= (size_t)n;
		}
	} else {
		fwrite_unlocked(msg, 1, len, f);
	}
	funlockfile(f);
	errno = e;
}
#else
static void emit_stderr(const char *msg, size_t len)
{
	int e = errno;

	fwrite(msg, 1, len, stderr);	/* one fwrite: not torn by other threads' stdio */
	errno = e;
}
#endif

static void emit(const struct _ddebug *desc, const char *msg, size_t len)
{
	struct sink *s = atomic_load_explicit(&cur_sink, memory_order_acquire);

	if (s) {
		s->fn(desc, msg, len, s->arg);
		return;
	}
	emit_stderr(msg, len);
}

/* ---- the prefix ------------------------------------------------------------------------ */

static __thread pid_t cached_tid;

static void reset_tid(void)
{
	cached_tid = 0;
}

static pid_t my_tid(void)
{
	if (!cached_tid)
		cached_tid = gettid();
	return cached_tid;
}

/*
 * The prefix's text, snprintf()'s way: what fits is written, everything is
 * counted (kk_dynamic_emit_prefix() with no room measures).  Its fields are
 * copied, not formatted: five snprintf() calls cost more than the line.
 */
struct pfx {
	char *buf;
	size_t len, pos;
};

static void pfx_put(struct pfx *p, const char *s, size_t n)
{
	if (p->pos < p->len)
		memcpy(p->buf + p->pos, s, p->len - p->pos < n ? p->len - p->pos : n);
	p->pos += n;
}

/* @s (as %s prints it: NULL is "(null)"), then @sep. */
static void pfx_str(struct pfx *p, const char *s, const char *sep)
{
	if (!s)
		s = "(null)";
	pfx_put(p, s, strlen(s));
	pfx_put(p, sep, strlen(sep));
}

static void pfx_num(struct pfx *p, const char *open, unsigned int v, const char *close)
{
	char num[12], *d = num + sizeof(num);

	do
		*--d = (char)('0' + v % 10);
	while (v /= 10);
	pfx_put(p, open, strlen(open));
	pfx_put(p, d, (size_t)(num + sizeof(num) - d));
	pfx_put(p, close, strlen(close));
}

/* "[tid] module:func:file:line: " for the decoration flags set in @flags. */
static size_t prefix(const struct _ddebug *d, unsigned int flags, char *buf, size_t len)
{
	struct pfx p = { buf, len, 0 };
	size_t after_tid;

	if (flags & _DPRINTK_FLAGS_INCL_TID)
		pfx_num(&p, "[", (unsigned int)my_tid(), "] ");	/* a tid is > 0 */
	after_tid = p.pos;
	if (flags & _DPRINTK_FLAGS_INCL_MODNAME)
		pfx_str(&p, d->modname ? d->modname : "?", ":");
	if (flags & _DPRINTK_FLAGS_INCL_FUNCNAME)
		pfx_str(&p, d->function, ":");
	if (flags & _DPRINTK_FLAGS_INCL_SOURCENAME)
		pfx_str(&p, kk_dd_rel_name(d->filename), ":");
	if (flags & _DPRINTK_FLAGS_INCL_LINENO)
		pfx_num(&p, "", (unsigned int)d->lineno, ":");
	if (p.pos != after_tid)
		pfx_put(&p, " ", 1);
	if (len)
		buf[p.pos < len ? p.pos : len - 1] = '\0';
	return p.pos;
}

KK_EXPORT size_t kk_dynamic_emit_prefix(const struct _ddebug *desc, char *buf, size_t len)
{
	unsigned int flags;

	if (len)
		buf[0] = '\0';
	if (!desc)
		return 0;
	flags = __atomic_load_n(&desc->flags, __ATOMIC_RELAXED);
	if (!(flags & _DPRINTK_FLAGS_INCL_ANY))
		return 0;
	return prefix(desc, flags, buf, len);	/* @len 0: measures only */
}

__attribute__((noinline)) static void dump_stack(const struct _ddebug *d)
{
	void *frames[40];
	/* kk_backtrace: 0 frames, not abort(), before a static binary can unwind */
	int n = kk_backtrace(frames, 40), first = 1;
	char **names = backtrace_symbols(frames, n);
	char line[512];
	Dl_info di;

	/* start at the caller of __dynamic_pr_debug() or __dynamic_hex_dump()
	 * (sanitizers may add frames) */
	for (int i = 0; i < n && i < 10; i++)
		if (dladdr(frames[i], &di) && di.dli_sname &&
		    (!strcmp(di.dli_sname, "__dynamic_pr_debug") ||
		     !strcmp(di.dli_sname, "__dynamic_hex_dump")))
			first = i + 1;
	for (int i = first; i < n; i++) {
		int m = snprintf(line, sizeof(line), " #%d %s\n", i - first,
				 names ? names[i] : "?");

		if (m > 0)
			emit(d, line, (size_t)m < sizeof(line) ? (size_t)m : sizeof(line) - 1);
	}
	free(names);
}

/* ---- the message's text ------------------------------------------------------------------ */

/*
 * The message without stdio.  glibc's vsnprintf() spends about 1150
 * instructions on "bench message %d: %s\n": it sets up a FILE on the
 * buffer, and copies literal text and short strings a byte at a time.  That
 * was three quarters of a printed line (issue 41).  The kernel formats with
 * a vsnprintf() of its own too (lib/vsprintf.c).  This one does the common
 * conversions, d i u o x X c s p and %%, with the flags '-' and '0', a width
 * (or '*'), a precision for s (or '*'), and the lengths hh h l ll z j t, as
 * glibc prints them.  For anything else (other flags or conversions, a NULL
 * string, a line that does not fit) it gives up, and vsnprintf() formats the
 * whole message again: a line never mixes the two.
 */
struct lbuf {
	char *p, *end;
};

struct fspec {
	bool left, zero;
	int width, prec;		/* -1: none */
	char lmod;			/* 0, 'H' (hh), 'h', 'l', 'q' (ll), 'z', 'j', 't' */
	char c;
};

static bool lb_put(struct lbuf *b, const char *s, size_t n)
{
	if ((size_t)(b->end - b->p) < n)
		return false;
	memcpy(b->p, s, n);
	b->p += n;
	return true;
}

static bool lb_pad(struct lbuf *b, char c, int n)
{
	if (n <= 0)
		return true;
	if (b->end - b->p < n)
		return false;
	memset(b->p, c, (size_t)n);
	b->p += n;
	return true;
}

/* @pre (a sign, "0x") and @body in a field of the spec's width. */
static bool lb_field(struct lbuf *b, const struct fspec *s, const char *pre, size_t npre,
		     const char *body, size_t n)
{
	int pad = s->width - (int)(npre + n);

	if (s->left)
		return lb_put(b, pre, npre) && lb_put(b, body, n) && lb_pad(b, ' ', pad);
	if (s->zero)
		return lb_put(b, pre, npre) && lb_pad(b, '0', pad) && lb_put(b, body, n);
	return lb_pad(b, ' ', pad) && lb_put(b, pre, npre) && lb_put(b, body, n);
}

/* A width or precision: digits, or '*' (an int argument).  NULL: not one we take. */
static const char *spec_num(const char *p, int *v, va_list *ap)
{
	int n = 0;

	if (*p == '*') {
		n = va_arg(*ap, int);
		if (n < 0)
			return NULL;	/* "-" or "no precision": vsnprintf()'s */
		*v = n;
		return p + 1;
	}
	while (*p >= '0' && *p <= '9') {
		n = n * 10 + (*p++ - '0');
		if (n > 4096)
			return NULL;
	}
	*v = n;
	return p;
}

/* The length modifier at @p into *@lmod ('H' for hh, 'q' for ll).  Returns its end. */
static const char *spec_lmod(const char *p, char *lmod)
{
	switch (*p) {
	case 'h': case 'l':
		if (p[1] == *p) {
			*lmod = *p == 'h' ? 'H' : 'q';
			return p + 2;
		}
		/* fall through */
	case 'z': case 'j': case 't':
		*lmod = *p;
		return p + 1;
	default:
		return p;
	}
}

/* Parse the conversion after a '%' into @s.  The end, or NULL: not one of ours. */
static const char *spec_parse(const char *p, struct fspec *s, va_list *ap)
{
	*s = (struct fspec){ .width = 0, .prec = -1 };
	for (;; p++) {
		if (*p == '-')
			s->left = true;
		else if (*p == '0')
			s->zero = true;
		else
			break;
	}
	if ((*p == '*' || (*p >= '1' && *p <= '9')) && !(p = spec_num(p, &s->width, ap)))
		return NULL;
	if (*p == '.' && !(p = spec_num(p + 1, &s->prec, ap)))
		return NULL;
	p = spec_lmod(p, &s->lmod);
	switch ((s->c = *p)) {
	case 'd': case 'i': case 'u': case 'o': case 'x': case 'X':
		return s->prec < 0 ? p + 1 : NULL;
	case 's':
		return !s->lmod && !s->zero ? p + 1 : NULL;
	case 'c': case 'p':
		return !s->lmod && !s->zero && s->prec < 0 ? p + 1 : NULL;
	default:			/* %m, %n, floating point, ...: vsnprintf()'s */
		return NULL;
	}
}

/* The integer argument of @s, as unsigned; *@neg for a negative signed one. */
static unsigned long long int_arg(const struct fspec *s, va_list *ap, bool *neg)
{
	long long v;

	if (s->c != 'd' && s->c != 'i') {
		switch (s->lmod) {
		case 'H': return (unsigned char)va_arg(*ap, unsigned int);
		case 'h': return (unsigned short)va_arg(*ap, unsigned int);
		case 'l': return va_arg(*ap, unsigned long);
		case 'q': return va_arg(*ap, unsigned long long);
		case 'z': return va_arg(*ap, size_t);
		case 'j': return va_arg(*ap, uintmax_t);
		case 't': return (size_t)va_arg(*ap, ptrdiff_t);	/* its own width */
		default: return va_arg(*ap, unsigned int);
		}
	}
	switch (s->lmod) {
	case 'H': v = (signed char)va_arg(*ap, int); break;
	case 'h': v = (short)va_arg(*ap, int); break;
	case 'l': v = va_arg(*ap, long); break;
	case 'q': v = va_arg(*ap, long long); break;
	case 'z': v = va_arg(*ap, ssize_t); break;
	case 'j': v = va_arg(*ap, intmax_t); break;
	case 't': v = va_arg(*ap, ptrdiff_t); break;
	default: v = va_arg(*ap, int); break;
	}
	*neg = v < 0;
	return *neg ? -(unsigned long long)v : (unsigned long long)v;
}

/* One conversion of @s.  False: it did not fit. */
static bool conv_one(struct lbuf *b, const struct fspec *s, va_list *ap)
{
	char num[24], *end = num + sizeof(num), *d;
	bool neg = false;
	const char *str;

	switch (s->c) {
	case 'c':
		num[0] = (char)(unsigned char)va_arg(*ap, int);
		return lb_field(b, s, "", 0, num, 1);
	case 's':
		str = va_arg(*ap, const char *);
		if (!str)
			return false;	/* "(null)", or not, by precision: vsnprintf()'s */
		return lb_field(b, s, "", 0, str, s->prec >= 0 ? strnlen(str, (size_t)s->prec) :
							    strlen(str));
	case 'p': {
		void *v = va_arg(*ap, void *);

		if (!v)
			return lb_field(b, s, "", 0, "(nil)", 5);
		d = kk_utoa(end, (uintptr_t)v, 'p');
		return lb_field(b, s, "0x", 2, d, (size_t)(end - d));
	}
	default:
		d = kk_utoa(end, int_arg(s, ap, &neg), s->c);
		return lb_field(b, s, "-", neg, d, (size_t)(end - d));
	}
}

/*
 * @fmt into @buf (@cap bytes, none of them a NUL).  Returns the length, or
 * -1: vsnprintf() must do it.
 */
static int line_fmt(char *buf, size_t cap, const char *fmt, va_list *ap)
{
	struct lbuf b = { buf, buf + cap };
	struct fspec s;

	for (const char *p = fmt;;) {
		const char *q = strchrnul(p, '%');

		if (!lb_put(&b, p, (size_t)(q - p)))
			return -1;
		if (!*q)
			return (int)(b.p - buf);
		if (q[1] == '%') {
			if (!lb_put(&b, "%", 1))
				return -1;
			p = q + 2;
			continue;
		}
		p = spec_parse(q + 1, &s, ap);
		if (!p || !conv_one(&b, &s, ap))
			return -1;
	}
}

#define LINE_BUF 512

/*
 * The message after the @pre bytes of prefix already in @stack (@cap
 * bytes): into @stack, or a malloc'ed buffer when it is longer.  Returns
 * the buffer, with room for a newline and a NUL after *@len; NULL when
 * vsnprintf() fails.
 */
static char *format_msg(char *stack, size_t cap, size_t pre, const char *fmt, va_list ap,
			size_t *len)
{
	char *buf = stack;
	va_list aq;
	int n = -1;

	if (pre + 2 < cap) {
		va_copy(aq, ap);
		n = line_fmt(stack + pre, cap - pre - 2, fmt, &aq);
		va_end(aq);
	}
	if (n >= 0) {
		*len = pre + (size_t)n;
		return stack;
	}
	va_copy(aq, ap);
	n = vsnprintf(stack + pre, cap - pre, fmt, ap);
	if (n < 0) {
		va_end(aq);
		return NULL;
	}
	*len = pre + (size_t)n;
	if (*len + 2 > cap) {
		buf = malloc(*len + 2);
		if (buf) {
			memcpy(buf, stack, pre);
			vsnprintf(buf + pre, (size_t)n + 1, fmt, aq);
		} else {
			buf = stack;	/* truncated is better than nothing */
			*len = cap - 2;
		}
	}
	va_end(aq);
	return buf;
}

/* Print one message, decorated as @flags (the call's one load of them) say. */
__attribute__((noinline)) static void vprint(struct _ddebug *d, unsigned int flags, const char *fmt,
					     va_list ap)
{
	char stack[LINE_BUF], *buf;
	size_t pre, len;

	/* the time first, as printk puts it before everything (print_time.c) */
	pre = kk_dd_time_prefix(stack, sizeof(stack));
	if (flags & _DPRINTK_FLAGS_INCL_ANY)
		pre += prefix(d, flags, stack + pre, sizeof(stack) - pre);
	if (pre >= sizeof(stack))
		pre = sizeof(stack) - 1;
	buf = format_msg(stack, sizeof(stack), pre, fmt, ap, &len);
	if (!buf)
		return;
	if (!len || buf[len - 1] != '\n')
		buf[len++] = '\n';
	buf[len] = '\0';
	emit(d, buf, len);
	if (buf != stack)
		free(buf);
	if (flags & _DPRINTK_FLAGS_INCL_STACK) {
		dump_stack(d);
		__asm__ volatile("");	/* not a tail call: dump_stack() skips this frame */
	}
}

/*
 * What a call does, decided on ONE load of the site's flags (@flags), so
 * that it sees the flags before a change or after it, never a mix: p prints,
 * T records, both do both, and neither does nothing.  A call reaches here
 * with neither when it took the site's branch just before a query cleared
 * the flags: the site is on its way back to its NOP, and nothing asked for
 * this call's message (issue 37: "not T" is not "print").  The kernel's
 * __dynamic_pr_debug() prints unconditionally: it has no T, and a call
 * there comes through the branch too.
 */
static void vout(struct _ddebug *d, unsigned int flags, const char *fmt, va_list ap)
{
	if (flags & _DPRINTK_FLAGS_TRACE) {
		va_list aq;

		va_copy(aq, ap);
		kk_dd_trace_record(d, fmt, aq);
		va_end(aq);
	}
	if (flags & _DPRINTK_FLAGS_PRINT)
		vprint(d, flags, fmt, ap);
}

__attribute__((format(printf, 3, 4)))
static void out(struct _ddebug *d, unsigned int flags, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vout(d, flags, fmt, ap);
	va_end(ap);
}

static unsigned int load_flags(const struct _ddebug *d)
{
	return __atomic_load_n(&d->flags, __ATOMIC_RELAXED);
}

KK_EXPORT void __dynamic_pr_debug(struct _ddebug *descriptor, const char *fmt, ...)
{
	unsigned int flags = load_flags(descriptor);
	va_list ap;

	va_start(ap, fmt);
	if (!(flags & _DPRINTK_FLAGS_PRINT)) {
		/* T alone (the trace ring's hot path): straight to the ring, @ap used once */
		if (flags & _DPRINTK_FLAGS_TRACE)
			kk_dd_trace_record(descriptor, fmt, ap);
	} else {
		vout(descriptor, flags, fmt, ap);
	}
	va_end(ap);
}

/* ---- hex dumps --------------------------------------------------------------------------- */

static unsigned long long get_group(const unsigned char *p, int groupsize)
{
	unsigned long long v = 0;

	/* little-endian groups, as the kernel prints them on x86 */
	for (int i = groupsize - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

KK_EXPORT void __dynamic_hex_dump(struct _ddebug *d, const char *prefix_str, int prefix_type,
			int rowsize, int groupsize, const void *buf, size_t len, int ascii)
{
	/* one load for every row: a dump is one call, printed or recorded whole */
	unsigned int flags = load_flags(d);
	const unsigned char *p = buf;

	if (!(flags & _DPRINTK_FLAGS_ENABLED))
		return;
	if (rowsize != 16 && rowsize != 32)
		rowsize = 16;
	if (groupsize != 1 && groupsize != 2 && groupsize != 4 && groupsize != 8)
		groupsize = 1;
	if (!prefix_str)
		prefix_str = "";
	for (size_t off = 0; off < len; off += (size_t)rowsize) {
		size_t n = len - off < (size_t)rowsize ? len - off : (size_t)rowsize;
		int gs = (n % (size_t)groupsize) ? 1 : groupsize;
		char hex[32 * 3 + 8] = "", asc[33] = "";
		size_t hp = 0;

		for (size_t i = 0; i < n; i += (size_t)gs) {
			int m = snprintf(hex + hp, sizeof(hex) - hp, "%s%0*llx", i ? " " : "",
					 2 * gs, get_group(p + off + i, gs));
			if (m > 0)
				hp += (size_t)m;
		}
		if (ascii) {
			for (size_t i = 0; i < n; i++) {
				unsigned char c = p[off + i];

				asc[i] = (c >= 0x20 && c < 0x7f) ? (char)c : '.';
			}
			asc[n] = '\0';
		}
		/* pad the hex column of a short last row so the ASCII lines up */
		int width = rowsize * 2 + rowsize / groupsize - 1;

		switch (prefix_type) {
		case DUMP_PREFIX_ADDRESS:
			out(d, flags, "%s%p: %-*s%s%s", prefix_str, (const void *)(p + off),
			    ascii ? width : 0, hex, ascii ? "  " : "", asc);
			break;
		case DUMP_PREFIX_OFFSET:
			out(d, flags, "%s%.8zx: %-*s%s%s", prefix_str, off,
			    ascii ? width : 0, hex, ascii ? "  " : "", asc);
			break;
		default:
			out(d, flags, "%s%-*s%s%s", prefix_str, ascii ? width : 0, hex,
			    ascii ? "  " : "", asc);
			break;
		}
	}
}

/* ---- rate limits ------------------------------------------------------------------------- */

KK_EXPORT void ratelimit_state_init(struct ratelimit_state *rs, int interval, int burst)
{
	memset(rs, 0, sizeof(*rs));
	rs->interval = interval;
	rs->burst = burst;
}

KK_EXPORT void ratelimit_set_flags(struct ratelimit_state *rs, unsigned long flags)
{
	rs->flags = (unsigned int)flags;
}

KK_EXPORT int kk_ratelimit_check(struct ratelimit_state *rs, int *report)
{
	unsigned long long t;
	int ok;

	*report = 0;
	if (!rs->interval)
		return 1;
	if (__atomic_exchange_n(&rs->lock, 1, __ATOMIC_ACQUIRE)) {
		__atomic_fetch_add(&rs->missed, 1, __ATOMIC_RELAXED);	/* contended: suppressed */
		return 0;
	}
	t = kk_now_coarse_ms() + 1;	/* +1 keeps 0 free to mean "not started" */
	if (!rs->begin)
		rs->begin = t;
	if (t - rs->begin >= (unsigned long long)rs->interval) {
		int missed = __atomic_load_n(&rs->missed, __ATOMIC_RELAXED);

		if (missed && !(rs->flags & RATELIMIT_MSG_ON_RELEASE)) {
			*report = missed;
			__atomic_fetch_sub(&rs->missed, missed, __ATOMIC_RELAXED);
		}
		rs->begin = t;
		rs->printed = 0;
	}
	if (rs->burst && rs->burst > rs->printed) {
		rs->printed++;
		ok = 1;
	} else {
		__atomic_fetch_add(&rs->missed, 1, __ATOMIC_RELAXED);
		ok = 0;
	}
	__atomic_store_n(&rs->lock, 0, __ATOMIC_RELEASE);
	return ok;
}

KK_EXPORT int ___ratelimit(struct ratelimit_state *rs, const char *func)
{
	int report, ok = kk_ratelimit_check(rs, &report);

	if (report)
		fprintf(stderr, "%s: %d callbacks suppressed\n", func, report);
	return ok;
}

KK_EXPORT void ratelimit_state_exit(struct ratelimit_state *rs)
{
	if (!(rs->flags & RATELIMIT_MSG_ON_RELEASE))
		return;
	if (rs->missed) {
		fprintf(stderr, "%s: %d output lines suppressed due to ratelimiting\n",
			"ratelimit", rs->missed);
		rs->missed = 0;
	}
}

/*
 * The rate limit of pr_debug_ratelimited(), consulted only for a site that
 * prints or records (one load of its flags; a site whose flags were just
 * cleared is not counted).  "N callbacks suppressed" goes where the site's
 * messages go: printed undecorated with p (the kernel's line), recorded with T.
 */
static void rl_record(struct _ddebug *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kk_dd_trace_record(d, fmt, ap);
	va_end(ap);
}

#define RL_REPORT "%s: %d callbacks suppressed\n"

KK_EXPORT int __kk_dynamic_ratelimit(struct ratelimit_state *rs, struct _ddebug *d)
{
	unsigned int flags = load_flags(d);
	int report, ok;

	if (!(flags & _DPRINTK_FLAGS_ENABLED))
		return 0;
	ok = kk_ratelimit_check(rs, &report);
	if (report && (flags & _DPRINTK_FLAGS_TRACE))
		rl_record(d, RL_REPORT, d->function, report);
	if (report && (flags & _DPRINTK_FLAGS_PRINT)) {
		char line[256];
		int n = snprintf(line, sizeof(line), RL_REPORT, d->function, report);

		if (n > 0)
			emit(d, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	}
	return ok;
}

static const struct kk_fork_ops output_fork_ops = { KK_INIT_DYNDBG, NULL, NULL, reset_tid };

KK_INIT(KK_INIT_DYNDBG) static void output_init(void)
{
	kk_fork_register(&output_fork_ops);
}
