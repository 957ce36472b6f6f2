// SPDX-License-Identifier: MIT
/*
 * A bare client, with none of kkctl's checks of the server: connects to
 * @kernelkit/PID, sends "REQUEST\n", shuts its side and prints the reply
 * (status line, then body) as the endpoint sent it.  For the trust tests,
 * where the client's identity is what is tested, not kkctl's.
 *   control_raw [-w | -s SECONDS] PID REQUEST
 * -w: once connected, print "connected" and wait for a line (or EOF) on
 * stdin before sending, so that a script can change the server's state
 * between the connection and the request (control_trust_request.sh).
 * -s: wait SECONDS after the request before reading the reply: a reader
 * slower than the endpoint's 2 s deadline (dynamic_debug_trace_raw.sh).
 * Exit 0 when a reply (or an empty EOF) was read, 1 when it cannot connect.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 10, 0 };
	char buf[4096];
	ssize_t r;
	int n, fd, hold = argc > 1 && !strcmp(argv[1], "-w"), stall = 0;

	if (argc > 2 && !strcmp(argv[1], "-s")) {
		stall = atoi(argv[2]);
		argv += 2;
		argc -= 2;
	}
	argv += hold;
	argc -= hold;
	if (argc != 3)
		return 2;
	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%s", argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		fprintf(stderr, "control_raw: connect @kernelkit/%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (hold) {
		printf("connected\n");
		fflush(stdout);
		(void)!fgets(buf, sizeof(buf), stdin);
	}
	/* A refused client may find the socket closed under its request (EPIPE):
	 * the refusal is still there to read. */
	send(fd, argv[2], strlen(argv[2]), MSG_NOSIGNAL);
	send(fd, "\n", 1, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	if (stall > 0)
		sleep((unsigned)stall);
	while ((r = recv(fd, buf, sizeof(buf), 0)) > 0)
		fwrite(buf, 1, (size_t)r, stdout);
	return 0;
}
