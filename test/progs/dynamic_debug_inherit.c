// SPDX-License-Identifier: MIT
/*
 * State follows fork and exec (test/scripts/dynamic_debug_inherit.sh).
 *   dynamic_debug_inherit report          print "report_site=on|off other_site=on|off"
 *   dynamic_debug_inherit api HOW [PROG [ARGS]]
 *                              apply "func report_site +p" live with the API,
 *                              fork, and in the child exec PROG (default:
 *                              this program, "report") with HOW: execv execve
 *                              execvp execvpe execl execle execlp fexecve
 *                              vfork posix_spawn posix_spawnp; relays the
 *                              child's exit status
 *   dynamic_debug_inherit api-off HOW ... the same after kk_dyndbg_set_inherit(0)
 *   dynamic_debug_inherit api-envoff HOW  as "api", with KK_DYNDBG_INHERIT=0 in the
 *                              envp of that one call (HOW takes an envp), then
 *                              again with the process's own environment
 *   dynamic_debug_inherit wait HOW ...    the same, but the state comes from outside:
 *                              prints "ready <pid>", reads a line from stdin,
 *                              then forks and execs
 *   dynamic_debug_inherit failexec        an exec that fails changes nothing: environ
 *                              keeps no KK_DYNDBG_INHERIT, a later exec works
 *   dynamic_debug_inherit fork            a forked child (no exec) keeps the state
 *   dynamic_debug_inherit many N HOW [PROG [ARGS]]
 *                              N other queries first (a large state), then
 *                              as "api", twice
 *   dynamic_debug_inherit big N HOW [PROG [ARGS]]
 *                              N more environment entries (KK_BIG_i=i), then
 *                              as "api"
 *   dynamic_debug_inherit nullenv HOW [PROG [ARGS]]
 *   dynamic_debug_inherit nullenv-off HOW [PROG [ARGS]]
 *                              as "api" / "api-off", with a NULL envp (HOW:
 *                              execve execle execvpe fexecve posix_spawn
 *                              posix_spawnp)
 *   dynamic_debug_inherit spawnloop N ENTRIES HOW [QUERIES]
 *                              ENTRIES environment entries and, with QUERIES,
 *                              that many other queries (a state over 2 KiB,
 *                              one re-applied before each spawn), then N
 *                              spawns of /bin/true with HOW; prints the
 *                              growth of the resident set (/proc/self/statm)
 *                              and fails if it is 2 MiB or more ($DD_TRUE:
 *                              another program than /bin/true)
 *
 * HOW may be vfork:F: vfork, then exec function F in the child.
 */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

#include "dynamic_debug_inherit_sites.h"

extern char **environ;

static int null_env;		/* pass a NULL envp */
static char **given_env;	/* pass this envp instead */

static char **child_env(void)
{
	return null_env ? NULL : given_env ? given_env : environ;
}

/* environ less its KK_DYNDBG_INHERIT entries, plus KK_DYNDBG_INHERIT=0. */
static char **env_opting_out(void)
{
	static char off[] = "KK_DYNDBG_INHERIT=0";
	size_t n = 0, k = 0;
	char **v;

	while (environ[n])
		n++;
	if (!(v = calloc(n + 2, sizeof(*v))))
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], "KK_DYNDBG_INHERIT=", 18))
			v[k++] = environ[i];
	v[k] = off;
	return v;
}

static const char *state(void (*f)(void))
{
	return site_on(f) ? "on" : "off";
}

static int report(void)
{
	printf("report_site=%s other_site=%s\n", state(report_site), state(other_site));
	return 0;
}

static int do_exec(const char *how, char **argv)
{
	const char *path = argv[0];
	pid_t pid;
	int st;

	if (!strcmp(how, "execv"))
		execv(path, argv);
	else if (!strcmp(how, "execve"))
		execve(path, argv, child_env());
	else if (!strcmp(how, "execvp"))
		execvp(path, argv);
	else if (!strcmp(how, "execvpe"))
		execvpe(path, argv, child_env());
	else if (!strcmp(how, "execl"))
		execl(path, argv[0], argv[1], (char *)NULL);
	else if (!strcmp(how, "execle"))
		argv[1] ? execle(path, argv[0], argv[1], (char *)NULL, child_env()) :
			  execle(path, argv[0], (char *)NULL, child_env());
	else if (!strcmp(how, "execlp"))
		execlp(path, argv[0], argv[1], (char *)NULL);
	else if (!strcmp(how, "fexecve")) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);

		if (fd >= 0)
			fexecve(fd, argv, child_env());
	} else if (!strcmp(how, "posix_spawn") || !strcmp(how, "posix_spawnp")) {
		int e = how[11] ? posix_spawnp(&pid, path, NULL, NULL, argv, child_env()) :
				  posix_spawn(&pid, path, NULL, NULL, argv, child_env());

		if (e) {
			fprintf(stderr, "%s: %s\n", how, strerror(e));
			return 127;
		}
		if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
			return 126;
		return WEXITSTATUS(st);
	} else {
		fprintf(stderr, "unknown exec %s\n", how);
		return 2;
	}
	fprintf(stderr, "%s %s: %s\n", how, path, strerror(errno));
	return 127;
}

/* Fork (or vfork) and exec argv with @how; the child's exit status. */
static int fork_exec(const char *how, char **argv)
{
	pid_t pid;
	int st;

	fflush(stdout);
	if (!strncmp(how, "posix_spawn", 11))
		return do_exec(how, argv);
	if (!strcmp(how, "vfork")) {
		pid = vfork();
		if (pid == 0) {
			execv(argv[0], argv);
			_exit(127);
		}
	} else if (!strncmp(how, "vfork:", 6)) {
		pid = vfork();
		if (pid == 0)
			_exit(do_exec(how + 6, argv));
	} else {
		pid = fork();
		if (pid == 0)
			_exit(do_exec(how, argv));
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st))
		return 126;
	return WEXITSTATUS(st);
}

/* @n environment entries KK_BIG_<i>=<i>. */
static int big_env(long n)
{
	char name[32], val[24];

	for (long i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "KK_BIG_%05ld", i);
		snprintf(val, sizeof(val), "%ld", i);
		if (setenv(name, val, 1))
			return -1;
	}
	return 0;
}

static long rss_kib(void)
{
	long size, res = -1;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return -1;
	if (fscanf(f, "%ld %ld", &size, &res) != 2)
		res = -1;
	fclose(f);
	return res < 0 ? -1 : res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* spawnloop N ENTRIES HOW [QUERIES]: the parent's resident set stays flat. */
static int spawnloop(long n, long entries, const char *how, long nq)
{
	static char *tru[] = { (char *)"/bin/true", NULL };
	char q[64];
	long before = 0, after;

	if (getenv("DD_TRUE"))		/* e.g. a name to look up in $PATH */
		tru[0] = getenv("DD_TRUE");
	if (big_env(entries))
		return 3;
	for (long i = 0; i < nq; i++) {
		snprintf(q, sizeof(q), "func kk_no_such_function_%06ld +p", i);
		if (dynamic_debug_exec_queries(q, NULL) < 0)
			return 3;
	}
	if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
		return 3;
	for (long i = -200; i < n; i++) {	/* 200 first: malloc's arenas settle */
		if (!i)
			before = rss_kib();
		/* a state change: the old string must be freed (none in flight) */
		if (nq && dynamic_debug_exec_queries("func kk_no_such_function_000000 +p",
						     NULL) < 0)
			return 3;
		if (fork_exec(how, tru)) {
			fprintf(stderr, "spawn %ld with %s failed\n", i, how);
			return 1;
		}
	}
	after = rss_kib();
	if (before < 0 || after < 0)
		return 4;
	printf("%s: %ld spawns, %ld entries: resident set grew by %ld KiB\n", how, n, entries,
	       after - before);
	return after - before >= 2048;
}

int main(int argc, char **argv)
{
	static char *dflt[] = { NULL, (char *)"report", NULL };
	char **target = dflt;
	char line[64];

	kk_dyndbg_set_sink(sink, NULL);
	if (argc < 2)
		return 2;
	dflt[0] = argv[0];
	if (argc > 3)
		target = argv + 3;
	if (!strcmp(argv[1], "report"))
		return report();
	if (!strcmp(argv[1], "fork")) {
		pid_t pid;
		int st;

		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		fflush(stdout);
		if ((pid = fork()) == 0) {
			report();
			fflush(stdout);
			_exit(0);
		}
		return waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 126;
	}
	if (!strcmp(argv[1], "failexec")) {
		char *bad[] = { (char *)"/nonexistent/kk-no-such-program", NULL };

		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		if (execv(bad[0], bad) != -1 || errno != ENOENT) {
			fprintf(stderr, "failed exec: expected ENOENT, got %s\n", strerror(errno));
			return 4;
		}
		for (char **e = environ; *e; e++)
			if (!strncmp(*e, "KK_DYNDBG_INHERIT=", 18)) {
				fprintf(stderr, "environ was changed: %s\n", *e);
				return 5;
			}
		return fork_exec("execv", dflt);
	}
	if (argc < 3)
		return 2;
	if (!strcmp(argv[1], "nullenv") || !strcmp(argv[1], "nullenv-off")) {
		null_env = 1;
		if (argv[1][7])
			kk_dyndbg_set_inherit(0);
		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		return fork_exec(argv[2], target);
	}
	if (!strcmp(argv[1], "spawnloop")) {
		if (argc < 5)
			return 2;
		return spawnloop(strtol(argv[2], NULL, 10), strtol(argv[3], NULL, 10), argv[4],
				 argc > 5 ? strtol(argv[5], NULL, 10) : 0);
	}
	if (!strcmp(argv[1], "big")) {	/* big N HOW [PROG]: a large environment */
		if (argc < 4)
			return 2;
		if (big_env(strtol(argv[2], NULL, 10)) ||
		    dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		return fork_exec(argv[3], argc > 4 ? argv + 4 : dflt);
	}
	if (!strcmp(argv[1], "api-envoff")) {
		int ret;

		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0 ||
		    !(given_env = env_opting_out()))
			return 3;
		ret = fork_exec(argv[2], target);
		fflush(stdout);
		free(given_env);
		given_env = NULL;
		return ret ? ret : fork_exec(argv[2], target);
	}
	if (!strcmp(argv[1], "api") || !strcmp(argv[1], "api-off")) {
		if (argv[1][3])
			kk_dyndbg_set_inherit(0);
		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		return fork_exec(argv[2], target);
	}
	if (!strcmp(argv[1], "many")) {	/* many N HOW [PROG]: a large state */
		char q[64];
		long n = strtol(argv[2], NULL, 10);

		if (argc < 4)
			return 2;
		for (long i = 0; i < n; i++) {
			snprintf(q, sizeof(q), "func kk_no_such_function_%06ld +p", i);
			if (dynamic_debug_exec_queries(q, NULL) < 0)
				return 3;
		}
		if (dynamic_debug_exec_queries("func report_site +p", NULL) < 0)
			return 3;
		target = argc > 4 ? argv + 4 : dflt;
		if (fork_exec(argv[3], target))
			return 1;
		return fork_exec(argv[3], target);	/* warned once */
	}
	if (!strcmp(argv[1], "wait")) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (!fgets(line, sizeof(line), stdin))
			return 4;
		return fork_exec(argv[2], target);
	}
	return 2;
}
