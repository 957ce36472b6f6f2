// SPDX-License-Identifier: MIT
/*
 * A squatter: binds the endpoint name of another process, @kernelkit/PID
 * (abstract names have no owner), prints "ready", accepts one client, and
 * prints how many bytes that client sent before closing ("received N").
 * kkctl must refuse to talk to it (the socket's owner is not PID) and send
 * nothing.  It answers a client that does talk "0\nsquatted\n".
 *
 * The client is its test's: one in its process group, seen by SO_PEERCRED
 * and /proc.  A client from elsewhere is closed unread: root's
 * kkctl ls, run by another test beside this one, reaches every endpoint name
 * on the host, this one too, and taking it for the test's client made the
 * squatter exit before the test's kkctl came ("kkctl: process N has no
 * control endpoint", tally run 35 of issue 27).
 *   control_squat PID
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/*
 * Is @pid in our process group?  Yes when it cannot be told (no pid in our
 * namespace, no /proc).  Each test runs under its own timeout(1), which
 * makes a process group of it; a shell script without job control keeps its
 * background jobs, subshells and commands in that one group.
 */
static bool from_our_test(pid_t pid)
{
	char path[64], st[512], *p;
	FILE *f;
	size_t n;
	int pgrp;

	if (pid <= 0)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "r")))
		return true;
	n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = 0;
	/* "pid (comm) state ppid pgrp": comm may hold spaces and parens */
	if (!(p = strrchr(st, ')')) || sscanf(p + 1, " %*c %*d %d", &pgrp) != 1)
		return true;
	return pgrp == getpgrp();
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	char buf[4096];
	size_t total = 0;
	socklen_t sl;
	ssize_t r;
	int l, c, n;

	if (argc != 2)
		return 2;
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%s", argv[1]);
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sl) || listen(l, 4)) {
		perror("control_squat");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		struct ucred cr;
		socklen_t crl = sizeof(cr);

		c = accept(l, NULL, NULL);
		if (c < 0)
			return 1;
		if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crl) || from_our_test(cr.pid))
			break;
		close(c);
	}
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(c, buf, sizeof(buf), 0)) > 0)
		total += (size_t)r;
	send(c, "0\nsquatted\n", 11, MSG_NOSIGNAL);
	printf("received %zu\n", total);
	return 0;
}
