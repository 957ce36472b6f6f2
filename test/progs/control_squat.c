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
#include "listen_abstract.h"

int main(int argc, char **argv)
{
	struct timeval tv = { 5, 0 };
	char buf[4096], name[64];
	size_t total = 0;
	ssize_t r;
	int l, c;

	if (argc != 2)
		return 2;
	snprintf(name, sizeof(name), "kernelkit/%s", argv[1]);
	if ((l = listen_abstract(name)) < 0) {
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
