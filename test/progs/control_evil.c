// SPDX-License-Identifier: MIT
/*
 * A hostile endpoint of its own: binds @kernelkit/<its pid> (so kkctl's
 * checks pass: it is the process it claims to be, running as the caller),
 * prints its pid, and answers every request, until killed, with terminal
 * escape sequences and JSON metacharacters.  kkctl must print them escaped.
 *   control_evil
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(void)
{
	static const char reply[] = "0\nesc\033]0;owned\007 clear\033[2J del\177 cr\r "
				    "quote\" backslash\\ tab\tend\n";
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%d", (int)getpid());
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l < 0 || bind(l, (struct sockaddr *)&sa,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) ||
	    listen(l, 4)) {
		perror("control_evil");
		return 1;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	for (;;) {
		char buf[4096];
		int c = accept(l, NULL, NULL);

		if (c < 0)
			continue;
		while (recv(c, buf, sizeof(buf), 0) > 0)
			;
		send(c, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
		close(c);
	}
}
