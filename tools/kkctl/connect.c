// SPDX-License-Identifier: MIT
/*
 * kkctl: reaching a pid's endpoint: its name or the alternatives it took, the
 * socket's owner verified before anything is sent.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "control_path.h"
#include "kkctl.h"

/* Connect to @sa, waiting no longer than the target's deadline allows.  The
 * socket, or -1 with errno. */
int kkctl_connect_addr(const struct sockaddr_un *sa, socklen_t sl)
{
	/* connect() waits this long when the listen backlog is full: not more
	 * than a target's whole deadline. */
	double s = kkctl_bounds.timeout_s < KK_CONTROL_TIMEOUT_MS / 1000 + 3 ?
		   kkctl_bounds.timeout_s : KK_CONTROL_TIMEOUT_MS / 1000 + 3;
	struct timeval tv = { (time_t)s, (suseconds_t)((s - (time_t)s) * 1e6) };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), e;

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
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

/* Reaching one pid's endpoint: the names tried so far, and the result. */
struct reach {
	pid_t pid;
	pid_t inpid;		/* its pid in its pid namespace: its names' */
	char *why;
	size_t wl;
	bool any, refused;
	bool lasting;		/* a failure that trying again will not change */
	int fd;			/* the verified connection, or -1 */
	struct nsfds ns;	/* its namespaces that are not ours (-1: ours) */
	char addr[128];		/* its name, with '@' */
	char *note;		/* why we could not enter it, if we could not */
	size_t nl;
};

/* Connect to @sa and verify its owner; a refused one is reported in r->why. */
static void try_name(struct reach *r, const struct sockaddr_un *sa, socklen_t sl)
{
	bool stale = false, entering = r->ns.net >= 0 || r->ns.user >= 0;
	int fd = entering ? kkctl_connect_in(&r->ns, r->pid, sa, sl, r->note, r->nl) :
			    kkctl_connect_addr(sa, sl);

	if (fd == -2) {		/* its names are out of our reach */
		r->lasting = true;
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
 * Connect to @pid's endpoint: "@kernelkit/PID", else the alternatives it took
 * because that name was held by another socket; from inside @pid's user
 * namespace if it is not ours and we may enter it (else @note says why not).
 * Each is verified before use; a refused one is reported in @why.  -1 with
 * @why set when none will do, and *@again set if the live process may be
 * between two sockets (no name, or a socket of the uid it had before): worth
 * another try.  @via (128 bytes): the name we connected to if we passed a
 * foreign socket on the way, else "".
 */
int kkctl_connect_pid(pid_t pid, char *why, size_t wl, char *note, size_t nl, char *via,
		      bool *again)
{
	struct reach r = { .pid = pid, .inpid = pid, .why = why, .wl = wl, .fd = -1,
			   .ns = { -1, kkctl_ns_of(pid, "user"), -1 }, .note = note, .nl = nl };
	struct sockaddr_un sa;
	struct where w = { 0 };

	note[0] = '\0';
	if (!kkctl_proc_where(pid, &w)) {
		r.inpid = w.inpid;
		if (w.other_net)
			r.ns.net = kkctl_ns_of(pid, "net");
	}
	snprintf(why, wl, "process %d has no control endpoint", (int)pid);
	if (w.other_net)
		snprintf(why, wl, "process %d has no control endpoint in its network namespace",
			 (int)pid);
	try_name(&r, &sa, kk_control_addr_n(&sa, r.inpid, 0));
	if (r.fd < 0 && !(w.other_net && r.ns.net < 0))	/* the name itself would not do */
		kkctl_scan_endpoints(w.other_net ? pid : 0, try_alt, &r);
	if (r.ns.user >= 0)
		close(r.ns.user);
	if (r.ns.net >= 0)
		close(r.ns.net);
	snprintf(via, 128, "%s", r.fd >= 0 && r.refused ? r.addr : "");
	*again = r.fd < 0 && !r.lasting && kkctl_proc_exists(pid);
	return r.fd;
}
