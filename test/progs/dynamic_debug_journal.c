// SPDX-License-Identifier: MIT
/*
 * Messages for the journal sink test (test/scripts/dynamic_debug_journal.sh).
 *   dynamic_debug_journal TAG [api]
 * Run with KK_DYNDBG='module kkjournal +p' and KK_DYNDBG_SINK=journal (or
 * "api": the program selects the sink itself).  From a second thread it
 * prints, each tagged TAG: one line, a multi-line message, a 70000-byte
 * message and a 1 MiB one (past any datagram: the memfd path).  Then, from
 * main(), it puts a pipe on the number of the library's journal socket (as
 * a program that closes descriptors it does not know and reuses the number
 * would) and prints "reused": the library must notice, open a new socket,
 * and neither write to nor close the program's pipe.  On stdout, what the
 * journal must show: "KIND KEY=value" lines per message kind.
 */
#define KK_MODNAME "kkjournal"
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

static const char *tag;

static void expect(const char *kind, int line, const char *func)
{
	printf("%s CODE_FILE=%s\n%s CODE_LINE=%d\n%s CODE_FUNC=%s\n%s TID=%d\n", kind, __FILE__,
	       kind, line, kind, func, kind, (int)gettid());
}

static void big(size_t n, const char *kind)
{
	char *s = malloc(n + 1);

	if (!s)
		exit(2);
	for (size_t i = 0; i < n; i++)
		s[i] = (char)('a' + i % 26);
	s[n] = '\0';
	expect(kind, __LINE__ + 1, __func__);
	pr_debug("%s %s %s\n", tag, kind, s);
	free(s);
}

static void *messages(void *unused)
{
	(void)unused;
	expect("one", __LINE__ + 1, __func__);
	pr_debug("%s one line\n", tag);
	expect("multi", __LINE__ + 1, __func__);
	pr_debug("%s multi\nsecond line\n\tthird=3\n", tag);
	big(70000, "big");
	big(1 << 20, "huge");
	return NULL;
}

/* The library's journal socket: the one AF_UNIX datagram socket above 2. */
static int find_journal_socket(void)
{
	for (int fd = 3; fd < 1024; fd++) {
		int v;
		socklen_t l = sizeof(v);

		if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &l) || v != SOCK_DGRAM)
			continue;
		l = sizeof(v);
		if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &l) && v == AF_UNIX)
			return fd;
	}
	return -1;
}

static int reuse(void)
{
	int fd = find_journal_socket(), p[2];
	struct stat before, after;
	char c;

	if (fd < 0 || pipe2(p, O_NONBLOCK | O_CLOEXEC) || dup2(p[1], fd) < 0 || fstat(fd, &before))
		return 3;
	expect("reused", __LINE__ + 1, __func__);
	pr_debug("%s reused\n", tag);
	if (fstat(fd, &after) || after.st_ino != before.st_ino) {
		fprintf(stderr, "the library closed or replaced the program's descriptor %d\n", fd);
		return 4;
	}
	if (read(p[0], &c, 1) != -1) {
		fprintf(stderr, "the library wrote to the program's pipe\n");
		return 5;
	}
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;

	if (argc < 2)
		return 2;
	tag = argv[1];
	if (argc > 2 && !strcmp(argv[2], "api"))
		kk_dyndbg_set_sink(kk_dyndbg_sink_journal, NULL);
	printf("all _PID=%d\n", (int)getpid());
	if (pthread_create(&t, NULL, messages, NULL) || pthread_join(t, NULL))
		return 2;
	if (argc > 2 && !strcmp(argv[2], "reuse")) {
		int r = reuse();

		if (r)
			return r;
	}
	return fflush(stdout) ? 2 : 0;
}
