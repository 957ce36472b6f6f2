// SPDX-License-Identifier: MIT
/*
 * An endpoint that never finishes its reply.  It binds @kernelkit/<its pid>
 * itself, so kkctl's checks pass (the socket's owner is the process it
 * claims to be, running as the caller), prints its pid, and then answers
 * every client, one after the other, until killed:
 *   drip MS  "0\n", then one byte every MS milliseconds, forever: each
 *            receive of the client succeeds well inside any per-receive
 *            timeout, the reply never ends;
 *   flood    "0\n", then bytes as fast as the client takes them, forever.
 * A client is served until a send fails (it closed).  Its request is read
 * first, until its end (kkctl shuts down its side after sending).
 *   control_endless drip MS | flood
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int listen_own_name(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%d", (int)getpid());
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sa,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ||
	    listen(l, 16)) {
		perror("control_endless");
		exit(1);
	}
	return l;
}

static void serve(int c, long drip_ms)
{
	static char chunk[65536];
	struct timespec gap = { drip_ms / 1000, (drip_ms % 1000) * 1000000 };
	struct timeval tv = { 2, 0 };
	char buf[4096];

	/* A client that never ends its request does not stop the others for long. */
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	if (send(c, "0\n", 2, MSG_NOSIGNAL) != 2)
		return;
	memset(chunk, 'x', sizeof(chunk));
	if (drip_ms)
		while (send(c, ".", 1, MSG_NOSIGNAL) == 1)
			nanosleep(&gap, NULL);
	else
		while (send(c, chunk, sizeof(chunk), MSG_NOSIGNAL) > 0)
			;
}

int main(int argc, char **argv)
{
	long drip_ms = 0;
	int l;

	if (argc == 3 && !strcmp(argv[1], "drip"))
		drip_ms = atol(argv[2]);
	if (!(argc == 2 && !strcmp(argv[1], "flood")) && drip_ms <= 0) {
		fprintf(stderr, "usage: control_endless drip MS | flood\n");
		return 2;
	}
	l = listen_own_name();
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c < 0)
			continue;
		serve(c, drip_ms);
		close(c);
	}
}
