// SPDX-License-Identifier: MIT
/*
 * kkctl: read and write the virtual files that kernelkit processes serve on
 * their control endpoints.
 *
 *   kkctl ls                              your processes that serve, reachable or not
 *   kkctl TARGETS files                   the files each target serves
 *   kkctl TARGETS read FILE               print a file of each target
 *   kkctl TARGETS write FILE [TEXT]       write TEXT (or stdin) to each target
 *   TARGETS: -p PID, -n NAME, --tree PID, -M NAME (each repeatable), --all
 *   kkctl -H [user@]host[:port] ...       the same on other hosts, over ssh
 *
 * Processes in containers (other network, pid, user namespaces) are found
 * and reached by the pid we see them as (the host pid, for root on the host).
 *
 * A process a selector matched but kkctl cannot reach is reported, never
 * skipped: kkctl says what it did not do.
 *
 * Every target gets one deadline for its whole exchange (finding its names,
 * every connect attempt, entering its namespaces, request and reply) and a
 * cap on the size of its reply: a process that passes our checks is still
 * not trusted to finish, one that never does must not hang --all or exhaust
 * our memory, and a squatter on its names must not hold us either.
 *
 * A target is a process, not a pid (a pidfd held on it): one that exits
 * is never taken for another given its pid.  One a selector matched that
 * exits during the command is reported as gone, and is no failure.
 *
 * Exit status: 0 success, 1 the operation failed (for any target), 2 usage,
 * 3 with --strict: a dynamic_debug/control query matched no site (in any
 * process reached), and nothing else failed.
 *
 * This file is the entry point: the tables of commands and options below
 * drive the parsing, the dispatch and --help (as the kernel's
 * lib/dynamic_debug.c opt_array drives both parsing and printing of flags),
 * so that a command or an option is added in one place.  The rest is in
 * tools/kkctl/, one file per job (kkctl/kkctl.h lists them).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>

#include "common/internal.h"
#include "kkctl/kkctl.h"

#ifndef KK_VERSION
#define KK_VERSION "unknown"
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

const char kkctl_prog[] = "kkctl";
bool kkctl_json;

/* What the command line gave.  Static in main(): still reachable on an early
 * exit (no leak reports). */
struct args {
	struct kkctl_sel sel;
	const char **hosts;	/* -H */
	int nh;
	bool follow;		/* -f */
};

/* ---- the options --------------------------------------------------------- */

static int opt_pid(struct args *a, int key, char *arg);
static int opt_name(struct args *a, int key, char *arg);
static int opt_machine(struct args *a, int key, char *arg);
static int opt_unit(struct args *a, int key, char *arg);
static int opt_host(struct args *a, int key, char *arg);
static int opt_all(struct args *a, int key, char *arg);
static int opt_json(struct args *a, int key, char *arg);
static int opt_follow(struct args *a, int key, char *arg);
static int opt_bound(struct args *a, int key, char *arg);
static int opt_strict(struct args *a, int key, char *arg);
static int opt_strict(struct args *a, int key, char *arg)
{
	(void)a;
	(void)key;
	(void)arg;
	kkctl_strict = true;
	return -1;
}

static int opt_version(struct args *a, int key, char *arg);
static int opt_help(struct args *a, int key, char *arg);

/*
 * Each option: its names, its argument's name in --help (NULL: it takes
 * none), how a remote kkctl (-H) is given it (NULL: it is not), what sets it
 * (-1 to go on parsing, else the exit status), and its --help text (lines
 * after the first are indented under it; NULL: not listed).  In --help's
 * order; targets first.
 */
static const struct option_def {
	const char *name;
	int key;		/* the short option, or a KKCTL_OPT_ */
	const char *arg;
	const char *remote;
	int (*set)(struct args *a, int key, char *arg);
	bool target;		/* listed under "targets" */
	const char *help;
} options[] = {
	{ "pid", 'p', "PID", "-p", opt_pid, true, "the process PID" },
	{ "name", 'n', "NAME", "-n", opt_name, true,
	  "every process with an endpoint named NAME (its command\n"
	  "name or the base name of argv[0], like pgrep -x)" },
	{ "tree", 'T', "PID", "--tree", opt_pid, true,
	  "PID and its descendants that have an endpoint; with -n,\n"
	  "only those named NAME" },
	{ "all", 'a', NULL, "--all", opt_all, true,
	  "every process with an endpoint that runs as you (real or\n"
	  "effective uid; as root: every user's)" },
	{ "machine", 'M', "NAME", "-M", opt_machine, true,
	  "the processes of the container NAME (its host name, or\n"
	  "a component of its cgroup path); with -M, -p PID is the\n"
	  "pid inside the container" },
	{ "unit", 'u', "UNIT", "-u", opt_unit, true,
	  "the processes of the systemd unit UNIT (a service, scope\n"
	  "or slice, by its cgroup; \".service\" is assumed when UNIT\n"
	  "has no type suffix, as systemctl does)" },
	{ "user-unit", KKCTL_OPT_USER_UNIT, "UNIT", "--user-unit", opt_unit, true,
	  "the same, for a unit of your user manager\n"
	  "(user@UID.service, UID your real uid)" },
	{ "host", 'H', "[USER@]HOST[:PORT]", NULL, opt_host, false,
	  "run the command on HOST over ssh (repeatable:\n"
	  "in parallel, each reply after \"==> HOST <==\"; --json\n"
	  "objects get \"host\"); $KKCTL_SSH replaces \"ssh -T -x -a\",\n"
	  "$KKCTL_REMOTE the remote \"kkctl\"" },
	{ "json", 'j', NULL, "--json", opt_json, false,
	  "one JSON object per line (per process for files/read/write)" },
	{ "follow", 'f', NULL, NULL, opt_follow, false,
	  "with read: read again and again until interrupted or a\n"
	  "followed process exits (the process, not its pid;\n"
	  "dynamic_debug/trace_pipe waits for its next records, so\n"
	  "this streams them; not with -H)" },
	{ "timeout", 't', "SECONDS", "--timeout", opt_bound, false,
	  "one deadline for each target's whole exchange (its\n"
	  "names, connecting, entering its namespaces, request\n"
	  "and reply; default 10, or $KKCTL_TIMEOUT)" },
	{ "max-reply", KKCTL_OPT_MAX_REPLY, "SIZE", "--max-reply", opt_bound, false,
	  "give up on a target whose reply is larger (bytes,\n"
	  "suffix K, M or G; default 64M, or $KKCTL_MAX_REPLY)" },
	{ "jobs", KKCTL_OPT_JOBS, "N", "--jobs", opt_bound, false,
	  "serve up to N targets at once (1 to 64; default 8, or\n"
	  "$KKCTL_JOBS); replies still print in target order" },
	{ "strict", KKCTL_OPT_STRICT, NULL, "--strict", opt_strict, false,
	  "with write dynamic_debug/control: a query that matched\n"
	  "no site in any process reached is an error (exit status\n"
	  "3), not only a warning" },
	{ "version", 'V', NULL, NULL, opt_version, false, "print the version" },
	{ "help", 'h', NULL, NULL, opt_help, false, "show this help" },
};

/* Parse a pid for -p or --tree (@key).  Each -p is also kept as a pid inside
 * a container, in case -M comes. */
static int opt_pid(struct args *a, int key, char *arg)
{
	struct kkctl_sel *s = &a->sel;
	struct target t = { 0 };
	char *end;
	long pid = strtol(arg, &end, 10);

	if (*end || pid <= 0 || pid > 0x7fffffff) {
		fprintf(stderr, "%s: bad pid: %s\n", kkctl_prog, arg);
		return 2;
	}
	if (key == 'T') {
		s->trees[s->nt++] = (pid_t)pid;
		return -1;
	}
	s->mpids[s->nmp++] = (pid_t)pid;
	t.pid = (pid_t)pid;
	return kkctl_tlist_add(&s->targets, &t) < 0 ? 1 : -1;
}

static int opt_name(struct args *a, int key, char *arg)
{
	(void)key;
	a->sel.names[a->sel.nn++] = arg;
	return -1;
}

static int opt_machine(struct args *a, int key, char *arg)
{
	(void)key;
	a->sel.machines[a->sel.nm++] = arg;
	return -1;
}

static int opt_unit(struct args *a, int key, char *arg)
{
	if (!arg[0] || strchr(arg, '/')) {
		fprintf(stderr, "%s: bad unit name: '%s'\n", kkctl_prog, arg);
		return 2;
	}
	a->sel.units[a->sel.nu].name = arg;
	a->sel.units[a->sel.nu++].user = key != 'u';
	return -1;
}

/* A host is checked now: a bad one is a usage error before any host runs. */
static int opt_host(struct args *a, int key, char *arg)
{
	char dest[512], port[8];

	(void)key;
	if (kkctl_parse_host(arg, dest, sizeof(dest), port, sizeof(port))) {
		fprintf(stderr, "%s: bad host: ", kkctl_prog);
		kkctl_put_escaped(stderr, arg, strlen(arg), "");
		fputs(" (want [user@]host[:port])\n", stderr);
		return 2;
	}
	a->hosts[a->nh++] = arg;
	return -1;
}

static int opt_all(struct args *a, int key, char *arg)
{
	(void)key;
	(void)arg;
	a->sel.all = true;
	return -1;
}

static int opt_json(struct args *a, int key, char *arg)
{
	(void)a;
	(void)key;
	(void)arg;
	kkctl_json = true;
	return -1;
}

static int opt_follow(struct args *a, int key, char *arg)
{
	(void)key;
	(void)arg;
	a->follow = true;
	return -1;
}

static int opt_bound(struct args *a, int key, char *arg)
{
	(void)a;
	return kkctl_bound_option(key, arg) ? 2 : -1;
}

static int opt_version(struct args *a, int key, char *arg)
{
	(void)a;
	(void)key;
	(void)arg;
	printf("kkctl (kernelkit) %s\n", KK_VERSION);
	return 0;
}

static void usage(FILE *f);

static int opt_help(struct args *a, int key, char *arg)
{
	(void)a;
	(void)key;
	(void)arg;
	usage(stdout);
	return 0;
}

/* ---- the commands -------------------------------------------------------- */

struct command_def;
static int cmd_ls(struct args *a, const struct command_def *c, char **argv);
static int cmd_request(struct args *a, const struct command_def *c, char **argv);
static int cmd_record(struct args *a, const struct command_def *c, char **argv);

/*
 * Each command: its name, the verb the endpoint is sent (NULL: none), how
 * many arguments it takes, whether it takes targets (ls takes only -M),
 * whether it sends a text (its second argument, else standard input), what
 * runs it, its synopsis and its --help text (lines after the first indented
 * under it).
 */
static const struct command_def {
	const char *name, *verb;
	int min_args, max_args;
	bool targets, text;
	int (*run)(struct args *a, const struct command_def *c, char **argv);
	const char *synopsis, *help;
} commands[] = {
	{ "ls", NULL, 0, 0, false, false, cmd_ls, "[-H HOST]... [-M NAME]... [--json] ls",
	  "list the live processes of yours that serve an endpoint (as root:\n"
	  "every user's), those you cannot reach marked with why" },
	{ "files", "list", 0, 0, true, false, cmd_request, "[--json] TARGET... files",
	  "list the virtual files a process serves" },
	{ "read", "read", 1, 1, true, false, cmd_request, "[--json] TARGET... read FILE",
	  "print a file" },
	{ "write", "write", 1, 2, true, true, cmd_request, "[--json] TARGET... write FILE [TEXT]",
	  "write TEXT to a file; without TEXT, read it from standard input" },
	{ "record", NULL, 1, INT_MAX, true, false, cmd_record,
	  "TARGET... record [-o PATH] [--format F] [--duration S] [--count N]\n"
	  "       [--threads TID|NAME,...] [--wallclock] QUERY...",
	  "record a trace session: QUERY (\"module http +T\") in a session\n"
	  "in every target (and in those that start), their records merged\n"
	  "by time into PATH (--format ctf (default), perfetto: kk-trace;\n"
	  "jsonl, text: standard output), until Ctrl-C, SIGTERM, --duration\n"
	  "seconds or --count records; then every site is put back" },
};

/* ---- --help, from the tables --------------------------------------------- */

/* @text, its first line after what is printed already, the others indented
 * to column @indent. */
static void put_help(FILE *f, const char *text, int indent)
{
	for (const char *nl; (nl = strchr(text, '\n')); text = nl + 1)
		fprintf(f, "%.*s\n%*s", (int)(nl - text), text, indent, "");
	fprintf(f, "%s\n", text);
}

/* The options of one group: "  -p, --pid PID     the process PID". */
static void put_options(FILE *f, bool targets)
{
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		const struct option_def *o = &options[i];
		char names[64];

		if (!o->help || o->target != targets)
			continue;
		if (o->key < 256)
			snprintf(names, sizeof(names), "-%c, --%s%s%s", o->key, o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		else
			snprintf(names, sizeof(names), "    --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		fprintf(f, "  %-16s  ", names);
		put_help(f, o->help, 20);
	}
}

static void usage(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "%s %s %s\n", i ? "      " : "usage:", kkctl_prog, commands[i].synopsis);
	fprintf(f, "       %s --version | --help\n\n", kkctl_prog);
	fputs("Talk to the control endpoint of processes that use kernelkit.\n", f);
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		fprintf(f, "  %-6s  ", commands[i].name);
		put_help(f, commands[i].help, 10);
	}
	fputs("\ntargets (may be combined and repeated):\n", f);
	put_options(f, true);
	fputs("options:\n", f);
	put_options(f, false);
	fputs("\n"
	      "With several targets, each reply is preceded by a line \"==> PID NAME <==\".\n"
	      "A matched process kkctl cannot reach is reported, not skipped.  Processes in\n"
	      "containers are found and reached by the pid you see them as.  Process PID\n"
	      "serves the abstract Unix socket @kernelkit/PID.  Exit status: 0 ok, 1 failed\n"
	      "(for any target), 2 usage, 3 --strict: a query matched no site.\n", f);
}

/* ---- parsing ------------------------------------------------------------- */

/* The getopt_long() tables, made from options[]. */
static void getopt_tables(struct option *longs, char *shorts)
{
	char *s = shorts;

	*s++ = '+';		/* stop at the command: its arguments are not options */
	for (size_t i = 0; i < ARRAY_SIZE(options); i++) {
		const struct option_def *o = &options[i];

		longs[i] = (struct option){ o->name, o->arg ? required_argument : no_argument,
					    NULL, o->key };
		if (o->key < 256) {
			*s++ = (char)o->key;
			if (o->arg)
				*s++ = ':';
		}
	}
	longs[ARRAY_SIZE(options)] = (struct option){ NULL, 0, NULL, 0 };
	*s = '\0';
}

/* Room for every option of argv to be one selector or host. */
static int args_alloc(struct args *a, int argc)
{
	struct kkctl_sel *s = &a->sel;
	size_t n = (size_t)argc + 1;

	s->names = calloc(n, sizeof(char *));
	s->trees = calloc(n, sizeof(pid_t));
	s->machines = calloc(n, sizeof(char *));
	s->mpids = calloc(n, sizeof(pid_t));
	s->units = calloc(n, sizeof(*s->units));
	a->hosts = calloc(n, sizeof(char *));
	return s->names && s->trees && s->machines && s->mpids && s->units && a->hosts ? 0 : -1;
}

/* Parse the options into @a, each also kept for a remote kkctl (-H).  -1 to
 * go on, else the exit status (--help, --version, or a bad option). */
static int parse_options(struct args *a, int argc, char **argv)
{
	struct option longs[ARRAY_SIZE(options) + 1];
	char shorts[2 * ARRAY_SIZE(options) + 2];
	int c;

	getopt_tables(longs, shorts);
	while ((c = getopt_long(argc, argv, shorts, longs, NULL)) != -1) {
		const struct option_def *o = NULL;
		int st;

		for (size_t i = 0; i < ARRAY_SIZE(options) && !o; i++)
			if (options[i].key == c)
				o = &options[i];
		if (!o) {
			fprintf(stderr, "try '%s --help'\n", kkctl_prog);
			return 2;
		}
		if (o->remote && kkctl_remote_arg(o->remote, o->arg ? optarg : NULL))
			return 1;
		if ((st = o->set(a, c, optarg)) >= 0)
			return st;
	}
	return -1;
}

/* "ls, files, read, write" */
static void put_command_names(FILE *f)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "%s%s", i ? ", " : "", commands[i].name);
}

/* The command @name, or NULL after saying it is unknown. */
static const struct command_def *find_command(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(name, commands[i].name))
			return &commands[i];
	fprintf(stderr, "%s: unknown command '", kkctl_prog);
	kkctl_put_escaped(stderr, name, strlen(name), "");
	fputs("' (commands: ", stderr);
	put_command_names(stderr);
	fprintf(stderr, "); try '%s --help'\n", kkctl_prog);
	return NULL;
}

/* Does @c get what it takes: @nargs arguments, targets if it wants them? */
static bool usage_ok(const struct args *a, const struct command_def *c, int nargs)
{
	const struct kkctl_sel *s = &a->sel;
	bool any = s->targets.n || s->nn || s->nt || s->nu || s->all;

	if (!c->targets && (nargs || any)) {
		fprintf(stderr, "%s: %s takes no target and no argument (but -M)\n", kkctl_prog,
			c->name);
		return false;
	}
	if (nargs < c->min_args || nargs > c->max_args) {
		fprintf(stderr, "%s: wrong number of arguments for %s; try '%s --help'\n",
			kkctl_prog, c->name, kkctl_prog);
		return false;
	}
	if (c->targets && !any && !s->nm) {
		fprintf(stderr, "%s: %s needs a target: -p PID, -n NAME, --tree PID, -u UNIT or --all\n",
			kkctl_prog, c->name);
		return false;
	}
	return true;
}

/* ---- running the commands ------------------------------------------------ */

/* Read a file until EOF into a malloc'ed, NUL-terminated buffer. */
static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0 && ferror(f)) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* ls: what --all matches, each tried (as a request would be) and marked if
 * we cannot reach it. */
static int cmd_ls(struct args *a, const struct command_def *c, char **argv)
{
	struct tlist all = { 0 };

	(void)c;
	(void)argv;
	if (a->nh)
		return kkctl_run_hosts(a->hosts, a->nh, NULL, 0);
	a->sel.all = true;
	if (kkctl_load_procs() || kkctl_select_procs(&all, &a->sel) < 0)
		return 1;
	kkctl_report_ls_header();
	for (size_t i = 0; i < all.n; i++) {
		struct target *t = &all.v[i];
		uint64_t deadline;
		struct result r = { 0 };
		int tries = 1, fd;

		if (t->contained && !t->host[0])
			kkctl_proc_hostname(t->pid, t->host, sizeof(t->host));
		deadline = kk_now_ns() + (uint64_t)(kkctl_bounds.timeout_s * 1e9);
		fd = kkctl_reach_pid(t, deadline, &tries, &r);
		if (fd >= 0)
			close(fd);
		else
			kkctl_settle_gone(t, &r);
		kkctl_report_ls(t, fd >= 0, &r);
	}
	kkctl_tlist_free(&all);
	return fflush(stdout) ? 1 : 0;
}

/* Free what the command line took (an early exit leaves it: see struct
 * args). */
static void args_free(struct args *a)
{
	kkctl_free_procs();
	kkctl_tlist_free(&a->sel.targets);
	free(a->sel.names);
	free(a->sel.trees);
	free(a->sel.machines);
	free(a->sel.mpids);
	free(a->sel.units);
}

/*
 * -f: one more read of every target.  A file that answers at once (not
 * trace_pipe, which waits for records) is read at most every
 * FOLLOW_MIN_NS, so that following it does not spin.
 */
#define FOLLOW_MIN_NS 100000000ull
static bool follow_round(struct args *a, const struct command_def *c, const char *file)
{
	static uint64_t last;
	uint64_t now = kk_now_ns();

	if (last && now - last < FOLLOW_MIN_NS)
		kkctl_wait_fd(-1, 0, last + FOLLOW_MIN_NS);
	last = kk_now_ns();
	return kkctl_serve_all(&a->sel.targets, c->verb, file, NULL, 0);
}

/* Drop the targets found gone (each said so once).  How many are left. */
static size_t drop_gone(struct tlist *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		if (!l->v[i].gone)
			l->v[n++] = l->v[i];
		else
			kkctl_target_unwatch(&l->v[i]);
	return l->n = n;
}

/* record: kkctl/record.c (argv[-1] is "record"). */
static int cmd_record(struct args *a, const struct command_def *c, char **argv)
{
	int argc = 1, st;

	(void)c;
	while (argv[argc - 1])
		argc++;
	st = kkctl_record_main(&a->sel, a->hosts, a->nh, argc, argv - 1);
	args_free(a);
	return st;
}

/* files, read, write: the request to every target (or, with -H, to every
 * host's kkctl). */
static int cmd_request(struct args *a, const struct command_def *c, char **argv)
{
	static char *stdin_text;	/* static: reachable on an early exit */
	const char *file = argv[0], *text = NULL;
	size_t tlen = 0;
	bool failed, unmatched;

	if (file && strlen(file) >= KK_CONTROL_NAME_MAX) {
		fprintf(stderr, "%s: file name too long: %s\n", kkctl_prog, file);
		return 2;
	}
	if (c->text && argv[1]) {
		text = argv[1];
		tlen = strlen(text);
	} else if (c->text) {
		stdin_text = slurp(stdin, &tlen);
		if (!stdin_text) {
			fprintf(stderr, "%s: reading standard input: %s\n", kkctl_prog,
				strerror(errno));
			return 1;
		}
		text = stdin_text;
	}
	if (a->nh) {
		int st = kkctl_run_hosts(a->hosts, a->nh, stdin_text, stdin_text ? tlen : 0);

		free(stdin_text);
		return st;
	}
	/* a dynamic_debug/control write: checked, maybe cut (kkctl/ddctl.c) */
	if (c->text && kkctl_dd_prepare(c->verb, file, text, tlen))
		return 1;
	/* each target served as soon as it is selected (kkctl/select.c) */
	if (kkctl_select_serve(&a->sel, c->verb, file, text, tlen, &failed))
		return 1;
	unmatched = kkctl_dd_finish();
	/* -f follows processes, not pids: one that exits ends it, with its
	 * line ("exited"), and is never taken for another with its pid. */
	while (a->follow && !failed && !fflush(stdout) && drop_gone(&a->sel.targets))
		failed = follow_round(a, c, file);
	free(stdin_text);
	args_free(a);
	if (fflush(stdout))
		return 1;
	return failed ? 1 : unmatched && kkctl_strict ? 3 : 0;
}

int main(int argc, char **argv)
{
	static struct args a;
	const struct command_def *c;
	int st;

	if (args_alloc(&a, argc))
		return 1;
	if ((st = parse_options(&a, argc, argv)) >= 0)
		return st;
	if (kkctl_bounds_from_env())
		return 2;
	if (a.nh && kkctl_bounds_forward())
		return 1;
	kkctl_userns_load();
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		fprintf(stderr, "%s: no command (commands: ", kkctl_prog);
		put_command_names(stderr);
		fprintf(stderr, "); try '%s --help'\n", kkctl_prog);
		return 2;
	}
	if (!(c = find_command(argv[0])))
		return 2;
	for (int i = 0; i < argc; i++)
		if (kkctl_remote_arg(argv[i], NULL))
			return 1;
	if (!usage_ok(&a, c, argc - 1))
		return 2;
	if (a.follow && (strcmp(c->name, "read") || a.nh)) {
		fprintf(stderr, "%s: -f goes with read, and not with -H\n", kkctl_prog);
		return 2;
	}
	return c->run(&a, c, argv + 1);
}
