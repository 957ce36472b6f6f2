// SPDX-License-Identifier: MIT
/*
 * kkctl: one request to one process and its reply, within its bounds (one
 * deadline for the whole exchange, a cap on the reply), tried again while
 * the endpoint may be between two sockets.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>

#include "common/internal.h"
#include "kkctl.h"

/* Wait for @events on @fd until @deadline (kk_now_ns()): 1 ready, 0 too late,
 * -1 with errno.  With @fd -1, a pause until @deadline that signals do not
 * cut short.  Every wait of kkctl's goes through here, so that no wait
 * outlives the target's one deadline (but record's thread waiting for a
 * fifo's reader, record_out.c, which ends on a signal instead). */
int kkctl_wait_fd(int fd, short events, uint64_t deadline)
{
	for (;;) {
		struct pollfd p = { fd, events, 0 };
		uint64_t now = kk_now_ns(), ms;
		int r;

		if (now >= deadline)
			return 0;
		ms = (deadline - now + 999999) / 1000000;
		r = poll(&p, 1, ms > INT_MAX ? INT_MAX : (int)ms);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

/* Send all of @p by @deadline: 0, -ETIMEDOUT or -errno.  A peer that takes
 * one byte at a time does not stretch it. */
static int send_by(int fd, const char *p, size_t n, uint64_t deadline)
{
	while (n) {
		int w = kkctl_wait_fd(fd, POLLOUT, deadline);
		ssize_t s;

		if (w <= 0)
			return w ? -errno : -ETIMEDOUT;
		s = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (s < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (s < 0)
			return -errno;
		p += s;
		n -= (size_t)s;
	}
	return 0;
}

/*
 * Receive until EOF, by @deadline and at most @max bytes, into a malloc'ed,
 * NUL-terminated *@out (on error too: what came, to be freed).  0,
 * -ETIMEDOUT, -EFBIG (more than @max), -ENOMEM or -errno.  The buffer never
 * grows past @max + 2 bytes: the cap bounds our memory, not only the reply.
 */
static int recv_by(int fd, uint64_t deadline, size_t max, char **out, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	int err = 0;

	for (;;) {
		ssize_t r;
		int w;

		if (n + 1 >= cap) {	/* room for one more byte and the NUL */
			size_t nc = cap ? 2 * cap : 4096;
			char *nb;

			nc = nc < max + 2 ? nc : max + 2;
			nb = realloc(buf, nc);
			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap = nc;
		}
		w = kkctl_wait_fd(fd, POLLIN, deadline);
		if (w <= 0) {
			err = w ? -errno : -ETIMEDOUT;
			break;
		}
		r = recv(fd, buf + n, cap - n - 1, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r <= 0) {
			err = r ? -errno : 0;
			break;
		}
		n += (size_t)r;
		if (n > max) {
			err = -EFBIG;
			break;
		}
	}
	if (buf)
		buf[n] = '\0';
	*out = buf;
	*len = n;
	return err;
}

/* "64 MiB", "1536 KiB", "100 bytes": the largest unit that divides @n. */
static const char *fmt_size(size_t n, char *buf, size_t bl)
{
	static const char *const units[] = { "GiB", "MiB", "KiB" };

	for (int i = 0; i < 3; i++) {
		size_t u = (size_t)1 << (30 - 10 * i);

		if (n >= u && n % u == 0) {
			snprintf(buf, bl, "%zu %s", n / u, units[i]);
			return buf;
		}
	}
	snprintf(buf, bl, "%zu byte%s", n, n == 1 ? "" : "s");
	return buf;
}

/* Did the exchange run out of its bounds?  Then say which in @res. */
static bool out_of_bounds(int err, struct result *res)
{
	char sz[32];

	if (err == -ETIMEDOUT)
		snprintf(res->err, sizeof(res->err), "no complete reply within %g s",
			 kkctl_bounds.timeout_s);
	else if (err == -EFBIG)
		snprintf(res->err, sizeof(res->err), "reply larger than %s",
			 fmt_size(kkctl_bounds.max_reply, sz, sizeof(sz)));
	else
		return false;
	res->named = true;
	return true;
}

/*
 * A process may be between two sockets when we come: its endpoint re-creates
 * its socket when the process changes uid (a daemon's worker dropping
 * privileges), so for a moment the name is gone (ECONNREFUSED, ENOENT), or
 * still the old socket's, of the old uid, or our connection is closed or
 * reset before any reply.  So a request is tried up to TRIES times, after a
 * pause growing from 5 ms (75 ms in all), each time looking the names up
 * again, and never past the target's deadline.
 */
enum { TRIES = 5 };

/* Pause before try @n (2 to TRIES).  False if the deadline came first. */
static bool pause_before(int n, uint64_t deadline)
{
	uint64_t now = kk_now_ns(), ns = (uint64_t)5000000 << (n - 2);

	if (now >= deadline)
		return false;
	kkctl_wait_fd(-1, 0, ns < deadline - now ? now + ns : deadline);
	return kk_now_ns() < deadline;
}

/* kkctl_connect_pid(), tried again (counted in *@tries) while the failure
 * may pass. */
int kkctl_reach_pid(const struct target *t, uint64_t deadline, int *tries, struct result *res)
{
	for (;;) {
		bool again;
		int fd = kkctl_connect_pid(t, deadline, res, &again);

		if (fd >= 0 || !again || *tries >= TRIES || !pause_before(++*tries, deadline))
			return fd;
	}
}

/* One try on @fd (closed here): send @head and @body, then read the reply
 * into *@resp (see recv_by()).  0 or -errno. */
static int exchange(int fd, const char *head, size_t hl, const char *body, size_t blen,
		    uint64_t deadline, char **resp, size_t *rlen)
{
	/* A peer that refuses us may close before reading: EPIPE is not
	 * fatal, its reply (if any) says why. */
	int err = send_by(fd, head, hl, deadline);

	if (!err && blen)
		err = send_by(fd, body, blen, deadline);
	shutdown(fd, SHUT_WR);
	if (err != -ETIMEDOUT)
		err = recv_by(fd, deadline, kkctl_bounds.max_reply, resp, rlen);
	close(fd);
	return err;
}

/* Take @resp (a whole reply: "STATUS\nBODY"; @nl its first newline) into
 * @res: the body, and for a negative status the error it names. */
static void take_reply(const char *verb, const char *file, char *resp, size_t rlen, char *nl,
		       struct result *res)
{
	int status;

	*nl = '\0';
	status = atoi(resp);
	res->len = rlen - (size_t)(nl + 1 - resp);
	memmove(resp, nl + 1, res->len + 1);
	res->body = resp;
	if (status < 0) {
		while (res->len && resp[res->len - 1] == '\n')
			res->len--;
		snprintf(res->err, sizeof(res->err), "%s%s%s: %s", verb, file ? " " : "",
			 file ? file : "", strerror(-status));
		return;
	}
	res->ok = 1;
}

/*
 * A process that is gone (res->gone: no process has its pid, or another one
 * has it now, or it is a zombie) was not reached, or not answered, because
 * it exited, and the line says so: "exited" for one answered before (-f
 * follows it); for one a selector matched (it exited during the command: a
 * pre-fork server's worker) "gone: ...", which is no failure; for one named
 * by -p, "no such process", or "exited before it replied" once it was sent
 * the request.  Whether @res, so settled, is a failure.
 */
bool kkctl_settle_gone(const struct target *t, struct result *res)
{
	const char *why;

	if (res->ok)
		return false;
	if (!res->gone)
		return true;
	if (t->reached)
		why = "exited";
	else if (t->selected)
		why = res->sent ? "gone: it exited before it replied" :
		      "gone: it exited before kkctl reached it";
	else
		why = res->sent ? "exited before it replied" : "no such process";
	snprintf(res->err, sizeof(res->err), "%s", why);
	res->note[0] = '\0';
	res->named = true;
	return t->reached || !t->selected;
}

/* Send "VERB [FILE]\n" and @body to @t and take its reply into @res
 * (res->ok, or res->err says why not), all within the target's bounds. */
void kkctl_request(const struct target *t, const char *verb, const char *file,
		   const char *body, size_t blen, struct result *res)
{
	kkctl_request_by(t, verb, file, body, blen,
			 kk_now_ns() + (uint64_t)(kkctl_bounds.timeout_s * 1e9), res);
}

/* kkctl_request(), all by @deadline (kk_now_ns()), which may be sooner than
 * the target's bounds (kkctl record's end: one deadline for all). */
void kkctl_request_by(const struct target *t, const char *verb, const char *file,
		      const char *body, size_t blen, uint64_t deadline, struct result *res)
{
	pid_t pid = t->pid;
	char head[KK_CONTROL_NAME_MAX + 16], *resp, *nl;
	size_t rlen;
	int fd, n, err, tries = 1;
	bool sent = false;	/* a request went out: a process gone since may have run it */

	n = snprintf(head, sizeof(head), "%s%s%s\n", verb, file ? " " : "", file ? file : "");
	for (;;) {
		memset(res, 0, sizeof(*res));
		resp = NULL;
		rlen = 0;
		fd = kkctl_reach_pid(t, deadline, &tries, res);
		if (fd < 0) {
			/* (a process still dying when its socket closed is gone now) */
			res->sent = res->gone && sent;
			return;
		}
		err = exchange(fd, head, (size_t)n, body, blen, deadline, &resp, &rlen);
		sent = true;
		if ((err || !rlen) && !kkctl_target_alive(t))
			break;	/* it exited while we were at it: not again */
		/* Closed or reset before the first byte of a reply: the endpoint
		 * answers every request it runs, so it ran none and sending it
		 * again is safe.  Never once part of a reply came. */
		if (rlen || (err && err != -ECONNRESET && err != -EPIPE) || tries >= TRIES ||
		    !pause_before(++tries, deadline))
			break;
		free(resp);
	}
	/* Reset after part of a reply: the endpoint refused us in one line and
	 * closed with our request unread (a stranger: refuse_stranger() in
	 * src/control.c reads only a request already queued).  A Unix socket
	 * hands over the queued reply before the reset, so what came is the
	 * whole reply.  An answered request was read whole: it ends in EOF. */
	if (err == -ECONNRESET && rlen)
		err = 0;
	if (res->via[0])	/* the squatter we passed by */
		fprintf(stderr, "%s: warning: skipped a foreign socket on process %d's name; "
			"using %s\n", kkctl_prog, (int)pid, res->via);
	if ((err || !rlen) && !kkctl_target_alive(t)) {
		/* It exited while we were at it. */
		res->gone = res->sent = true;
		free(resp);
		return;
	}
	if (out_of_bounds(err, res) || err || !(nl = memchr(resp, '\n', rlen))) {
		if (!res->named)
			snprintf(res->err, sizeof(res->err), "process %d: no reply%s%s",
				 (int)pid, err ? ": " : "", err ? strerror(-err) : "");
		free(resp);
		return;
	}
	take_reply(verb, file, resp, rlen, nl, res);
}
