// SPDX-License-Identifier: MIT
/*
 * kkctl: entering a target's user, network and UTS namespaces, in a child
 * (a forked helper, so that kkctl itself never changes namespace or
 * credentials), to connect to its endpoint or to read its host name.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/internal.h"
#include "kkctl.h"

struct kkctl_userns kkctl_userns = { 65534, false };

/* Read our user namespace's overflow uid and whether it maps every uid. */
void kkctl_userns_load(void)
{
	unsigned long a, b, c;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%lu", &a) == 1)
			kkctl_userns.overflow = (uid_t)a;
		fclose(f);
	}
	f = fopen("/proc/self/uid_map", "re");
	if (f) {
		kkctl_userns.all_mapped = fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3 && !a && !b &&
				    c == 4294967295UL && fgetc(f) == '\n' && fgetc(f) == EOF;
		fclose(f);
	}
}

/*
 * Connecting from inside the target's namespaces.  The endpoint judges the uid
 * of whoever called connect(), mapped into its own user namespace.  A rootless
 * container's namespace does not map host root, so host root would be the
 * overflow uid there, a stranger.  So when the target lives in another user
 * namespace, a child enters it (setns) and becomes its root -- the namespace's
 * owner, mapped to uid 0 there -- and connects; the socket comes back over
 * SCM_RIGHTS and we run the exchange.  The same child enters the target's
 * network namespace when that is not ours (a container's): abstract names live
 * there.  It never enters the pid or mount namespace, so nothing runs in the
 * container and nothing is written to its files, and SO_PEERCRED, read by us,
 * still reports the endpoint's pid as we see it (the host pid), which
 * check_peer() (connect.c) compares.  The kernel decides who may: setns() into
 * a user namespace needs CAP_SYS_ADMIN over it, which its owner and the root
 * of an ancestor namespace have and the root of a sibling namespace has not;
 * into a network namespace, CAP_SYS_ADMIN over its owner and over our own user
 * namespace, so a container's root cannot enter the host's or another
 * container's.  A child, because a multithreaded process cannot enter a user
 * namespace and because it changes its credentials.
 */

/* The steps of entering, in order; the child reports the one that failed. */
enum { ENTER_SETNS = 1, ENTER_SETRESGID, ENTER_SETRESUID, ENTER_NETNS, ENTER_UTSNS };
static const char *const enter_steps[] = {
	[ENTER_SETNS] = "setns", [ENTER_SETRESGID] = "setresgid", [ENTER_SETRESUID] = "setresuid",
	[ENTER_NETNS] = "setns", [ENTER_UTSNS] = "setns",
};

/* /proc/@pid/ns/@ns, opened, if it is not ours; else -1, with errno 0 if it
 * is ours.  (One we cannot open, without ptrace access to @pid, we cannot
 * enter either.) */
int kkctl_ns_of(pid_t pid, const char *ns)
{
	struct stat ours, theirs;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
	if (stat(path, &ours) || fstat(fd, &theirs) ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)) {
		close(fd);
		errno = 0;
		return -1;
	}
	return fd;
}

static int userns_of(pid_t pid)
{
	return kkctl_ns_of(pid, "user");
}

/* In the child: enter @nsfd and become its root.  0, or the failed step. */
static int become_ns_root(int nsfd)
{
	(void)!setgroups(0, NULL);	/* while we still may (no group grants anything) */
	if (setns(nsfd, CLONE_NEWUSER))
		return ENTER_SETNS;
	if (setresgid(0, 0, 0))
		return ENTER_SETRESGID;
	if (setresuid(0, 0, 0))
		return ENTER_SETRESUID;
	return 0;
}

/*
 * In the child: enter @ns.  0, or the failed step (errno set).  The network
 * namespace first, while we have our own capabilities (host root entering a
 * root container's, owned by the host's user namespace), and again after the
 * user namespace if that failed (a user entering their own rootless
 * container, whose namespace owns its network namespace).
 */
static int enter_ns(const struct nsfds *ns)
{
	bool net = ns->net >= 0 && !setns(ns->net, CLONE_NEWNET);
	int step;

	if (ns->user >= 0 && (step = become_ns_root(ns->user)))
		return step;
	if (ns->net >= 0 && !net && setns(ns->net, CLONE_NEWNET))
		return ENTER_NETNS;
	if (ns->uts >= 0 && setns(ns->uts, CLONE_NEWUTS))
		return ENTER_UTSNS;
	return 0;
}

/* The child's word: the failed step or 0, errno, and a host name (UTS). */
struct child_msg {
	int step, err;
	char host[72];
};

/* In the child: @m and the socket if connected. */
static void send_result(int sp, const struct child_msg *m, int fd)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { (void *)m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.b;
		mh.msg_controllen = sizeof(ctl.b);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&ctl.h), &fd, sizeof(int));
	}
	(void)!sendmsg(sp, &mh, MSG_NOSIGNAL);
}

/* In the parent: the child's word and socket (or -1).  m->step -1 if it
 * died without a word. */
static int recv_result(int sp, struct child_msg *m)
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { m, sizeof(*m) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sp, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*m))
		return m->step = -1, -1;
	m->host[sizeof(m->host) - 1] = '\0';
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * Run a child that enters @ns and then connects to @sa (if given) or reads
 * its host name (into @m->host).  The socket or 0, or -1 with errno
 * (connect()'s; ETIMEDOUT if the child had no word by @deadline: it is
 * killed).  If the child could not enter, -2, the failed step in @m->step
 * (-1: it died) and its errno in @m->err.
 */
static int in_ns(const struct nsfds *ns, const struct sockaddr_un *sa, socklen_t sl,
		 uint64_t deadline, struct child_msg *m)
{
	int sp[2], fd = -1, st;
	pid_t child;

	memset(m, 0, sizeof(*m));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp))
		return m->step = -1, m->err = errno, -2;
	if ((child = fork()) < 0) {
		m->step = -1;
		m->err = errno;
		close(sp[0]);
		close(sp[1]);
		return -2;
	}
	if (child == 0) {
		m->step = enter_ns(ns);
		m->err = errno;
		if (!m->step && sa) {
			fd = kkctl_connect_addr(sa, sl);
			m->err = fd < 0 ? errno : 0;
		} else if (!m->step && gethostname(m->host, sizeof(m->host) - 1))
			m->host[0] = '\0';
		send_result(sp[1], m, fd);
		_exit(0);
	}
	close(sp[1]);
	if (!kkctl_wait_fd(sp[0], POLLIN, deadline)) {	/* (an error: recvmsg() says) */
		kill(child, SIGKILL);
		m->step = 0;
		m->err = ETIMEDOUT;
		fd = -1;
	} else {
		fd = recv_result(sp[0], m);
	}
	close(sp[0]);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (m->step)
		return -2;
	errno = m->err;
	return sa ? fd : 0;
}

/* Why the child could not enter, in @note. */
static void enter_note(const struct child_msg *m, pid_t pid, char *note, size_t nl)
{
	const char *which = m->step == ENTER_NETNS ? "network" : m->step == ENTER_UTSNS ? "UTS" :
			    "user";

	if (m->step > 0 && m->step < ENTER_NETNS)
		snprintf(note, nl, "could not enter process %d's user namespace as its root: "
			 "%s: %s", (int)pid, enter_steps[m->step], strerror(m->err));
	else if (m->step == ENTER_NETNS)
		snprintf(note, nl, "cannot enter its network namespace, where its endpoint is: "
			 "%s: %s", enter_steps[m->step], strerror(m->err));
	else if (m->step > 0)
		snprintf(note, nl, "cannot enter its %s namespace: %s: %s", which,
			 enter_steps[m->step], strerror(m->err));
	else
		snprintf(note, nl, "cannot enter its namespaces: %s",
			 m->err ? strerror(m->err) : "the helper process died");
}

/*
 * Connect to @sa from inside @ns (what kkctl_connect_addr() returns), as the
 * root of its user namespace if that is not ours, else, if we could not
 * become its root, as we are (in its network namespace, if that is not ours)
 * and the endpoint decides.  -2 if its names are out of our reach, @note
 * saying why; @ns->user is closed once given up.
 */
int kkctl_connect_in(struct nsfds *ns, pid_t pid, const struct sockaddr_un *sa, socklen_t sl,
		     uint64_t deadline, char *note, size_t nl)
{
	struct child_msg m;
	int fd = in_ns(ns, sa, sl, deadline, &m);

	if (fd != -2)
		return fd;
	enter_note(&m, pid, note, nl);
	if (ns->user < 0 || m.step <= 0 || m.step >= ENTER_NETNS)
		return fd;
	close(ns->user);
	ns->user = -1;
	fd = ns->net >= 0 ? in_ns(ns, sa, sl, deadline, &m) : kkctl_connect_addr(sa, sl);
	if (fd == -2)
		enter_note(&m, pid, note, nl);
	return fd;
}

/*
 * The host name of the UTS namespace @pid is in, if that is not ours (a
 * container's: docker and podman set it to the container's id or name,
 * Kubernetes to the pod's name).  "" if it is ours or we cannot enter it.
 */
void kkctl_proc_hostname(pid_t pid, char *buf, size_t bl)
{
	struct nsfds ns = { -1, userns_of(pid), kkctl_ns_of(pid, "uts") };
	uint64_t deadline = kk_now_ns() + (uint64_t)(kkctl_bounds.timeout_s * 1e9);
	struct child_msg m;

	buf[0] = '\0';
	if (ns.uts >= 0 && in_ns(&ns, NULL, 0, deadline, &m) == 0)
		snprintf(buf, bl, "%s", m.host);
	if (ns.uts >= 0 && buf[0] == '\0' && ns.user >= 0) {	/* not as its root: as we are */
		close(ns.user);
		ns.user = -1;
		if (in_ns(&ns, NULL, 0, deadline, &m) == 0)
			snprintf(buf, bl, "%s", m.host);
	}
	if (ns.user >= 0)
		close(ns.user);
	if (ns.uts >= 0)
		close(ns.uts);
}
