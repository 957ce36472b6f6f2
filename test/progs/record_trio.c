// SPDX-License-Identifier: MIT
/*
 * A master and its workers, for kkctl record's script tests
 * (test/scripts/kkctl_record*.sh).  The master forks two workers at start;
 * every process has the pr_debug site of trio_tick().  The master reads one
 * command per line on stdin and answers one line on stdout, so that the
 * script orders everything through the pipe, not by sleeping:
 *
 *   pids        "ok MASTER W1 W2 ..." (the live workers)
 *   emit N      every process (master first, then each worker) runs
 *               trio_tick() N times; answered once all have
 *   spawn       fork one more worker (it inherits the master's sites and
 *               its trace session); "ok PID"
 *   kill I      SIGKILL worker I (1-based) and reap it; "ok"
 *   quit        the workers are told to exit, reaped; exit(0)
 *
 * Answers: "ok[ detail]" or "fail what".
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

enum { MAX_WORKERS = 16 };

static struct worker {
	pid_t pid;
	int cmd;	/* its command pipe */
} workers[MAX_WORKERS];
static int nworkers, ack[2];

void trio_tick(int n, const char *who)
{
	pr_debug("trio tick n=%d who=%s\n", n, who);
}

static void emit(int n, const char *who)
{
	for (int i = 0; i < n; i++)
		trio_tick(i, who);
}

/* A worker: "emit N" lines on @fd, each acknowledged with one byte. */
static void worker_loop(int fd, int idx)
{
	char who[16], line[64];
	FILE *in = fdopen(fd, "r");

	snprintf(who, sizeof(who), "w%d", idx);
	while (in && fgets(line, sizeof(line), in)) {
		int n;

		if (sscanf(line, "emit %d", &n) == 1)
			emit(n, who);
		if (write(ack[1], "k", 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static int spawn(void)
{
	int p[2];
	pid_t pid;

	if (nworkers == MAX_WORKERS || pipe(p))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		close(p[1]);
		for (int i = 0; i < nworkers; i++)
			close(workers[i].cmd);
		worker_loop(p[0], nworkers + 1);
	}
	close(p[0]);
	workers[nworkers].pid = pid;
	workers[nworkers++].cmd = p[1];
	return 0;
}

static int emit_all(int n)
{
	char line[32];
	int len = snprintf(line, sizeof(line), "emit %d\n", n), live = 0;
	char k;

	emit(n, "master");
	for (int i = 0; i < nworkers; i++)
		if (workers[i].pid > 0 && write(workers[i].cmd, line, (size_t)len) == len)
			live++;
	for (int i = 0; i < live; i++)
		if (read(ack[0], &k, 1) != 1)
			return -1;
	return 0;
}

static void kill_worker(int i)
{
	kill(workers[i].pid, SIGKILL);
	waitpid(workers[i].pid, NULL, 0);
	close(workers[i].cmd);
	workers[i].pid = -1;
}

static void answer(const char *line)
{
	int n;

	if (!strcmp(line, "pids")) {
		printf("ok %d", (int)getpid());
		for (int i = 0; i < nworkers; i++)
			if (workers[i].pid > 0)
				printf(" %d", (int)workers[i].pid);
		printf("\n");
	} else if (sscanf(line, "emit %d", &n) == 1) {
		printf(emit_all(n) ? "fail emit\n" : "ok\n");
	} else if (!strcmp(line, "spawn")) {
		if (spawn())
			printf("fail spawn: %s\n", strerror(errno));
		else
			printf("ok %d\n", (int)workers[nworkers - 1].pid);
	} else if (sscanf(line, "kill %d", &n) == 1 && n >= 1 && n <= nworkers &&
		   workers[n - 1].pid > 0) {
		kill_worker(n - 1);
		printf("ok\n");
	} else {
		printf("fail unknown command: %s\n", line);
	}
	fflush(stdout);
}

int main(void)
{
	char line[128];

	if (pipe(ack) || spawn() || spawn()) {
		perror("record_trio");
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "quit"))
			break;
		answer(line);
	}
	for (int i = 0; i < nworkers; i++)
		if (workers[i].pid > 0) {
			close(workers[i].cmd);
			waitpid(workers[i].pid, NULL, 0);
		}
	return 0;
}
