// SPDX-License-Identifier: MIT
/*
 * Threads apply queries live while another thread execs again and again
 * (vfork+execve: the child reads the parent's memory while the togglers run;
 * posix_spawn; fork+execv).  Every exec'd image must get a well-formed state
 * (each line one of the queries applied, none twice: the state before or
 * after some change, never a torn or freed string), and its sites must be in
 * the state that state says.  Exit 0 = pass.
 */
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

#include "dynamic_debug_inherit_sites.h"

#define ITERS		150
#define TOGGLERS	2

static const char *const queries[] = {
	"func report_site +p", "func report_site -p",
	"func other_site +p", "func other_site -p",
};
#define NQ (sizeof(queries) / sizeof(queries[0]))

extern char **environ;
static atomic_int stop;

/* The exec'd image: is the state well formed, and are the sites as it says? */
static int child(void)
{
	const char *v = getenv("KK_DYNDBG_INHERIT");
	char *copy, *line, *save;
	int seen[NQ] = { 0 }, want_report = 0, want_other = 0;

	if (!v) {
		fprintf(stderr, "child: no KK_DYNDBG_INHERIT\n");
		return 1;
	}
	copy = strdup(v);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		size_t i;

		for (i = 0; i < NQ && strcmp(line, queries[i]); i++)
			;
		if (i == NQ || seen[i]++) {
			fprintf(stderr, "child: bad state line '%s' in '%s'\n", line, v);
			return 1;
		}
		if (i < 2)
			want_report = i == 0;
		else
			want_other = i == 2;
	}
	free(copy);
	if (site_on(report_site) != want_report || site_on(other_site) != want_other) {
		fprintf(stderr, "child: sites %d %d, state '%s'\n", site_on(report_site),
			site_on(other_site), v);
		return 1;
	}
	return 0;
}

static void *toggler(void *arg)
{
	unsigned int seed = (unsigned int)(unsigned long)arg;

	while (!atomic_load(&stop))
		if (dynamic_debug_exec_queries(queries[rand_r(&seed) % NQ], NULL) < 0)
			abort();
	return NULL;
}

int main(int argc, char **argv)
{
	char self[4096], *cargv[] = { self, (char *)"child", NULL };
	pthread_t t[TOGGLERS];
	int fails = 0;
	ssize_t n;

	kk_dyndbg_set_sink(sink, NULL);
	if (argc > 1 && !strcmp(argv[1], "child"))
		return child();
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0) {
		perror("readlink /proc/self/exe");
		return 77;
	}
	self[n] = '\0';
	if (dynamic_debug_exec_queries(queries[0], NULL) < 0)
		return 1;
	for (int i = 0; i < TOGGLERS; i++)
		if (pthread_create(&t[i], NULL, toggler, (void *)(unsigned long)(i + 1)))
			return 1;
	for (int i = 0; i < ITERS; i++) {
		pid_t pid = -1;
		int st;

		switch (i % 3) {
		case 0:
			pid = vfork();
			if (pid == 0) {
				execve(self, cargv, environ);
				_exit(127);
			}
			break;
		case 1:
			if (posix_spawn(&pid, self, NULL, NULL, cargv, environ))
				pid = -1;
			break;
		case 2:
			pid = fork();
			if (pid == 0) {
				execv(self, cargv);
				_exit(127);
			}
			break;
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			fprintf(stderr, "iteration %d (%s): failed\n", i,
				i % 3 == 0 ? "vfork" : i % 3 == 1 ? "posix_spawn" : "fork");
			fails++;
		}
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < TOGGLERS; i++)
		pthread_join(t[i], NULL);
	printf("%d execs, %d failed\n", ITERS, fails);
	return fails ? 1 : 0;
}
