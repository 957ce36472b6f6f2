// SPDX-License-Identifier: MIT
/*
 * Run a command and write the largest resident set it (or any process it
 * waited for) reached, in KiB, to FILE; exit with its status (128 + the
 * signal if one killed it).  /usr/bin/time -f %M, without needing time(1).
 *   maxrss FILE COMMAND [ARG...]
 */
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct rusage ru;
	int status;
	pid_t pid;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: maxrss FILE COMMAND [ARG...]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		perror("maxrss: fork");
		return 1;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		perror("maxrss: exec");
		_exit(127);
	}
	/* wait4() reports the child's usage and that of the children it waited
	 * for: a timeout(1) in between still reports the command's. */
	if (wait4(pid, &status, 0, &ru) != pid) {
		perror("maxrss: wait4");
		return 1;
	}
	f = fopen(argv[1], "w");
	if (!f || fprintf(f, "%ld\n", ru.ru_maxrss) < 0 || fclose(f)) {
		perror("maxrss: FILE");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
