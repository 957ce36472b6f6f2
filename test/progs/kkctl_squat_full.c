// SPDX-License-Identifier: MIT
/*
 * A squatter that never lets anyone in: binds each abstract name given
 * (kernelkit/NAME, e.g. "4242" or "4242/3"), listens with a backlog of one,
 * fills it with a connection of its own that it never accepts, prints
 * "ready" and waits until it is killed, or its parent dies (a squatter left
 * behind would hold the names of a pid that comes round again: other tests'
 * processes then served from a random name only, and tests that waited for
 * their usual name hung).  A connect() to any of its names
 * then waits for as long as the caller lets it: kkctl's one deadline must
 * bound the whole exchange however many such names a pid has (kernelkit
 * issue 37, item 4).
 *   kkctl_squat_full NAME...
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Bind and fill kernelkit/@name.  0, or -1 after saying why. */
static int squat(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t sl;
	int l, n;

	n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%s", name);
	sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
	l = socket(AF_UNIX, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&sa, sl) || listen(l, 0)) {
		fprintf(stderr, "kkctl_squat_full: %s: %s\n", name, strerror(errno));
		return -1;
	}
	/* Connect until the queue is full (one, with a backlog of 0). */
	for (int i = 0; i < 8; i++) {
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (c < 0)
			return -1;
		if (connect(c, (struct sockaddr *)&sa, sl)) {
			close(c);
			if (errno == EAGAIN)
				return 0;
			fprintf(stderr, "kkctl_squat_full: connect %s: %s\n", name, strerror(errno));
			return -1;
		}
	}
	fprintf(stderr, "kkctl_squat_full: %s: the queue does not fill\n", name);
	return -1;
}

int main(int argc, char **argv)
{
	pid_t parent = getppid();

	if (argc < 2)
		return 2;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) || getppid() != parent)
		return 1;	/* (the parent is gone already) */
	for (int i = 1; i < argc; i++)
		if (squat(argv[i]))
			return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
