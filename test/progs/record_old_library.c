// SPDX-License-Identifier: MIT
/*
 * A process whose library is older than `begin LEASE_MS held` (before
 * commit 2032496), for test/scripts/kkctl_record_old_library.sh.  It serves
 * its own @kernelkit/PID, so that kkctl takes it for the process's endpoint,
 * and passes each request, whole, to the endpoint of process TARGET (a
 * program with today's library), and TARGET's reply back; but a begin with
 * a word after its lease it refuses as the older library did (its
 * parse_lease() took digits only):
 *
 *   -22
 *   bad lease '1000 held': expected 'begin LEASE_MS', LEASE_MS from 100 to 60000; no session began
 *
 * It has no dynamic_debug/trace_pipe_raw either (newer still): a read of it
 * gets the endpoint's "no such file" (kkctl takes trace_pipe_json then).
 *
 * Each request is logged on stdout, one line: "VERB FILE|FIRST LINE OF ITS
 * BODY", then "refused" or "passed".  Prints "ready" once it listens.
 *   record_old_library TARGET
 */
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kktest.h"
#include "listen_abstract.h"

enum { MAX_REQUEST = 1 << 16 };

static socklen_t name_of(struct sockaddr_un *sa, long pid)
{
	char name[32];

	snprintf(name, sizeof(name), "kernelkit/%ld", pid);
	return abstract_addr(sa, name);
}

/* The request, up to the client's shutdown (10 s at most: a hang guard). */
static size_t read_request(int c, char *buf, size_t cap)
{
	struct pollfd p = { .fd = c, .events = POLLIN };
	size_t len = 0;
	ssize_t r;

	while (len < cap - 1 && poll(&p, 1, 10000) == 1 &&
	       (r = recv(c, buf + len, cap - 1 - len, 0)) > 0)
		len += (size_t)r;
	buf[len] = '\0';
	return len;
}

/* "write dynamic_debug/session" and "begin DIGITS" with more on its line:
 * the older library's refusal, into @c.  False if it is another request. */
static int refuse_held(int c, const char *req)
{
	static const char head[] = "write dynamic_debug/session\nbegin ";
	const char *lease = req + sizeof(head) - 1, *eol;
	char line[256];
	int n;

	if (strncmp(req, head, sizeof(head) - 1))
		return 0;
	eol = lease + strcspn(lease, "\n");
	if (lease + strspn(lease, "0123456789") == eol)
		return 0;
	n = snprintf(line, sizeof(line), "-22\nbad lease '%.*s': expected 'begin LEASE_MS', "
		     "LEASE_MS from 100 to 60000; no session began\n", (int)(eol - lease), lease);
	send(c, line, (size_t)n, MSG_NOSIGNAL);
	return 1;
}

/* "read dynamic_debug/trace_pipe_raw": the older library's "no such file", into @c. */
static int refuse_raw(int c, const char *req)
{
	static const char head[] = "read dynamic_debug/trace_pipe_raw\n",
			  reply[] = "-2\nno such file: dynamic_debug/trace_pipe_raw\n";

	if (strncmp(req, head, sizeof(head) - 1))
		return 0;
	send(c, reply, sizeof(reply) - 1, MSG_NOSIGNAL);
	return 1;
}

/* @req to TARGET's endpoint, its reply to @c. */
static void pass(int c, long target, const char *req, size_t len)
{
	struct sockaddr_un sa;
	socklen_t sl = name_of(&sa, target);
	char buf[65536];
	ssize_t r;
	int t = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (t < 0 || connect(t, (struct sockaddr *)&sa, sl)) {
		perror("record_old_library: connect to the target");
		exit(1);
	}
	send(t, req, len, MSG_NOSIGNAL);
	shutdown(t, SHUT_WR);
	while ((r = recv(t, buf, sizeof(buf), 0)) > 0)
		send(c, buf, (size_t)r, MSG_NOSIGNAL);
	close(t);
}

int main(int argc, char **argv)
{
	static char req[MAX_REQUEST];
	char name[32];
	long target = argc == 2 ? atol(argv[1]) : 0;
	int l, c;

	if (target <= 0) {
		fprintf(stderr, "usage: record_old_library TARGET\n");
		return 2;
	}
	snprintf(name, sizeof(name), "kernelkit/%ld", (long)getpid());
	if ((l = listen_abstract(name)) < 0) {
		perror("record_old_library");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while ((c = kkt_accept_ours(l)) >= 0) {
		size_t len = read_request(c, req, sizeof(req));
		size_t head = strcspn(req, "\n");
		const char *body = req[head] ? req + head + 1 : req + head;
		int refused = refuse_held(c, req) || refuse_raw(c, req);

		printf("%.*s|%.*s %s\n", (int)head, req, (int)strcspn(body, "\n"), body,
		       refused ? "refused" : "passed");
		fflush(stdout);
		if (!refused)
			pass(c, target, req, len);
		close(c);
	}
	return 1;
}
