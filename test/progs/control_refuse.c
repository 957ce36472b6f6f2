// SPDX-License-Identifier: MIT
/*
 * An endpoint that refuses its one client as the library refuses a
 * stranger (src/control.c, refuse_stranger()): one line, "-13" and why,
 * then close; but only once the client's request is queued, unread, which
 * resets the connection.  The library's endpoint reads a request that came
 * before its recv(); one that comes between that recv() and the close is
 * reset so (tally run 36 of issue 27: "no reply: Connection reset by
 * peer" where the refusal was due).  kkctl must still report the refusal.
 * It binds its own name, @kernelkit/PID, so kkctl takes it for the
 * process's endpoint.  Prints "ready", then "refused" once done.
 *   control_refuse
 */
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kktest.h"
#include "listen_abstract.h"

int main(void)
{
	static const char line[] = "-13\npeer is neither uid 0 nor root\n";
	struct pollfd p;
	char name[32];
	int l, c;

	snprintf(name, sizeof(name), "kernelkit/%d", (int)getpid());
	if ((l = listen_abstract(name)) < 0) {
		perror("control_refuse");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	c = kkt_accept_ours(l);	/* not another test's kkctl ls */
	if (c < 0)
		return 1;
	send(c, line, sizeof(line) - 1, MSG_NOSIGNAL);
	shutdown(c, SHUT_WR);
	p = (struct pollfd){ .fd = c, .events = POLLIN };
	if (poll(&p, 1, 10000) != 1)	/* the request, left unread */
		return 1;
	close(c);
	printf("refused\n");
	return 0;
}
