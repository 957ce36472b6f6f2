// SPDX-License-Identifier: MIT
/*
 * A dripping client and a normal one against @kernelkit/PID:
 *  1. D connects and sends the first byte of a request; it then drips one
 *     more byte every 1.5 s and never finishes the request;
 *  2. once D is connected, C connects and sends a whole "read FILE" request;
 *  3. C must get its reply while D is still being served (the endpoint serves
 *     several clients at once), and D must be cut off (EOF or reset) -- its
 *     deadline covers the whole request, not each receive.
 * Prints "normal ok" and "drip cut after N bytes", exits 0.  The only times
 * used are failure detectors: 30 s for either event ("does not hang").
 *   control_drip PID FILE
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static int connect_to(const char *pid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int n = snprintf(sa.sun_path + 1, sizeof(sa.sun_path) - 1, "kernelkit/%s", pid);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&sa,
			      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n))) {
		perror("control_drip: connect");
		exit(1);
	}
	return fd;
}

static long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	static const char drip[] = "read static_keys";	/* never completed */
	char req[256], buf[4096];
	size_t dripped = 0;
	long start, next_drip;
	int d, c, n, normal_done = 0, drip_cut = 0;

	if (argc != 3)
		return 2;
	d = connect_to(argv[1]);
	if (send(d, drip, 1, MSG_NOSIGNAL) != 1) {
		perror("control_drip: first byte");
		return 1;
	}
	dripped = 1;
	c = connect_to(argv[1]);
	n = snprintf(req, sizeof(req), "read %s\n", argv[2]);
	if (send(c, req, (size_t)n, MSG_NOSIGNAL) != n || shutdown(c, SHUT_WR)) {
		perror("control_drip: request");
		return 1;
	}
	start = now_ms();
	next_drip = start + 1500;
	while (!(normal_done && drip_cut)) {
		struct pollfd p[2] = { { d, POLLIN, 0 }, { c, POLLIN, 0 } };
		long now = now_ms(), wait = next_drip - now;

		if (now - start > 30000) {
			printf("FAIL: %s after 30 s\n", !normal_done ? "the normal client has no reply"
				 : "the dripping client is still connected");
			return 1;
		}
		if (wait <= 0) {
			if (!drip_cut && send(d, drip + dripped % (sizeof(drip) - 1), 1,
					      MSG_NOSIGNAL) != 1) {
				drip_cut = 1;
				printf("drip cut after %zu bytes (send: %s)\n", dripped, strerror(errno));
				continue;
			}
			dripped++;
			next_drip += 1500;
			continue;
		}
		if (drip_cut)
			p[0].fd = -1;
		if (normal_done)
			p[1].fd = -1;
		if (poll(p, 2, (int)wait) < 0)
			continue;
		if (p[1].revents) {
			size_t got = 0;
			ssize_t r;

			while ((r = recv(c, buf + got, sizeof(buf) - 1 - got, 0)) > 0)
				got += (size_t)r;
			buf[got] = '\0';
			if (strncmp(buf, "0\n", 2)) {
				printf("FAIL: normal client: reply \"%.40s\"\n", buf);
				return 1;
			}
			printf("normal ok%s\n", drip_cut ? " (after the drip was cut)"
							  : " (while the drip was connected)");
			normal_done = 1;
		}
		if (p[0].revents) {
			ssize_t r = recv(d, buf, sizeof(buf), MSG_DONTWAIT);

			if (r > 0) {
				printf("FAIL: the dripping client got a reply: \"%.*s\"\n", (int)r, buf);
				return 1;
			}
			drip_cut = 1;
			printf("drip cut after %zu bytes (%s)\n", dripped, r ? strerror(errno) : "EOF");
		}
	}
	return 0;
}
