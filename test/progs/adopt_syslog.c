// SPDX-License-Identifier: MIT
/*
 * docs/adoption.md, example 1: a syslog-style daemon whose debug() lines
 * became pr_debug() sites, and whose own "log_level" still decides them.
 *   adopt_syslog CONFIG [-s]
 * CONFIG holds "log_level LEVEL" (emerg .. debug, or 0..7).  -s: log to
 * syslog(3) instead of stderr.  The daemon prints its pid on stdout, then
 * serves signals (its "requests"), answering each on stdout once its log
 * lines are written:
 *   SIGUSR1  serve one request        -> "served N"
 *   SIGHUP   re-read CONFIG           -> "reloaded LEVEL"
 *   SIGTERM  exit
 * test/scripts/adoption.sh drives it.
 */
#define KK_MODNAME "adopt_syslog"	/* the module name of every site below */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

static const char *const level_names[] = {
	"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
};

/* ---- the daemon's logging, as it was ------------------------------------------------ */

static int log_level = LOG_INFO;	/* the daemon's own; set by set_log_level() */
static int use_syslog;

static void log_line(int prio, const char *line)
{
	if (use_syslog)
		syslog(prio, "%s", line);
	else
		fprintf(stderr, "adopt_syslog: %s: %s", level_names[prio], line);
}

__attribute__((format(printf, 2, 3))) static void logmsg(int prio, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (prio > __atomic_load_n(&log_level, __ATOMIC_RELAXED))
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_line(prio, line);
}

#define err(...)	logmsg(LOG_ERR, __VA_ARGS__)
#define info(...)	logmsg(LOG_INFO, __VA_ARGS__)
/*
 * Was: #define debug(...) logmsg(LOG_DEBUG, __VA_ARGS__), a call and a level
 * test on every line.  Now each debug() is a site: one NOP while it is off,
 * switched by the daemon's level (set_log_level) and by queries.
 */
#define debug(...)	pr_debug(__VA_ARGS__)

/* Debug lines go where the others go: syslog or stderr, in the same shape. */
static void debug_sink(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	(void)desc;
	(void)arg;
	(void)len;
	log_line(LOG_DEBUG, msg);	/* msg: decorated as the site's flags ask, '\n' ended */
}

/*
 * The daemon's level decides its sites.  Only a change of the debug/not
 * debug state is applied, so what an operator switched live (kkctl)
 * stands until the level itself changes, and a reload that keeps the
 * level keeps it too.  kk_dyndbg_set_module_queries() covers objects of
 * the module loaded later (dlopen'ed plugins).
 */
static void set_log_level(int level)
{
	int was = __atomic_exchange_n(&log_level, level, __ATOMIC_RELAXED) >= LOG_DEBUG;
	int now = level >= LOG_DEBUG;

	if (was == now)
		return;
	if (dynamic_debug_exec_queries(now ? "+p" : "-p", KK_MODNAME) < 0 ||
	    kk_dyndbg_set_module_queries(KK_MODNAME, now ? "+p" : NULL) < 0)
		err("cannot switch the debug sites %s\n", now ? "on" : "off");
}

static int parse_level(const char *s, size_t n)
{
	for (int i = 0; i < 8; i++)
		if (strlen(level_names[i]) == n && !strncmp(s, level_names[i], n))
			return i;
	if (n == 1 && s[0] >= '0' && s[0] <= '7')
		return s[0] - '0';
	return -1;
}

/* The level as a module parameter: dynamic_debug/params/adopt_syslog.log_level. */
static int log_level_set(const char *val, const struct kernel_param *kp)
{
	int l = parse_level(val, strcspn(val, " \n"));

	(void)kp;
	if (l < 0)
		return -22;	/* -EINVAL: nothing changed */
	set_log_level(l);
	return 0;
}

static int log_level_get(char *buf, const struct kernel_param *kp)
{
	(void)kp;
	return snprintf(buf, KK_PARAM_BUFSIZE, "%s\n",
			level_names[__atomic_load_n(&log_level, __ATOMIC_RELAXED)]);
}

static const struct kernel_param_ops log_level_ops = { 0, log_level_set, log_level_get, NULL };
static const struct kernel_param log_level_param = {
	"log_level", NULL, &log_level_ops, 0644, -1, 0, NULL,
};

/* ---- the daemon ----------------------------------------------------------------------- */

static const char *config;

static int read_config(void)
{
	char line[256];
	FILE *f = fopen(config, "r");
	int level = -1;

	if (!f) {
		err("%s: cannot open\n", config);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		debug("config line: %s", line);
		if (!strncmp(line, "log_level ", 10))
			level = parse_level(line + 10, strcspn(line + 10, " \n"));
	}
	fclose(f);
	if (level < 0) {
		err("%s: no valid log_level\n", config);
		return -1;
	}
	set_log_level(level);
	return 0;
}

static void parse_request(int n)
{
	debug("parsing request %d\n", n);
}

static void handle_request(int n)
{
	parse_request(n);
	debug("request %d: handled in %d steps\n", n, 3);
	info("served request %d\n", n);
}

int main(int argc, char **argv)
{
	sigset_t set;
	int sig, served = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: adopt_syslog CONFIG [-s]\n");
		return 2;
	}
	config = argv[1];
	use_syslog = argc > 2 && !strcmp(argv[2], "-s");
	if (use_syslog)
		openlog("adopt_syslog", LOG_PID, LOG_DAEMON);
	kk_dyndbg_set_sink(debug_sink, NULL);
	if (read_config())
		return 1;
	if (kk_module_param_register(KK_MODNAME, &log_level_param))
		err("cannot serve log_level\n");

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
			printf("reloaded %s\n", level_names[__atomic_load_n(&log_level, __ATOMIC_RELAXED)]);
		}
		fflush(stdout);
	}
	kk_module_param_unregister(KK_MODNAME, &log_level_param);
	return 0;
}
