// SPDX-License-Identifier: MIT
/*
 * Dynamic debug output: the decoration "[tid] module:func:file:line: ", the
 * sinks (stderr, a callback, syslog), hex dumps, the stack dump of the 'd'
 * flag, and the rate limit of pr_debug_ratelimited().
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static void emit(const struct _ddebug *desc, const char *msg, size_t len)
{
	struct sink *s = atomic_load_explicit(&cur_sink, memory_order_acquire);

	if (s) {
		s->fn(desc, msg, len, s->arg);
		return;
	}
	/* one fwrite: the line is not torn by other threads' stdio on stderr */
	fwrite(msg, 1, len, stderr);
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

/* "[tid] module:func:file:line: " for the decoration flags set in @flags. */
static size_t prefix(const struct _ddebug *d, unsigned int flags, char *buf, size_t len)
{
	size_t pos = 0, after_tid;
	int n;

#define ADD(...) do {								\
		n = snprintf(pos < len ? buf + pos : NULL, pos < len ? len - pos : 0, \
			     __VA_ARGS__);					\
		if (n > 0)							\
			pos += (size_t)n;					\
	} while (0)
	if (flags & _DPRINTK_FLAGS_INCL_TID)
		ADD("[%d] ", (int)my_tid());
	after_tid = pos;
	if (flags & _DPRINTK_FLAGS_INCL_MODNAME)
		ADD("%s:", d->modname ? d->modname : "?");
	if (flags & _DPRINTK_FLAGS_INCL_FUNCNAME)
		ADD("%s:", d->function);
	if (flags & _DPRINTK_FLAGS_INCL_SOURCENAME)
		ADD("%s:", kk_dd_rel_name(d->filename));
	if (flags & _DPRINTK_FLAGS_INCL_LINENO)
		ADD("%u:", (unsigned int)d->lineno);
	if (pos != after_tid)
		ADD(" ");
#undef ADD
	return pos;
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

#define LINE_BUF 512

/* Print one message, decorated as @flags (the call's one load of them) say. */
__attribute__((noinline)) static void vprint(struct _ddebug *d, unsigned int flags, const char *fmt,
					     va_list ap)
{
	char stack[LINE_BUF], *buf = stack;
	size_t pre, len;
	va_list ap2;
	int n;

	/* the time first, as printk puts it before everything (print_time.c) */
	pre = kk_dd_time_prefix(stack, sizeof(stack));
	if (flags & _DPRINTK_FLAGS_INCL_ANY)
		pre += prefix(d, flags, stack + pre, sizeof(stack) - pre);
	if (pre >= sizeof(stack))
		pre = sizeof(stack) - 1;
	va_copy(ap2, ap);
	n = vsnprintf(stack + pre, sizeof(stack) - pre, fmt, ap);
	if (n < 0) {
		va_end(ap2);
		return;
	}
	len = pre + (size_t)n;
	if (len + 2 > sizeof(stack)) {
		buf = malloc(len + 2);
		if (buf) {
			memcpy(buf, stack, pre);
			vsnprintf(buf + pre, (size_t)n + 1, fmt, ap2);
		} else {
			buf = stack;	/* truncated is better than nothing */
			len = sizeof(stack) - 2;
		}
	}
	va_end(ap2);
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
	va_list ap;

	va_start(ap, fmt);
	vout(descriptor, load_flags(descriptor), fmt, ap);
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
