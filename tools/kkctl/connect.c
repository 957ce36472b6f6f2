// SPDX-License-Identifier: MIT
/*
 * kkctl: reaching a pid's endpoint: its name or the alternatives it took, the
 * socket's owner verified before anything is sent.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control_path.h"
#include "kkctl.h"

/*
 * Connect to @sa without waiting: a name whose listen backlog is full fails
 * at once with EAGAIN (kkctl_connect_pid() tries it again until the
 * target's deadline), so a squatter that never accepts holds nothing but
 * its own name.  The socket (non-blocking: request.c waits with poll()), or
 * -1 with errno.
 */
int kkctl_connect_addr(const struct sockaddr_un *sa, socklen_t sl)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), e;

	if (fd < 0)
		return -1;
	if (connect(fd, (const struct sockaddr *)sa, sl)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/*
 * The peer is what we asked for: the socket's owner (SO_PEERCRED: the process
 * that called listen()) is process @pid, our user namespace maps its uid (an
 * unmapped one shows as the overflow uid: a stranger), it runs as @pid's uid
 * (from /proc/PID/status), and that is our uid, or we are root.  Abstract names
 * have no owner, so without this another user's process could squat
 * @kernelkit/PID and read what we write.  NULL, or why not (in @why).
 * *@stale is set when the socket's uid is not the one the process runs as
 * now: an endpoint re-creates its socket after the process changes uid, so
 * that refusal may not last (kkctl_request() tries again).
 */
static const char *check_peer(int fd, pid_t pid, const char *addr, char *why, size_t wl,
			      bool *stale)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);
	uid_t me = geteuid();
	long owner, ids[4] = { -1, -1, -1, -1 };

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
		snprintf(why, wl, "process %d: cannot check the endpoint's owner: %s", (int)pid,
			 strerror(errno));
		return why;
	}
	if (cr.pid != pid) {
		snprintf(why, wl, "refusing %s: it is served by process %d (uid %u), not by "
			 "process %d", addr, (int)cr.pid, (unsigned)cr.uid, (int)pid);
		return why;
	}
	if (cr.uid == kkctl_userns.overflow && !kkctl_userns.all_mapped) {
		snprintf(why, wl, "refusing process %d: your user namespace does not map its uid "
			 "(it shows as the overflow uid %u)", (int)pid, (unsigned)cr.uid);
		return why;
	}
	/* The socket's uid is the one its creator had at listen(): a daemon
	 * that dropped privileges since still has it as its real or saved uid. */
	owner = kkctl_proc_uids(pid, ids);
	*stale = owner >= 0 && (uid_t)owner != cr.uid;
	if (owner < 0 || ((uid_t)ids[0] != cr.uid && (uid_t)ids[1] != cr.uid &&
			  (uid_t)ids[2] != cr.uid && (uid_t)ids[3] != cr.uid)) {
		snprintf(why, wl, "refusing %s: its socket belongs to uid %u, process %d runs as "
			 "%s%ld", addr, (unsigned)cr.uid, (int)pid, owner < 0 ? "(gone) " : "uid ",
			 owner);
		return why;
	}
	if (cr.uid != me && me != 0) {
		snprintf(why, wl, "refusing process %d: it runs as uid %u, you are uid %u "
			 "(and not root)", (int)pid, (unsigned)cr.uid, (unsigned)me);
		return why;
	}
	return NULL;
}

/* A name whose listen backlog was full: tried again until the deadline. */
struct full_name {
	struct sockaddr_un sa;
	socklen_t sl;
};

/* Reaching one pid's endpoint: the names tried so far, and the result. */
struct reach {
	pid_t pid;
	pid_t inpid;		/* its pid in its pid namespace: its names' */
	uint64_t deadline;	/* the target's, for the whole exchange */
	char *why;
	size_t wl;
	bool any, refused;
	bool lasting;		/* a failure that trying again will not change */
	bool timedout;		/* the deadline came first */
	bool named;		/* why says nothing of which process: the report does */
	bool cannot_enter;	/* its namespaces are out of our reach */
	int fd;			/* the verified connection, or -1 */
	struct nsfds ns;	/* its namespaces that are not ours (-1: ours) */
	char addr[128];		/* its name, with '@' */
	char *note;		/* why we could not enter it, if we could not */
	size_t nl;
	struct full_name *full;	/* names whose backlog was full, to try again */
	size_t nfull, capfull;
	char full_addr[128];	/* the first of them, for the message */
};

/* Keep @sa to try again: its listen backlog is full. */
static void keep_full(struct reach *r, const struct sockaddr_un *sa, socklen_t sl)
{
	if (!r->full_addr[0])
		snprintf(r->full_addr, sizeof(r->full_addr), "@%.*s",
			 (int)(sl - offsetof(struct sockaddr_un, sun_path) - 1), sa->sun_path + 1);
	if (r->nfull == r->capfull) {
		size_t cap = r->capfull ? 2 * r->capfull : 8;
		struct full_name *v = realloc(r->full, cap * sizeof(*v));

		if (!v)
			return;	/* (not tried again: the deadline will say) */
		r->full = v;
		r->capfull = cap;
	}
	r->full[r->nfull].sa = *sa;
	r->full[r->nfull++].sl = sl;
}

/* Connect to @sa and verify its owner; a refused one is reported in r->why,
 * a full one kept to try again. */
static void try_name(struct reach *r, const struct sockaddr_un *sa, socklen_t sl)
{
	bool stale = false, entering = r->ns.net >= 0 || r->ns.user >= 0;
	int fd;

	if (r->timedout || kk_now_ns() >= r->deadline) {
		r->timedout = true;
		return;
	}
	fd = entering ? kkctl_connect_in(&r->ns, r->pid, sa, sl, r->deadline, r->note, r->nl) :
			kkctl_connect_addr(sa, sl);
	if (fd == -2) {		/* its names are out of our reach: the note says why */
		snprintf(r->why, r->wl, "%s", r->note);
		r->note[0] = '\0';
		r->lasting = r->cannot_enter = r->named = true;
		return;
	}
	if (fd < 0 && errno == EAGAIN) {
		keep_full(r, sa, sl);
		return;
	}
	if (fd < 0 && errno == ETIMEDOUT) {	/* entering took the rest of the deadline */
		r->timedout = true;
		return;
	}
	if (fd < 0) {
		/* ECONNREFUSED, ENOENT: no socket has the name (yet, or for a
		 * moment while the endpoint re-creates it). */
		if (errno != ECONNREFUSED && errno != ENOENT)
			r->lasting = true;
		if (!r->any && errno != ECONNREFUSED && errno != ENOENT)
			snprintf(r->why, r->wl, "cannot connect to process %d: %s", (int)r->pid,
				 strerror(errno));
		return;
	}
	snprintf(r->addr, sizeof(r->addr), "@%s", sa->sun_path + 1);
	r->any = true;
	if (!check_peer(fd, r->pid, r->addr, r->why, r->wl, &stale)) {
		r->fd = fd;
		return;
	}
	r->refused = true;
	r->lasting |= !stale;
	close(fd);
}

/* Every other name of the pid ("/<n>", ".<random>") until one will do: no
 * limit on how many, so fake names cannot crowd out the real one. */
static void try_alt(pid_t pid, const char *name, void *arg)
{
	struct reach *r = arg;
	struct sockaddr_un sa;
	char own[64];

	snprintf(own, sizeof(own), KK_CONTROL_ABSTRACT_PREFIX "%d", (int)pid);
	if (pid != r->inpid || r->fd >= 0 || !strcmp(name, own))
		return;
	try_name(r, &sa, kk_control_addr_str(&sa, name));
}

/*
 * The names whose listen backlog was full, tried again after pauses growing
 * from 5 ms to 100 ms until one will do or the deadline comes: the real
 * endpoint's backlog may be full for a moment (16 clients of its uid at
 * once), a squatter's for ever, and waiting in connect() on one name would
 * let a squatter hold us.  Only a name that stays full is left.  In another
 * namespace each try is a fork: the pauses grow to 500 ms there.
 */
static void retry_full(struct reach *r)
{
	bool forks = r->ns.net >= 0 || r->ns.user >= 0;
	uint64_t pause = 5000000, most = forks ? 500000000 : 100000000;

	while (r->fd < 0 && r->nfull && !r->timedout) {
		struct full_name *v = r->full;
		size_t n = r->nfull;
		uint64_t now = kk_now_ns();

		if (now >= r->deadline) {
			r->timedout = true;
			break;
		}
		kkctl_wait_fd(-1, 0, pause < r->deadline - now ? now + pause : r->deadline);
		pause = 2 * pause < most ? 2 * pause : most;
		r->full = NULL;
		r->nfull = r->capfull = 0;
		for (size_t i = 0; i < n && r->fd < 0; i++)
			try_name(r, &v[i].sa, v[i].sl);
		free(v);
	}
}

/* Why we are out of time: the deadline came while names stayed full (or
 * while entering the target's namespaces). */
static void say_timedout(struct reach *r)
{
	if (r->full_addr[0])
		snprintf(r->why, r->wl, "no connection within %g s: the listen backlog of %s "
			 "stayed full%s", kkctl_bounds.timeout_s, r->full_addr,
			 r->nfull > 1 ? ", and of its other names" : "");
	else
		snprintf(r->why, r->wl, "no connection within %g s", kkctl_bounds.timeout_s);
	r->lasting = r->named = true;
}

/* Where @pid is, and the namespaces to enter to reach it (in @r).  False
 * after saying why it cannot be reached: it is gone (*@gone), or its
 * network namespace is not ours and we may not enter it. */
static bool locate(struct reach *r, bool *gone)
{
	struct where w = { 0 };
	int err;

	if (kkctl_proc_where(r->pid, &w)) {
		*gone = r->named = true;
		snprintf(r->why, r->wl, "no such process");
		return false;
	}
	r->inpid = w.inpid;
	snprintf(r->why, r->wl, "process %d has no control endpoint%s", (int)r->pid,
		 w.other_net ? " in its network namespace" : "");
	if (!w.other_net)
		return true;
	r->ns.net = kkctl_ns_of(r->pid, "net");
	err = w.net_err ? w.net_err : errno;
	if (r->ns.net >= 0)
		return true;
	snprintf(r->why, r->wl, "cannot enter its network namespace, where its endpoint is: "
		 "/proc/%d/ns/net: %s", (int)r->pid, strerror(err));
	r->lasting = r->named = true;
	return false;
}

/*
 * Connect to @t's endpoint: "@kernelkit/PID", else the alternatives it took
 * because that name was held by another socket; from inside its network
 * namespace if it is not ours, and its user namespace if it is not ours and
 * we may enter it (else res->note says why not).  Each is verified before
 * use; a refused one is reported in res->err.  Every step, entering
 * included, ends by @deadline: a name whose listen backlog is full is tried
 * again until then, never waited on.  -1 with res->err set when none will
 * do (res->gone: @t is gone, or another process has its pid now; res->named
 * when the deadline came), and *@again set if the live process may be
 * between two sockets (no name, or a socket of the uid it had before): worth
 * another try.  res->via: the name we connected to if we passed a foreign
 * socket on the way, else "".
 */
int kkctl_connect_pid(const struct target *t, uint64_t deadline, struct result *res,
		      bool *again)
{
	struct reach r = { .pid = t->pid, .inpid = t->pid, .deadline = deadline, .why = res->err,
			   .wl = sizeof(res->err), .fd = -1,
			   .ns = { -1, kkctl_ns_of(t->pid, "user"), -1 }, .note = res->note,
			   .nl = sizeof(res->note) };
	struct sockaddr_un sa;
	bool gone = false;

	res->note[0] = '\0';
	if (!kkctl_target_alive(t)) {
		gone = true;
		snprintf(res->err, sizeof(res->err), "no such process");
	} else if (locate(&r, &gone)) {
		try_name(&r, &sa, kk_control_addr_n(&sa, r.inpid, 0));
		if (r.fd < 0 && !r.cannot_enter)	/* the name itself would not do */
			kkctl_scan_endpoints(r.ns.net >= 0 ? t->pid : 0, try_alt, &r);
		retry_full(&r);
		if (r.fd < 0 && r.timedout)
			say_timedout(&r);
	}
	free(r.full);
	if (r.ns.user >= 0)
		close(r.ns.user);
	if (r.ns.net >= 0)
		close(r.ns.net);
	/* The process it was, still: a pid given to another one is not it.
	 * (A refusal is told as it is: the socket was not its.) */
	if (!gone && (r.fd >= 0 || !r.refused) && !kkctl_target_alive(t)) {
		gone = true;
		if (r.fd >= 0)
			close(r.fd);
		r.fd = -1;
	}
	/* Reached on another name than its own: someone holds that one. */
	snprintf(res->via, sizeof(res->via), "%s",
		 r.fd >= 0 && (r.refused || r.full_addr[0]) ? r.addr : "");
	res->gone = gone;
	res->named = r.fd < 0 && r.named;
	*again = r.fd < 0 && !r.lasting && !gone && !r.timedout;
	return r.fd;
}
