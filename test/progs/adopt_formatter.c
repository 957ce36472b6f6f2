// SPDX-License-Identifier: MIT
/*
 * docs/adoption.md, example 2: a server with its own printf-like formatter
 * (nginx's shape: "%V" prints a length+pointer string, which printf and so
 * pr_debug() do not know) and its own debug categories, adopted by changing
 * only its log header.
 *   adopt_formatter CONFIG
 * CONFIG holds "error_log LEVEL [debug_core] [debug_event] [debug_http]"
 * (LEVEL info or debug; "debug" alone means every category).  The server
 * prints its pid, then serves signals as adopt_syslog does:
 *   SIGUSR1  serve one request        -> "served N"
 *   SIGHUP   re-read CONFIG           -> "reloaded MASK"
 *   SIGTERM  exit
 * test/scripts/adoption.sh drives it.
 */
#define KK_MODNAME "srv"
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

/* ---- the server's log "library", as it was ------------------------------------------- */

typedef struct {
	size_t len;
	const char *data;
} srv_str_t;
#define srv_string(s) { sizeof(s) - 1, (s) }

#define SRV_LOG_ERR	3
#define SRV_LOG_INFO	6
#define SRV_LOG_DEBUG	7
/* the debug categories (nginx: NGX_LOG_DEBUG_CORE, _EVENT, _HTTP, ...) */
#define SRV_DEBUG_CORE	0
#define SRV_DEBUG_EVENT	1
#define SRV_DEBUG_HTTP	2

typedef struct {
	int log_level;		/* SRV_LOG_* */
	unsigned long debug;	/* bit N: category N */
} srv_log_t;

static srv_log_t srv_log = { SRV_LOG_INFO, 0 };

/* The formatter: %s %d %z (size_t) and %V (srv_str_t *).  No printf
 * format attribute: -Wformat would reject %V. */
static size_t srv_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap)
{
	size_t pos = 0;

#define PUT(c) do { if (pos + 1 < size) buf[pos] = (c); pos++; } while (0)
	for (; *fmt; fmt++) {
		char num[32];
		const char *s = NULL;
		size_t n = 0;

		if (*fmt != '%') {
			PUT(*fmt);
			continue;
		}
		switch (*++fmt) {
		case 'V': {
			const srv_str_t *v = va_arg(ap, const srv_str_t *);

			s = v->data;
			n = v->len;
			break;
		}
		case 's':
			s = va_arg(ap, const char *);
			n = strlen(s);
			break;
		case 'd':
			n = (size_t)snprintf(num, sizeof(num), "%d", va_arg(ap, int));
			s = num;
			break;
		case 'z':
			n = (size_t)snprintf(num, sizeof(num), "%zu", va_arg(ap, size_t));
			s = num;
			break;
		case '%':
			PUT('%');
			continue;
		default:
			return pos;	/* unknown conversion: stop, as the server's own does */
		}
		for (size_t i = 0; i < n; i++)
			PUT(s[i]);
	}
	if (size)
		buf[pos < size ? pos : size - 1] = '\0';
#undef PUT
	return pos;
}

/* One line: "srv: [level] " + @prefix + the message. */
static void srv_log_vwrite(int level, const char *prefix, const char *fmt, va_list ap)
{
	static const char *const names[] = { "emerg", "alert", "crit", "error", "warn", "notice",
					     "info", "debug" };
	char line[512];

	srv_vsnprintf(line, sizeof(line), fmt, ap);
	fprintf(stderr, "srv: [%s] %s%s\n", names[level], prefix, line);
}

/* The server's entry point for every level (nginx: ngx_log_error_core). */
static void srv_log_error_core(int level, srv_log_t *log, const char *fmt, ...)
{
	va_list ap;

	(void)log;
	va_start(ap, fmt);
	srv_log_vwrite(level, "", fmt, ap);
	va_end(ap);
}

#define srv_log_error(level, log, ...) do {					\
	if ((log)->log_level >= (level))					\
		srv_log_error_core(level, log, __VA_ARGS__);			\
} while (0)

/* ---- the adoption: only the debug macros change ---------------------------------------- */

/*
 * Each category is a class, so the server's own "error_log ... debug_http"
 * maps onto the sites through a classmap parameter (the kernel's drm.debug),
 * and kkctl reaches the same sites with "class SRV_DEBUG_HTTP +p".
 */
DECLARE_DYNDBG_CLASSMAP(srv_debug_classes, DD_CLASS_TYPE_DISJOINT_BITS, 0,
			"SRV_DEBUG_CORE", "SRV_DEBUG_EVENT", "SRV_DEBUG_HTTP");
static unsigned long srv_debug_bits;	/* the parameter's view of srv_log.debug */
static const struct ddebug_class_param srv_debug_param = {
	{ &srv_debug_bits }, "p", &srv_debug_classes,
};

/*
 * Step 1, the header-only change (what nginx did): the site calls the
 * server's own function, which gets no descriptor.  The site is the only
 * test (the server's "if (log->debug & category)" is gone: kkctl must be
 * able to switch a line on by itself).  Queries may not ask these sites for
 * decorations: the server prints the line, the library cannot add to it.
 */
#define srv_log_debug_nodesc(cat, log, fmt, ...)				\
	_dynamic_func_call_cls_no_desc(cat, fmt, srv_log_error_core,		\
				       SRV_LOG_DEBUG, log, fmt, __VA_ARGS__)

/*
 * Step 2, with the descriptor: a small wrapper asks for the prefix the
 * site's flags want (m f l s t) and hands it to the server's writer.
 */
static void srv_log_debug_core(const struct _ddebug *desc, srv_log_t *log, const char *fmt, ...)
{
	char prefix[KK_DYNDBG_PREFIX_SIZE];
	va_list ap;

	(void)log;
	va_start(ap, fmt);
	srv_log_vwrite(SRV_LOG_DEBUG, dynamic_emit_prefix(desc, prefix), fmt, ap);
	va_end(ap);
}

/* The site's format is the server's format string: "format" queries match it. */
#define srv_log_debug(cat, log, fmt, ...)					\
	_dynamic_func_call_cls(cat, fmt, srv_log_debug_core, log, fmt, __VA_ARGS__)

/*
 * The server's level decides the sites: one value for all categories, applied
 * as one batch, and only the bits that changed (what kkctl switched in
 * between stands until the server's own setting changes).
 */
static void srv_set_debug(unsigned long mask)
{
	srv_log.debug = mask;
	srv_log.log_level = mask ? SRV_LOG_DEBUG : SRV_LOG_INFO;
	if (ddebug_classparam_set(&srv_debug_param, mask) < 0)
		srv_log_error(SRV_LOG_ERR, &srv_log, "cannot switch the debug sites");
}

/* ---- the server ------------------------------------------------------------------------- */

static const char *config;

static int read_config(void)
{
	static const char *const cats[] = { "debug_core", "debug_event", "debug_http" };
	char line[256];
	FILE *f = fopen(config, "r");
	unsigned long mask = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "error_log ", 10))
			continue;
		for (char *w = strtok(line + 10, " \n"); w; w = strtok(NULL, " \n")) {
			if (!strcmp(w, "debug"))
				mask = 7;
			for (int i = 0; i < 3; i++)
				if (!strcmp(w, cats[i]))
					mask |= 1ul << i;
		}
	}
	fclose(f);
	srv_set_debug(mask);
	return 0;
}

static void handle_request(int n)
{
	srv_str_t uri = srv_string("/index.html"), method = srv_string("GET");
	size_t body = 612;

	srv_log_debug_nodesc(SRV_DEBUG_EVENT, &srv_log, "event: accept #%d", n);
	srv_log_debug(SRV_DEBUG_HTTP, &srv_log, "http request line: \"%V %V\"", &method, &uri);
	srv_log_debug(SRV_DEBUG_HTTP, &srv_log, "http output: %z bytes", body);
	srv_log_debug(SRV_DEBUG_CORE, &srv_log, "core: request %d freed", n);
	srv_log_error(SRV_LOG_INFO, &srv_log, "served %V #%d", &uri, n);
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig, served = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: adopt_formatter CONFIG\n");
		return 2;
	}
	config = argv[1];
	if (read_config()) {
		fprintf(stderr, "srv: %s: cannot open\n", config);
		return 1;
	}
	/* kkctl read/write dynamic_debug/params/srv.debug: the server's mask, live */
	kk_dyndbg_register_param("srv.debug", &srv_debug_param);

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		if (sigwait(&set, &sig))
			continue;
		if (sig == SIGTERM)
			break;
		if (sig == SIGUSR1) {
			handle_request(++served);
			fflush(stderr);
			printf("served %d\n", served);
		} else if (sig == SIGHUP) {
			read_config();
			fflush(stderr);
			printf("reloaded %lu\n", srv_log.debug);
		}
		fflush(stdout);
	}
	kk_dyndbg_unregister_param("srv.debug");
	return 0;
}
