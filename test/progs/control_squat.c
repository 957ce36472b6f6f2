// SPDX-License-Identifier: MIT
/*
 * A squatter: binds the endpoint name of another process, @kernelkit/PID
 * (abstract names have no owner), prints "ready", accepts one client, and
 * prints how many bytes that client sent before closing ("received N").
 * kkctl must refuse to talk to it (the socket's owner is not PID) and send
 * nothing.  It answers a client that does talk "0\nsquatted\n".
 *
 * The client is its test's, one of its process group: a client from another
 * test (root's kkctl ls reaches every endpoint name) is closed unread
 * (kkt_accept_ours(); tally run 35 of issue 27: "kkctl: process N has no
 * control endpoint").
 *   control_squat PID
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kktest.h"

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
	c = kkt_accept_ours(l);
	if (c < 0)
		return 1;
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while ((r = recv(c, buf, sizeof(buf), 0)) > 0)
		total += (size_t)r;
	send(c, "0\nsquatted\n", 11, MSG_NOSIGNAL);
	printf("received %zu\n", total);
	return 0;
}
