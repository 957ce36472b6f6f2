// SPDX-License-Identifier: MIT
/*
 * kkctl: read and write the virtual files that kernelkit processes serve on
 * their control endpoints.
 *
 *   kkctl ls                              your processes that serve, reachable or not
 *   kkctl TARGETS files                   the files each target serves
 *   kkctl TARGETS read FILE               print a file of each target
 *   kkctl TARGETS write FILE [TEXT]       write TEXT (or stdin) to each target
 *   TARGETS: -p PID, -n NAME, --tree PID, -M NAME (each repeatable), --all
 *   kkctl -H [user@]host[:port] ...       the same on other hosts, over ssh
 *
 * Processes in containers (other network, pid, user namespaces) are found
 * and reached by the pid we see them as (the host pid, for root on the host).
 *
 * A process a selector matched but kkctl cannot reach is reported, never
 * skipped: kkctl says what it did not do.
 *
 * Every target gets one deadline for its whole exchange and a cap on the size
 * of its reply: a process that passes our checks is still not trusted to
 * finish, and one that never does must not hang --all or exhaust our memory.
 *
 * Exit status: 0 success, 1 the operation failed (for any target), 2 usage.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "common.h"
#include "control_path.h"

#ifndef KK_VERSION
#define KK_VERSION "unknown"
#endif

static const char *prog = "kkctl";
static bool json;

/* What one target may cost us (kkctl(1): --timeout, --max-reply). */
static struct {
	double timeout_s;	/* connection to the reply's last byte */
	size_t max_reply;	/* bytes, status line included */
	unsigned jobs;		/* targets served at once */
} bounds = { 10, 64 << 20, 8 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [-H HOST]... [-M NAME]... [--json] ls\n"
		"       %s [--json] TARGET... files\n"
		"       %s [--json] TARGET... read FILE\n"
		"       %s [--json] TARGET... write FILE [TEXT]\n"
		"       %s --version | --help\n"
		"\n"
		"Talk to the control endpoint of processes that use kernelkit.\n"
		"  ls      list the live processes of yours that serve an endpoint (as root:\n"
		"          every user's), those you cannot reach marked with why\n"
		"  files   list the virtual files a process serves\n"
		"  read    print a file\n"
		"  write   write TEXT to a file; without TEXT, read it from standard input\n"
		"\n"
		"targets (may be combined and repeated):\n"
		"  -p, --pid PID     the process PID\n"
		"  -n, --name NAME   every process with an endpoint named NAME (its command\n"
		"                    name or the base name of argv[0], like pgrep -x)\n"
		"  -T, --tree PID    PID and its descendants that have an endpoint; with -n,\n"
		"                    only those named NAME\n"
		"  -a, --all         every process with an endpoint that runs as you (real or\n"
		"                    effective uid; as root: every user's)\n"
		"  -M, --machine NAME  the processes of the container NAME (its host name, or\n"
		"                    a component of its cgroup path); with -M, -p PID is the\n"
		"                    pid inside the container\n"
		"options:\n"
		"  -H, --host [USER@]HOST[:PORT]  run the command on HOST over ssh (repeatable:\n"
		"                    in parallel, each reply after \"==> HOST <==\"; --json\n"
		"                    objects get \"host\"); $KKCTL_SSH replaces \"ssh -T -x -a\",\n"
		"                    $KKCTL_REMOTE the remote \"kkctl\"\n"
		"  -j, --json        one JSON object per line (per process for files/read/write)\n"
		"  -t, --timeout SECONDS  give up on a target whose whole reply takes longer\n"
		"                    (default 10, or $KKCTL_TIMEOUT)\n"
		"      --max-reply SIZE   give up on a target whose reply is larger (bytes,\n"
		"                    suffix K, M or G; default 64M, or $KKCTL_MAX_REPLY)\n"
		"  -V, --version     print the version\n"
		"  -h, --help        show this help\n"
		"\n"
		"With several targets, each reply is preceded by a line \"==> PID NAME <==\".\n"
		"A matched process kkctl cannot reach is reported, not skipped.  Processes in\n"
		"containers are found and reached by the pid you see them as.  Process PID\n"
		"serves the abstract Unix socket @kernelkit/PID.  Exit status: 0 ok, 1 failed\n"
		"(for any target), 2 usage.\n",
		prog, prog, prog, prog, prog);
}

/* ---- output: nothing a process sent reaches the terminal raw ---------------- */

/*
 * Print what a process sent us with its control characters escaped: the
 * process is not trusted to write to our terminal.  @keep: "\n\t" for file
 * text, "" for one-line fields.
 */
static void put_escaped(FILE *f, const char *s, size_t n, const char *keep)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(c && strchr(keep, c))) || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (c == '\\' && *keep == '\0')
			fputs("\\\\", f);
		else
			putc(c, f);
	}
}

/* A JSON string: quotes, backslashes and every control character escaped. */
static void put_json(FILE *f, const char *s, size_t n)
{
	putc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c == '\t')
			fputs("\\t", f);
		else if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\u%04x", c);
		else
			putc(c, f);
	}
	putc('"', f);
}

/* ---- processes ------------------------------------------------------------- */

struct target {
	pid_t pid;
	uid_t uid;
	char name[64];		/* comm */
	char argv0[64];		/* base name of argv[0] */
	bool selected;		/* by -n, --tree or --all (not only -p) */
	/* In a container (another network or pid namespace than ours): */
	bool contained;
	pid_t inpid;		/* its pid there */
	unsigned long netns;	/* its network namespace's inode */
	char host[72];		/* its UTS namespace's host name, if not ours */
	char cgroup[160];	/* its cgroup's path */
};

/* The effective uid of @pid from /proc/PID/status (and in @all, if given,
 * its real, effective, saved and filesystem uids).  -1 if gone. */
static long proc_uids(pid_t pid, long all[4])
{
	char path[64], line[256];
	long uid = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "Uid:", 4)) {
			long u[4] = { -1, -1, -1, -1 };

			if (sscanf(line + 4, "%ld %ld %ld %ld", &u[0], &u[1], &u[2], &u[3]) >= 2)
				uid = u[1];
			if (all)
				memcpy(all, u, sizeof(u));
			break;
		}
	fclose(f);
	return uid;
}

static long proc_uid(pid_t pid)
{
	return proc_uids(pid, NULL);
}

static bool proc_exists(pid_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) == 0;
}

/*
 * Where a process lives, seen from us.  Its endpoint is named after its pid
 * in its own pid namespace (the last field of NSpid in /proc/PID/status) and
 * bound in its network namespace: a container's process (docker, podman, a
 * Kubernetes pod: `unshare -n -p -f`) serves @kernelkit/1 where we cannot see
 * it.  /proc/PID/net/unix lists the sockets of PID's network namespace, and a
 * child of ours that enters it (setns) can connect (connect_in_ns()).
 */
struct where {
	pid_t inpid;		/* its pid in its own pid namespace */
	unsigned long netns;	/* /proc/PID/ns/net's inode; 0: we may not look */
	bool other_net;		/* its network namespace is not ours */
	bool other_pid;		/* its pid namespace is not ours (inpid != pid) */
};

static unsigned long ino_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

static unsigned long our_netns(void)
{
	static unsigned long ino;

	if (!ino)
		ino = ino_of("/proc/self/ns/net");
	return ino;
}

/* Fill @w for @pid.  -1 if it is gone.  A network namespace we may not look
 * at (another user's process, when we are not root) counts as ours: that is
 * where we would look for it, as before namespaces were looked at. */
static int proc_where(pid_t pid, struct where *w)
{
	char path[64], line[256];
	FILE *f;

	w->inpid = pid;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "NSpid:", 6)) {
			char *tok = line + 6, *end;
			long v;

			/* the last field: the pid in its innermost namespace */
			while ((v = strtol(tok, &end, 10)) > 0 && end != tok) {
				w->inpid = (pid_t)v;
				tok = end;
			}
			break;
		}
	fclose(f);
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	w->netns = ino_of(path);
	w->other_net = w->netns && w->netns != our_netns();
	w->other_pid = w->inpid != pid;
	return 0;
}

/* The container @pid belongs to, as the host names it: the path of its
 * cgroup (the unified hierarchy's, else systemd's), e.g.
 * /system.slice/docker-<id>.scope or /kubepods.slice/.../cri-containerd-<id>.scope.
 * "" if unknown. */
static void proc_cgroup(pid_t pid, char *buf, size_t bl)
{
	char path[64], line[512], uni[256] = "", sysd[256] = "", *q;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3))
			snprintf(uni, sizeof(uni), "%.255s", line + 3);
		else if ((q = strstr(line, ":name=systemd:")))
			snprintf(sysd, sizeof(sysd), "%.255s", q + 14);
	}
	if (f)
		fclose(f);
	snprintf(buf, bl, "%s", (uni[0] && strcmp(uni, "/")) || !sysd[0] ? uni : sysd);
}

static void proc_names(struct target *t)
{
	char path[64], buf[4096];
	FILE *f;
	size_t n;

	strcpy(t->name, "?");
	t->argv0[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(t->name, sizeof(t->name), f))
			t->name[strcspn(t->name, "\n")] = '\0';
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)t->pid);
	f = fopen(path, "re");
	if (f) {
		n = fread(buf, 1, sizeof(buf) - 1, f);
		buf[n] = '\0';
		fclose(f);
		const char *b = strrchr(buf, '/');

		b = b ? b + 1 : buf;
		n = strnlen(b, sizeof(t->argv0) - 1);
		memcpy(t->argv0, b, n);
		t->argv0[n] = '\0';
	}
}

/* ---- connecting, with the server verified before anything is sent ----------- */

static int connect_addr(const struct sockaddr_un *sa, socklen_t sl)
{
	/* connect() waits this long when the listen backlog is full: not more
	 * than a target's whole deadline. */
	double s = bounds.timeout_s < KK_CONTROL_TIMEOUT_MS / 1000 + 3 ?
		   bounds.timeout_s : KK_CONTROL_TIMEOUT_MS / 1000 + 3;
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
 * Our user namespace, for reading what SO_PEERCRED reports: a uid it does not
 * map shows as the overflow uid, which is then anyone at all.  Only the
 * initial namespace maps every uid; there the overflow uid is a real one
 * (nobody), and a process running as it may be root's to control.
 */
static struct {
	uid_t overflow;		/* /proc/sys/kernel/overflowuid */
	bool all_mapped;	/* /proc/self/uid_map is "0 0 4294967295" */
} userns = { 65534, false };

static void userns_load(void)
{
	unsigned long a, b, c;
	FILE *f = fopen("/proc/sys/kernel/overflowuid", "re");

	if (f) {
		if (fscanf(f, "%lu", &a) == 1)
			userns.overflow = (uid_t)a;
		fclose(f);
	}
	f = fopen("/proc/self/uid_map", "re");
	if (f) {
		userns.all_mapped = fscanf(f, "%lu %lu %lu", &a, &b, &c) == 3 && !a && !b &&
				    c == 4294967295UL && fgetc(f) == '\n' && fgetc(f) == EOF;
		fclose(f);
	}
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
 * that refusal may not last (request() tries again).
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
	if (cr.uid == userns.overflow && !userns.all_mapped) {
		snprintf(why, wl, "refusing process %d: your user namespace does not map its uid "
			 "(it shows as the overflow uid %u)", (int)pid, (unsigned)cr.uid);
		return why;
	}
	/* The socket's uid is the one its creator had at listen(): a daemon
	 * that dropped privileges since still has it as its real or saved uid. */
	owner = proc_uids(pid, ids);
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

/* ---- connecting from inside the target's namespaces --------------------------
 *
 * The endpoint judges the uid of whoever called connect(), mapped into its own
 * user namespace.  A rootless container's namespace does not map host root,
 * so host root would be the overflow uid there, a stranger.  So when the
 * target lives in another user namespace, a child enters it (setns) and
 * becomes its root -- the namespace's owner, mapped to uid 0 there -- and
 * connects; the socket comes back over SCM_RIGHTS and we run the exchange.
 * The same child enters the target's network namespace when that is not
 * ours (a container's): abstract names live there.  It never enters the pid
 * or mount namespace, so nothing runs in the container and nothing is
 * written to its files, and SO_PEERCRED, read by us, still reports the
 * endpoint's pid as we see it (the host pid), which check_peer() compares.
 * The kernel decides who may: setns() into a user namespace needs
 * CAP_SYS_ADMIN over it, which its owner and the root of an ancestor
 * namespace have and the root of a sibling namespace has not; into a network
 * namespace, CAP_SYS_ADMIN over its owner and over our own user namespace, so
 * a container's root cannot enter the host's or another container's.  A
 * child, because a multithreaded process cannot enter a user namespace and
 * because it changes its credentials.
 */

/* The steps of entering, in order; the child reports the one that failed. */
enum { ENTER_SETNS = 1, ENTER_SETRESGID, ENTER_SETRESUID, ENTER_NETNS, ENTER_UTSNS };
static const char *const enter_steps[] = {
	[ENTER_SETNS] = "setns", [ENTER_SETRESGID] = "setresgid", [ENTER_SETRESUID] = "setresuid",
	[ENTER_NETNS] = "setns", [ENTER_UTSNS] = "setns",
};

/* /proc/@pid/ns/@ns, opened, if it is not ours; else -1.  (One we cannot
 * open, without ptrace access to @pid, we cannot enter either.) */
static int ns_of(pid_t pid, const char *ns)
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
		return -1;
	}
	return fd;
}

static int userns_of(pid_t pid)
{
	return ns_of(pid, "user");
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

/* The namespaces a child enters (-1: stay in ours). */
struct nsfds {
	int net, user, uts;
};

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
 * (connect()'s).  If the child could not enter, -2, the failed step in
 * @m->step (-1: it died) and its errno in @m->err.
 */
static int in_ns(const struct nsfds *ns, const struct sockaddr_un *sa, socklen_t sl,
		 struct child_msg *m)
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
			fd = connect_addr(sa, sl);
			m->err = fd < 0 ? errno : 0;
		} else if (!m->step && gethostname(m->host, sizeof(m->host) - 1))
			m->host[0] = '\0';
		send_result(sp[1], m, fd);
		_exit(0);
	}
	close(sp[1]);
	fd = recv_result(sp[0], m);
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
	else if (m->step > 0)
		snprintf(note, nl, "could not enter process %d's %s namespace: %s: %s", (int)pid,
			 which, enter_steps[m->step], strerror(m->err));
	else
		snprintf(note, nl, "could not enter process %d's namespaces: %s", (int)pid,
			 m->err ? strerror(m->err) : "the helper process died");
}

/*
 * The host name of the UTS namespace @pid is in, if that is not ours (a
 * container's: docker and podman set it to the container's id or name,
 * Kubernetes to the pod's name).  "" if it is ours or we cannot enter it.
 */
static void proc_hostname(pid_t pid, char *buf, size_t bl)
{
	struct nsfds ns = { -1, userns_of(pid), ns_of(pid, "uts") };
	struct child_msg m;

	buf[0] = '\0';
	if (ns.uts >= 0 && in_ns(&ns, NULL, 0, &m) == 0)
		snprintf(buf, bl, "%s", m.host);
	if (ns.uts >= 0 && buf[0] == '\0' && ns.user >= 0) {	/* not as its root: as we are */
		close(ns.user);
		ns.user = -1;
		if (in_ns(&ns, NULL, 0, &m) == 0)
			snprintf(buf, bl, "%s", m.host);
	}
	if (ns.user >= 0)
		close(ns.user);
	if (ns.uts >= 0)
		close(ns.uts);
}

/* Fill @t's container fields (and its host name if @host: that takes a fork). */
static void target_where(struct target *t, bool host)
{
	struct where w;

	if (proc_where(t->pid, &w) || (!w.other_net && !w.other_pid))
		return;
	t->contained = true;
	t->inpid = w.inpid;
	t->netns = w.netns;
	proc_cgroup(t->pid, t->cgroup, sizeof(t->cgroup));
	if (host)
		proc_hostname(t->pid, t->host, sizeof(t->host));
}

/* Print @t's container: " [container HOST, pid N, cgroup PATH, net:[INO]]" in
 * text, ',"pid_inside":N,"container":{..}' in JSON; nothing if it is in
 * ours. */
static void put_container(FILE *f, const struct target *t)
{
	if (!t->contained)
		return;
	if (json) {
		fprintf(f, ",\"pid_inside\":%d,\"container\":{", (int)t->inpid);
		if (t->host[0]) {
			fputs("\"hostname\":", f);
			put_json(f, t->host, strlen(t->host));
			putc(',', f);
		}
		fputs("\"cgroup\":", f);
		put_json(f, t->cgroup, strlen(t->cgroup));
		fprintf(f, ",\"netns\":%lu}", t->netns);
		return;
	}
	fputs("  [", f);
	if (t->host[0]) {
		fputs("container ", f);
		put_escaped(f, t->host, strlen(t->host), "");
		fputs(", ", f);
	}
	fprintf(f, "pid %d inside", (int)t->inpid);
	if (t->cgroup[0]) {
		fputs(", cgroup ", f);
		put_escaped(f, t->cgroup, strlen(t->cgroup), "");
	}
	if (t->netns)
		fprintf(f, ", net:[%lu]", t->netns);
	putc(']', f);
}

/*
 * Is @t in the container @name?  Its host name, if its UTS namespace is not
 * ours (docker and podman set the container's id or --hostname, Kubernetes
 * the pod's name; `unshare -u` and hostname(1) do it by hand), or a component
 * of its cgroup path: the whole component (a systemd unit, a pod's slice) or
 * the id in "<engine>-<id>.scope" (docker-<id>.scope, libpod-<id>.scope,
 * cri-containerd-<id>.scope).
 */
static bool in_machine(const struct target *t, const char *name)
{
	const char *c = t->cgroup;
	size_t n = strlen(name);

	if (!t->contained)
		return false;
	if (t->host[0] && !strcmp(t->host, name))
		return true;
	while (*c) {
		size_t len = strcspn(c, "/");
		const char *dash;

		if (len == n && !memcmp(c, name, n))
			return true;
		dash = memrchr(c, '-', len);
		if (len > 6 && !memcmp(c + len - 6, ".scope", 6) && dash &&
		    (size_t)(c + len - 6 - dash - 1) == n && !memcmp(dash + 1, name, n))
			return true;
		c += len + (c[len] == '/');
	}
	return false;
}

/* The endpoint names in the network namespace of process @in (0: ours):
 * listening stream sockets (flag __SO_ACCEPTCON, 0x10000) in its
 * /proc/PID/net/unix named "@kernelkit/<pid>", "@kernelkit/<pid>/<n>" or
 * "@kernelkit/<pid>.<random>" (a process whose other names were squatted);
 * <pid> is a pid in the pid namespace of the process that bound it.  @each
 * gets that pid and the name without its '@' ("kernelkit/..."). */
static int scan_endpoints(pid_t in, void (*each)(pid_t pid, const char *name, void *arg),
			  void *arg)
{
	static const char prefix[] = "@" KK_CONTROL_ABSTRACT_PREFIX;
	char line[512], path[64];
	FILE *f;

	if (in > 0)
		snprintf(path, sizeof(path), "/proc/%d/net/unix", (int)in);
	else
		snprintf(path, sizeof(path), "/proc/net/unix");
	f = fopen(path, "re");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		char name[256] = "", *end;
		unsigned long flags;
		unsigned type, st;
		long pid, alt = 0;

		if (sscanf(line, "%*s %*s %*s %lx %x %x %*s %255s", &flags, &type, &st, name) != 4 ||
		    !(flags & 0x10000) || type != SOCK_STREAM ||
		    strncmp(name, prefix, sizeof(prefix) - 1))
			continue;
		pid = strtol(name + sizeof(prefix) - 1, &end, 10);
		if (*end == '/')
			alt = strtol(end + 1, &end, 10);
		else if (*end == KK_CONTROL_RANDOM_SEP && end[1])
			end += strspn(end + 1, "0123456789abcdef") + 1;
		if (pid <= 0 || alt < 0 || *end)
			continue;
		each((pid_t)pid, name + 1, arg);
	}
	fclose(f);
	return 0;
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
	struct child_msg m;
	int fd = entering ? in_ns(&r->ns, sa, sl, &m) : connect_addr(sa, sl);

	if (fd == -2) {
		enter_note(&m, r->pid, r->note, r->nl);
		if (r->ns.user >= 0 && m.step > 0 && m.step < ENTER_NETNS) {
			/* could not become its root: as we are (in its network
			 * namespace, if that is not ours), and the endpoint decides */
			close(r->ns.user);
			r->ns.user = -1;
			fd = r->ns.net >= 0 ? in_ns(&r->ns, sa, sl, &m) : connect_addr(sa, sl);
			if (fd == -2)
				enter_note(&m, r->pid, r->note, r->nl);
		}
	}
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
static int connect_pid(pid_t pid, char *why, size_t wl, char *note, size_t nl, char *via,
		       bool *again)
{
	struct reach r = { .pid = pid, .inpid = pid, .why = why, .wl = wl, .fd = -1,
			   .ns = { -1, userns_of(pid), -1 }, .note = note, .nl = nl };
	struct sockaddr_un sa;
	struct where w = { 0 };

	note[0] = '\0';
	if (!proc_where(pid, &w)) {
		r.inpid = w.inpid;
		if (w.other_net)
			r.ns.net = ns_of(pid, "net");
	}
	snprintf(why, wl, "process %d has no control endpoint", (int)pid);
	if (w.other_net)
		snprintf(why, wl, "process %d has no control endpoint in its network namespace",
			 (int)pid);
	try_name(&r, &sa, kk_control_addr(&sa, r.inpid));
	if (r.fd < 0 && !(w.other_net && r.ns.net < 0))	/* the name itself would not do */
		scan_endpoints(w.other_net ? pid : 0, try_alt, &r);
	if (r.ns.user >= 0)
		close(r.ns.user);
	if (r.ns.net >= 0)
		close(r.ns.net);
	snprintf(via, 128, "%s", r.fd >= 0 && r.refused ? r.addr : "");
	*again = r.fd < 0 && !r.lasting && proc_exists(pid);
	return r.fd;
}

/* Read a file until EOF into a malloc'ed, NUL-terminated buffer. */
static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = fread(buf + n, 1, cap - n - 1, f);
		if (r == 0 && ferror(f)) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += r;
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* ---- one request to one process, within its bounds --------------------------- */

/* Wait for @events on @fd until @deadline (kk_now_ns()): 1 ready, 0 too late,
 * -1 with errno. */
static int wait_fd(int fd, short events, uint64_t deadline)
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
		int w = wait_fd(fd, POLLOUT, deadline);
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
		w = wait_fd(fd, POLLIN, deadline);
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

struct result {
	int ok;
	bool named;		/* err is about the target: "process PID (NAME): err" */
	char *body;		/* the reply body (ok) or the process's message */
	size_t len;
	char err[512];		/* our own one-line error */
	char note[192];		/* why we could not enter its user namespace */
	char via[128];		/* the name we used after passing a foreign socket */
};

/* Did the exchange run out of its bounds?  Then say which in @res. */
static bool out_of_bounds(int err, struct result *res)
{
	char sz[32];

	if (err == -ETIMEDOUT)
		snprintf(res->err, sizeof(res->err), "no complete reply within %g s",
			 bounds.timeout_s);
	else if (err == -EFBIG)
		snprintf(res->err, sizeof(res->err), "reply larger than %s",
			 fmt_size(bounds.max_reply, sz, sizeof(sz)));
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
	struct timespec ts;

	if (now >= deadline)
		return false;
	if (ns > deadline - now)
		ns = deadline - now;
	ts.tv_sec = (time_t)(ns / 1000000000);
	ts.tv_nsec = (long)(ns % 1000000000);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	return kk_now_ns() < deadline;
}

/* connect_pid(), tried again (counted in *@tries) while the failure may pass. */
static int reach_pid(pid_t pid, uint64_t deadline, int *tries, struct result *res)
{
	for (;;) {
		bool again;
		int fd = connect_pid(pid, res->err, sizeof(res->err), res->note,
				     sizeof(res->note), res->via, &again);

		if (fd >= 0 || !again || *tries >= TRIES || !pause_before(++*tries, deadline))
			return fd;
	}
}

static void request(pid_t pid, const char *verb, const char *file, const char *body,
		    size_t blen, struct result *res)
{
	uint64_t deadline = kk_now_ns() + (uint64_t)(bounds.timeout_s * 1e9);
	char head[KK_CONTROL_NAME_MAX + 16], *resp, *nl;
	size_t rlen;
	int fd, status, n, err, tries = 1;

	n = snprintf(head, sizeof(head), "%s%s%s\n", verb, file ? " " : "", file ? file : "");
	for (;;) {
		memset(res, 0, sizeof(*res));
		resp = NULL;
		rlen = 0;
		fd = reach_pid(pid, deadline, &tries, res);
		if (fd < 0)
			return;
		/* A peer that refuses us may close before reading: EPIPE is not
		 * fatal, its reply (if any) says why. */
		err = send_by(fd, head, (size_t)n, deadline);
		if (!err && blen)
			err = send_by(fd, body, blen, deadline);
		shutdown(fd, SHUT_WR);
		if (err != -ETIMEDOUT)
			err = recv_by(fd, deadline, bounds.max_reply, &resp, &rlen);
		close(fd);
		/* Closed or reset before the first byte of a reply: the endpoint
		 * answers every request it runs, so it ran none and sending it
		 * again is safe.  Never once part of a reply came. */
		if (rlen || (err && err != -ECONNRESET && err != -EPIPE) || tries >= TRIES ||
		    !pause_before(++tries, deadline))
			break;
		free(resp);
	}
	if (res->via[0])	/* the squatter we passed by */
		fprintf(stderr, "%s: warning: skipped a foreign socket on process %d's name; "
			"using %s\n", prog, (int)pid, res->via);
	if (out_of_bounds(err, res) || err || !(nl = memchr(resp, '\n', rlen))) {
		if (!res->named)
			snprintf(res->err, sizeof(res->err), "process %d: no reply%s%s",
				 (int)pid, err ? ": " : "", err ? strerror(-err) : "");
		free(resp);
		return;
	}
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

/* ---- target selection -------------------------------------------------------
 *
 * -n, --tree and --all match processes that serve an endpoint, whether or not
 * we may use it: /proc/net/unix lists a name for the pid (its own or one
 * squatted on it), or the process has the endpoint's thread (its socket may be
 * gone for a moment while it is re-created).  Each one matched is tried and
 * reported, reached or not: none is left out because we could not reach it.
 */

struct tlist {
	struct target *v;
	size_t n, cap;
};

static int tlist_add(struct tlist *l, const struct target *t)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == t->pid)
			return 0;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct target *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *t;
	return 0;
}

/* The name src/control.c gives the endpoint's thread. */
#define CONTROL_THREAD "kk-control"

/* Every live process, from /proc: its parent, and whether it serves. */
static struct {
	struct proc {
		pid_t pid, ppid;
		struct where w;
		bool serves;	/* an endpoint name in its /proc/PID/net/unix, or the thread */
		bool in_tree;	/* in one of the --tree trees */
	} *v;
	size_t n, cap;
} procs;

struct pids {
	pid_t *v;
	size_t n, cap;
	bool nomem;
};

static void add_endpoint_pid(pid_t pid, const char *name, void *arg)
{
	struct pids *l = arg;

	(void)name;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		pid_t *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->nomem = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
}

static int cmp_pid_t(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static bool has_control_thread(pid_t pid)
{
	char path[96], comm[32];
	bool found = false;
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		FILE *f;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/comm", (int)pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		found = fgets(comm, sizeof(comm), f) && !strcmp(comm, CONTROL_THREAD "\n");
		fclose(f);
	}
	closedir(d);
	return found;
}

/* @pid's parent and number of threads, from /proc/PID/stat.  -1 if gone. */
static int proc_stat(pid_t pid, pid_t *ppid, long *threads)
{
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;
	int pp;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* after the command name, which may hold ')' */
	if (!p || sscanf(p + 1, " %*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %ld", &pp, threads) != 2)
		return -1;
	*ppid = (pid_t)pp;
	return 0;
}

static int cmp_proc(const void *a, const void *b)
{
	return cmp_pid_t(&((const struct proc *)a)->pid, &((const struct proc *)b)->pid);
}

static struct proc *find_proc(pid_t pid)
{
	struct proc key = { .pid = pid };

	return procs.n ? bsearch(&key, procs.v, procs.n, sizeof(key), cmp_proc) : NULL;
}

/* The endpoint names of one network namespace, by the pid they name. */
struct netns_eps {
	unsigned long netns;
	struct pids eps;
};

/* Fill procs.  Each distinct network namespace's sockets are read once, from
 * one of its processes' /proc/PID/net/unix; a process serves if its own
 * namespace has a name for its pid there.  -1 after saying why. */
static int load_procs(void)
{
	struct netns_eps *ns = NULL;
	size_t nns = 0;
	struct dirent *e;
	DIR *d;
	int ret = -1;

	if (!(d = opendir("/proc"))) {
		fprintf(stderr, "%s: /proc: %s\n", prog, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		struct proc p = { 0 };
		long pid, threads;
		char *end;

		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > 0x7fffffff)
			continue;
		p.pid = (pid_t)pid;
		if (proc_stat(p.pid, &p.ppid, &threads) || proc_where(p.pid, &p.w))
			continue;	/* gone */
		if (!p.w.other_net)
			p.w.netns = our_netns();
		/* The thread is looked for only when there is no name: a
		 * single-threaded process has none. */
		p.serves = threads > 1;		/* for now: may have the thread */
		if (procs.n == procs.cap) {
			size_t cap = procs.cap ? 2 * procs.cap : 256;
			struct proc *v = realloc(procs.v, cap * sizeof(*v));

			if (!v)
				goto nomem;
			procs.v = v;
			procs.cap = cap;
		}
		procs.v[procs.n++] = p;
	}
	if (procs.n)
		qsort(procs.v, procs.n, sizeof(*procs.v), cmp_proc);
	for (size_t i = 0; i < procs.n; i++) {
		struct proc *p = &procs.v[i];
		struct netns_eps *t = NULL;
		bool named;

		for (size_t j = 0; j < nns && !t; j++)
			if (ns[j].netns == p->w.netns)
				t = &ns[j];
		if (!t) {
			struct netns_eps *v = realloc(ns, (nns + 1) * sizeof(*v));

			if (!v)
				goto nomem;
			ns = v;
			t = &ns[nns++];
			memset(t, 0, sizeof(*t));
			t->netns = p->w.netns;
			/* A container's namespace we cannot read (it went away
			 * with its last process) just has no names. */
			if (scan_endpoints(p->w.other_net ? p->pid : 0, add_endpoint_pid, &t->eps) &&
			    !p->w.other_net)
				goto out;	/* (it said why) */
			if (t->eps.nomem)
				goto nomem;
			if (t->eps.n)
				qsort(t->eps.v, t->eps.n, sizeof(*t->eps.v), cmp_pid_t);
		}
		named = t->eps.n && bsearch(&p->w.inpid, t->eps.v, t->eps.n, sizeof(*t->eps.v),
					    cmp_pid_t);
		p->serves = named || (p->serves && has_control_thread(p->pid));
	}
	ret = 0;
	goto out;
nomem:
	fprintf(stderr, "%s: out of memory\n", prog);
out:
	closedir(d);
	for (size_t j = 0; j < nns; j++)
		free(ns[j].eps.v);
	free(ns);
	return ret;
}

/* Mark @root and its descendants (by parent links: a process that was
 * reparented, a daemon that double-forked, has left the tree).  False if
 * there is no process @root. */
static bool mark_tree(pid_t root)
{
	struct proc *r = find_proc(root);
	bool more = true;

	if (!r)
		return false;
	r->in_tree = true;
	while (more) {		/* until no process joins: depth passes at most */
		more = false;
		for (size_t i = 0; i < procs.n; i++) {
			struct proc *p = &procs.v[i], *parent;

			if (p->in_tree || p->ppid <= 0 || !(parent = find_proc(p->ppid)) ||
			    !parent->in_tree)
				continue;
			p->in_tree = more = true;
		}
	}
	return true;
}

/*
 * What --all (and ls) matches: a process that runs as you (its real or
 * effective uid is yours) or, for root, anybody's -- but never one whose uid
 * your user namespace does not map: it shows as the overflow uid, could be
 * anyone, and check_peer() refuses it.  So a user's --all on a shared host
 * stays within that user's processes.
 */
static bool yours(pid_t pid)
{
	long ids[4] = { -1, -1, -1, -1 };
	uid_t me = geteuid();

	if (proc_uids(pid, ids) < 0)
		return false;
	for (int i = 0; i < 2; i++) {
		if (ids[i] < 0 || ((uid_t)ids[i] == userns.overflow && !userns.all_mapped))
			continue;
		if (me == 0 || (uid_t)ids[i] == me)
			return true;
	}
	return false;
}

static bool name_matches(const struct target *t, char **names, int nn)
{
	for (int i = 0; i < nn; i++)
		if (!strcmp(t->name, names[i]) || !strcmp(t->argv0, names[i]))
			return true;
	return false;
}

/* The containers of -M, and the pids inside them of -p when -M is given. */
static struct {
	char **names;
	int n;
	pid_t *pids;
	int np;
} machines;

static bool machine_matches(const struct target *t)
{
	bool pid = !machines.np;

	for (int i = 0; i < machines.np && !pid; i++)
		pid = t->inpid == machines.pids[i];
	for (int i = 0; pid && i < machines.n; i++)
		if (in_machine(t, machines.names[i]))
			return true;
	return false;
}

/*
 * Add to @l, in pid order, every process that serves and is matched: by
 * @all (yours()), or by the names, trees and containers (-M, with -p the pids
 * inside them), which narrow each other (with both -n and --tree, a process
 * must have one of the names and be in one of the trees).  How many matched,
 * or -1 (out of memory).
 */
static long select_procs(struct tlist *l, bool all, char **names, int nn, bool trees)
{
	bool narrowed = nn || trees || machines.n;
	long matched = 0;

	for (size_t i = 0; i < procs.n; i++) {
		struct proc *p = &procs.v[i];
		struct target t = { .pid = p->pid, .selected = true };

		if (!p->serves || (!all && !narrowed))
			continue;
		t.uid = (uid_t)proc_uid(p->pid);
		proc_names(&t);
		target_where(&t, machines.n || json);
		if ((narrowed && (!nn || name_matches(&t, names, nn)) && (!trees || p->in_tree) &&
		     (!machines.n || machine_matches(&t))) ||
		    (all && !machines.n && yours(p->pid))) {
			if (tlist_add(l, &t))
				return -1;
			matched++;
		}
	}
	return matched;
}

/* ls: what --all matches, each tried (as a request would be) and marked if
 * we cannot reach it. */
static int cmd_ls(void)
{
	struct tlist all = { 0 };

	if (load_procs() || select_procs(&all, true, NULL, 0, false) < 0)
		return 1;
	if (!json)
		printf("%-8s %-6s %s\n", "PID", "UID", "COMMAND");
	for (size_t i = 0; i < all.n; i++) {
		struct target *t = &all.v[i];

		if (t->contained && !t->host[0])
			proc_hostname(t->pid, t->host, sizeof(t->host));
		uint64_t deadline = kk_now_ns() + (uint64_t)(bounds.timeout_s * 1e9);
		struct result r = { 0 };
		int tries = 1, fd = reach_pid(t->pid, deadline, &tries, &r);

		if (fd >= 0)
			close(fd);
		if (json) {
			printf("{\"pid\":%d,\"name\":", (int)t->pid);
			put_json(stdout, t->name, strlen(t->name));
			printf(",\"uid\":%ld", t->uid == (uid_t)-1 ? -1L : (long)t->uid);
			put_container(stdout, t);
			printf(",\"ok\":%s", fd >= 0 ? "true" : "false");
			if (fd < 0) {
				fputs(",\"error\":", stdout);
				put_json(stdout, r.err, strlen(r.err));
				if (r.note[0]) {
					fputs(",\"note\":", stdout);
					put_json(stdout, r.note, strlen(r.note));
				}
			}
			fputs("}\n", stdout);
			continue;
		}
		if (t->uid == (uid_t)-1)
			printf("%-8d %-6s ", (int)t->pid, "?");
		else
			printf("%-8d %-6u ", (int)t->pid, (unsigned)t->uid);
		put_escaped(stdout, t->name, strlen(t->name), "");
		put_container(stdout, t);
		if (fd < 0) {
			fputs("  (unreachable: ", stdout);
			put_escaped(stdout, r.err, strlen(r.err), "");
			if (r.note[0]) {
				fputs("; ", stdout);
				put_escaped(stdout, r.note, strlen(r.note), "");
			}
			putchar(')');
		}
		putchar('\n');
	}
	free(all.v);
	return fflush(stdout) ? 1 : 0;
}

/* ---- the per-process report ------------------------------------------------- */

static void report(const struct target *t, const struct result *r, bool many)
{
	if (json) {
		printf("{\"pid\":%d,\"name\":", (int)t->pid);
		put_json(stdout, t->name, strlen(t->name));
		printf(",\"uid\":%ld", t->uid == (uid_t)-1 ? -1L : (long)t->uid);
		put_container(stdout, t);
		printf(",\"ok\":%s,", r->ok ? "true" : "false");
		if (r->ok) {
			fputs("\"reply\":", stdout);
			put_json(stdout, r->body, r->len);
		} else {
			fputs("\"error\":", stdout);
			put_json(stdout, r->err, strlen(r->err));
			if (r->body && r->len) {
				fputs(",\"message\":", stdout);
				put_json(stdout, r->body, r->len);
			}
			if (r->note[0]) {
				fputs(",\"note\":", stdout);
				put_json(stdout, r->note, strlen(r->note));
			}
		}
		fputs("}\n", stdout);
		return;
	}
	if (r->ok) {
		if (many) {
			printf("==> %d ", (int)t->pid);
			put_escaped(stdout, t->name, strlen(t->name), "");
			printf(" <==\n");
		}
		put_escaped(stdout, r->body, r->len, "\n\t");
		return;
	}
	fflush(stdout);
	/* A process a selector found is named in its line, even alone: it
	 * may not be the one the caller thought of. */
	if (r->named || ((many || t->selected) && strcmp(t->name, "?"))) {
		fprintf(stderr, "%s: process %d (", prog, (int)t->pid);
		put_escaped(stderr, t->name, strlen(t->name), "");
		fputs("): ", stderr);
	} else if (many || t->selected)
		fprintf(stderr, "%s: process %d: ", prog, (int)t->pid);
	else
		fprintf(stderr, "%s: ", prog);
	put_escaped(stderr, r->err, strlen(r->err), "");
	if (r->body && r->len) {
		fputs(": ", stderr);
		put_escaped(stderr, r->body, r->len, "\n\t");
	}
	if (r->note[0])
		fprintf(stderr, " (%s)", r->note);
	fputc('\n', stderr);
}

/* ---- serving the targets, several at once -----------------------------------
 *
 * Most of a request's time is the target's (16154 sites switched, the
 * synchronizations that takes), so up to --jobs targets (default 8) are
 * served at once by threads.  Replies are printed in target order, each as
 * soon as it and those before it are done; a thread takes a target only
 * while it is fewer than --jobs ahead of the one printed next, so at most
 * --jobs replies (each within --max-reply) are held at a time.
 */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tlist *l;
	struct result *res;
	bool *done;
	size_t next, printed;
	const char *verb, *file, *body;
	size_t blen;
} pool = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, NULL, NULL, 0, 0,
	   NULL, NULL, NULL, 0 };

static void *serve_worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&pool.lock);
	for (;;) {
		size_t i;

		while (pool.next < pool.l->n && pool.next >= pool.printed + bounds.jobs)
			pthread_cond_wait(&pool.cond, &pool.lock);
		if (pool.next >= pool.l->n)
			break;
		i = pool.next++;
		pthread_mutex_unlock(&pool.lock);
		request(pool.l->v[i].pid, pool.verb, pool.file, pool.body, pool.blen, &pool.res[i]);
		pthread_mutex_lock(&pool.lock);
		pool.done[i] = true;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
	return NULL;
}

/* Serve every target of @l and report each, in order.  True if any failed. */
static bool serve_all(struct tlist *l, const char *verb, const char *file, const char *body,
		      size_t blen)
{
	pthread_t th[64];
	unsigned nth = 0, want = bounds.jobs < l->n ? bounds.jobs : (unsigned)l->n;
	bool failed = false;

	pool.l = l;
	pool.verb = verb;
	pool.file = file;
	pool.body = body;
	pool.blen = blen;
	pool.res = calloc(l->n ? l->n : 1, sizeof(*pool.res));
	pool.done = calloc(l->n ? l->n : 1, sizeof(*pool.done));
	if (!pool.res || !pool.done) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return true;
	}
	our_netns();		/* (its cache, before the threads) */
	while (want > 1 && nth < want && !pthread_create(&th[nth], NULL, serve_worker, NULL))
		nth++;
	if (!nth) {		/* one at a time (one target, --jobs 1, no thread) */
		for (size_t i = 0; i < l->n; i++) {
			request(l->v[i].pid, verb, file, body, blen, &pool.res[i]);
			report(&l->v[i], &pool.res[i], l->n > 1);
			failed |= !pool.res[i].ok;
			free(pool.res[i].body);
		}
		free(pool.res);
		free(pool.done);
		return failed;
	}
	pthread_mutex_lock(&pool.lock);
	for (size_t i = 0; i < l->n; i++) {
		while (!pool.done[i])
			pthread_cond_wait(&pool.cond, &pool.lock);
		pthread_mutex_unlock(&pool.lock);
		report(&l->v[i], &pool.res[i], l->n > 1);
		failed |= !pool.res[i].ok;
		free(pool.res[i].body);
		pthread_mutex_lock(&pool.lock);
		pool.printed = i + 1;
		pthread_cond_broadcast(&pool.cond);
	}
	pthread_mutex_unlock(&pool.lock);
	for (unsigned i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
	free(pool.res);
	free(pool.done);
	return failed;
}

/* ---- the bounds, from options or the environment ------------------------------ */

enum { OPT_MAX_REPLY = 256, OPT_JOBS };	/* long options without a short one */

static int parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || !(v > 0 && v <= 86400))	/* NaN too */
		return -1;
	bounds.timeout_s = v;
	return 0;
}

static int parse_jobs(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < 1 || v > 64)
		return -1;
	bounds.jobs = (unsigned)v;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned shift;
} size_units[] = {
	{ "", 0 }, { "K", 10 }, { "KiB", 10 }, { "M", 20 }, { "MiB", 20 }, { "G", 30 }, { "GiB", 30 },
};

/* At most 1 GiB: a larger reply is not one anybody reads from a terminal. */
static int parse_size(const char *s)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	for (size_t i = 0; !errno && i < sizeof(size_units) / sizeof(size_units[0]); i++)
		if (!strcmp(end, size_units[i].suffix)) {
			if (v == 0 || v > (1ull << 30) >> size_units[i].shift)
				return -1;
			bounds.max_reply = (size_t)(v << size_units[i].shift);
			return 0;
		}
	return -1;
}

static const struct bound {
	int opt;			/* what getopt_long() returns for it */
	const char *option, *env, *what;
	int (*parse)(const char *s);	/* sets it: 0, or -1 if invalid */
} bound_opts[] = {
	{ 't', "--timeout", "KKCTL_TIMEOUT",
	  "a number of seconds, more than 0 and at most 86400", parse_timeout },
	{ OPT_MAX_REPLY, "--max-reply", "KKCTL_MAX_REPLY",
	  "a size in bytes (suffix K, M or G), from 1 byte to 1 GiB", parse_size },
	{ OPT_JOBS, "--jobs", "KKCTL_JOBS", "a number from 1 to 64", parse_jobs },
};
#define NR_BOUNDS (sizeof(bound_opts) / sizeof(bound_opts[0]))

/* Set bound @i from @value, an option's or (@env) the environment's.  0, or 2
 * (usage) after saying why in one line. */
static int set_bound(size_t i, const char *value, bool env)
{
	const struct bound *b = &bound_opts[i];

	if (!b->parse(value))
		return 0;
	fprintf(stderr, "%s: bad %s%s", prog, env ? b->env : b->option, env ? "=" : " ");
	put_escaped(stderr, value, strlen(value), "");
	fprintf(stderr, ": %s\n", b->what);
	return 2;
}

/* The bounds no option gave, from the environment (an empty value is unset). */
static int bounds_from_env(const bool *given)
{
	for (size_t i = 0; i < NR_BOUNDS; i++) {
		const char *v = getenv(bound_opts[i].env);

		if (!given[i] && v && *v && set_bound(i, v, true))
			return 2;
	}
	return 0;
}

/* ---- -H: the same command on other hosts, over ssh ---------------------------
 *
 * kkctl -H [user@]host[:port] ... runs `ssh [-p port] [user@]host kkctl ...`
 * (the systemctl -H convention): the remote host needs kkctl and sshd, nothing
 * of ours.  Its arguments are rebuilt from what we parsed (no -H) and each is
 * single-quoted for the remote shell.  $KKCTL_SSH replaces "ssh -T -x -a"
 * (split at blanks: "ssh -i KEY -o BatchMode=yes"), $KKCTL_REMOTE the remote
 * command "kkctl" (inserted as it is: "sudo kkctl", "/opt/kk/bin/kkctl").
 * Hosts run in parallel, at most MAX_SSH at once; their output is printed in
 * the order of the -H options, each host's after a "==> HOST <==" line when
 * there are several, its error lines prefixed "HOST: ", and with --json a
 * "host" field first in each object.  Exit status 1 if any host failed.
 */
enum { MAX_SSH = 32 };

static struct {
	const char **argv;	/* the remote kkctl's arguments */
	int n;
} remote;

static int remote_arg(const char *a, const char *b)
{
	static int cap;

	if (remote.n + 2 > cap) {
		int nc = cap ? 2 * cap : 32;
		const char **v = realloc(remote.argv, (size_t)nc * sizeof(*v));

		if (!v)
			return -1;
		remote.argv = v;
		cap = nc;
	}
	remote.argv[remote.n++] = a;
	if (b)
		remote.argv[remote.n++] = b;
	return 0;
}

struct sshjob {
	const char *host;	/* as given */
	pid_t pid;
	int out, err, in;	/* pipes, -1 once closed */
	size_t in_off;
	char *obuf, *ebuf;	/* what came */
	size_t olen, ocap, elen, ecap;
	int status;
	bool started, done;
};

static int buf_add(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 4096;
		char *nb;

		while (nc < *len + n + 1)
			nc *= 2;
		if (!(nb = realloc(*buf, nc)))
			return -1;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* @s quoted for a POSIX shell, appended to @cmd. */
static int shell_quote(char **cmd, size_t *len, size_t *cap, const char *s)
{
	if (buf_add(cmd, len, cap, " '", 2))
		return -1;
	for (; *s; s++)
		if (*s == '\'' ? buf_add(cmd, len, cap, "'\\''", 4) : buf_add(cmd, len, cap, s, 1))
			return -1;
	return buf_add(cmd, len, cap, "'", 1);
}

/* Split "[user@]host[:port]" ("[v6addr]:port" too) into @dest and @port.
 * -1 if it is no host (empty, or would be read as an ssh option). */
static int parse_host(const char *h, char *dest, size_t dl, char *port, size_t pl)
{
	const char *at = strrchr(h, '@'), *hp = at ? at + 1 : h, *colon;
	size_t ul = at ? (size_t)(at - h + 1) : 0;

	port[0] = '\0';
	if (*h == '-' || !*hp || strlen(h) >= dl)
		return -1;
	if (*hp == '[') {		/* [::1]:2222 */
		const char *close = strchr(hp, ']');

		if (!close || close == hp + 1 || (close[1] && close[1] != ':'))
			return -1;
		snprintf(dest, dl, "%.*s%.*s", (int)ul, h, (int)(close - hp - 1), hp + 1);
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(hp, ':');
		if (colon && strchr(colon + 1, ':'))	/* a bare IPv6 address */
			colon = NULL;
		snprintf(dest, dl, "%.*s", (int)(colon ? (size_t)(colon - h) : strlen(h)), h);
	}
	if (colon) {
		if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
		    strlen(colon + 1) >= pl || atoi(colon + 1) < 1 || atoi(colon + 1) > 65535)
			return -1;
		snprintf(port, pl, "%s", colon + 1);
	}
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Start @j: ssh with its three pipes.  -1 after saying why. */
static int ssh_start(struct sshjob *j, const char *cmd)
{
	static const char *dflt = "ssh -T -x -a";
	const char *ssh = getenv("KKCTL_SSH");
	char dest[512], port[8], *words, *w, *save = NULL;
	const char *argv[64];
	int in[2], out[2], err[2], n = 0;

	if (!ssh || !*ssh)
		ssh = dflt;
	parse_host(j->host, dest, sizeof(dest), port, sizeof(port));	/* (checked) */
	if (!(words = strdup(ssh)))
		return -1;
	for (w = strtok_r(words, " \t", &save); w && n < 56; w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	if (port[0]) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	argv[n++] = dest;
	argv[n++] = cmd;
	argv[n] = NULL;
	j->started = true;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		fprintf(stderr, "%s: %s: pipe: %s\n", prog, j->host, strerror(errno));
		free(words);
		j->done = true;
		j->status = -1;
		return -1;
	}
	j->pid = fork();
	if (j->pid == 0) {
		signal(SIGPIPE, SIG_DFL);	/* ours is ignored, for our pipes */
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		execvp(argv[0], (char **)argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", prog, argv[0], strerror(errno));
		_exit(255);	/* as ssh does when it cannot connect: not the remote's */
	}
	free(words);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	j->in = in[1];
	j->out = out[0];
	j->err = err[0];
	if (j->pid < 0) {
		fprintf(stderr, "%s: %s: fork: %s\n", prog, j->host, strerror(errno));
		close_fd(&j->in);
		close_fd(&j->out);
		close_fd(&j->err);
		j->done = true;
		j->status = -1;
		return -1;
	}
	fcntl(j->in, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Print @j's output.  True if it failed. */
static bool ssh_print(const struct sshjob *j, bool many)
{
	bool failed = j->status != 0, any = false;
	const char *p, *e;

	if (!json && many) {
		fputs("==> ", stdout);
		put_escaped(stdout, j->host, strlen(j->host), "");
		fputs(" <==\n", stdout);
	}
	for (p = j->obuf; p && *p; p = e + (*e == '\n')) {
		e = p + strcspn(p, "\n");
		if (json && *p == '{') {	/* {"host":"h",...} */
			fputs("{\"host\":", stdout);
			put_json(stdout, j->host, strlen(j->host));
			if (p[1] != '}')
				putc(',', stdout);
			put_escaped(stdout, p + 1, (size_t)(e - p - 1), "\t");
			putc('\n', stdout);
			any = true;
		} else {
			put_escaped(stdout, p, (size_t)(e - p), "\t");
			putc('\n', stdout);
		}
	}
	fflush(stdout);
	for (p = j->ebuf; p && *p; p = e + (*e == '\n')) {
		e = p + strcspn(p, "\n");
		if (many) {
			put_escaped(stderr, j->host, strlen(j->host), "");
			fputs(": ", stderr);
		}
		put_escaped(stderr, p, (size_t)(e - p), "\t");
		putc('\n', stderr);
	}
	if (failed) {
		char what[64];

		if (j->status == -1)
			snprintf(what, sizeof(what), "could not run ssh");
		else if (WIFEXITED(j->status))
			snprintf(what, sizeof(what), "%s exited with status %d",
				 WEXITSTATUS(j->status) == 255 ? "ssh" : "the remote kkctl",
				 WEXITSTATUS(j->status));
		else
			snprintf(what, sizeof(what), "ssh killed by signal %d",
				 WTERMSIG(j->status));
		fprintf(stderr, "%s: host ", prog);
		put_escaped(stderr, j->host, strlen(j->host), "");
		fprintf(stderr, ": %s\n", what);
		if (json && !any) {	/* so that a consumer of the objects sees it */
			fputs("{\"host\":", stdout);
			put_json(stdout, j->host, strlen(j->host));
			fputs(",\"ok\":false,\"error\":", stdout);
			put_json(stdout, what, strlen(what));
			fputs("}\n", stdout);
		}
	}
	return failed;
}

/* Run the remote command on every host.  The exit status. */
static int run_hosts(const char **hosts, int nh, const char *in, size_t inlen)
{
	const char *rk = getenv("KKCTL_REMOTE");
	struct sshjob *jobs = calloc((size_t)nh, sizeof(*jobs));
	struct pollfd *pf = calloc((size_t)nh * 3, sizeof(*pf));
	char *cmd = NULL;
	size_t clen = 0, ccap = 0;
	int running = 0, next = 0, printed = 0, failed = 0;

	if (!jobs || !pf || buf_add(&cmd, &clen, &ccap, rk && *rk ? rk : "kkctl",
				    strlen(rk && *rk ? rk : "kkctl"))) {
		fprintf(stderr, "%s: out of memory\n", prog);
		return 1;
	}
	for (int i = 0; i < remote.n; i++)
		if (shell_quote(&cmd, &clen, &ccap, remote.argv[i])) {
			fprintf(stderr, "%s: out of memory\n", prog);
			return 1;
		}
	signal(SIGPIPE, SIG_IGN);	/* a host that stops reading its stdin */
	for (int i = 0; i < nh; i++) {
		jobs[i].host = hosts[i];
		jobs[i].in = jobs[i].out = jobs[i].err = -1;
	}
	while (printed < nh) {
		int np = 0;

		while (running < MAX_SSH && next < nh) {
			struct sshjob *j = &jobs[next++];

			if (!ssh_start(j, cmd)) {
				running++;
				if (!inlen)
					close_fd(&j->in);
			}
		}
		for (int i = 0; i < nh; i++) {
			struct sshjob *j = &jobs[i];

			if (!j->started || j->done)
				continue;
			if (j->in >= 0)
				pf[np++] = (struct pollfd){ j->in, POLLOUT, 0 };
			if (j->out >= 0)
				pf[np++] = (struct pollfd){ j->out, POLLIN, 0 };
			if (j->err >= 0)
				pf[np++] = (struct pollfd){ j->err, POLLIN, 0 };
			if (j->out < 0 && j->err < 0) {	/* both closed: reap */
				close_fd(&j->in);
				while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR)
					;
				j->done = true;
				running--;
			}
		}
		while (printed < nh && jobs[printed].done)
			failed |= ssh_print(&jobs[printed++], nh > 1);
		if (!np)
			continue;
		if (poll(pf, (nfds_t)np, -1) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < np; k++) {
			for (int i = 0; i < nh && pf[k].revents; i++) {
				struct sshjob *j = &jobs[i];
				char buf[65536];
				ssize_t r;

				if (pf[k].fd == j->in && j->in >= 0) {
					r = write(j->in, in + j->in_off, inlen - j->in_off);
					if (r > 0)
						j->in_off += (size_t)r;
					if ((r < 0 && errno != EAGAIN) || j->in_off == inlen)
						close_fd(&j->in);
				} else if (pf[k].fd == j->out || pf[k].fd == j->err) {
					bool o = pf[k].fd == j->out;

					r = read(pf[k].fd, buf, sizeof(buf));
					if (r > 0 && (o ? buf_add(&j->obuf, &j->olen, &j->ocap, buf,
								  (size_t)r) :
						      buf_add(&j->ebuf, &j->elen, &j->ecap, buf,
							      (size_t)r)))
						r = 0;	/* out of memory: what came */
					if (r == 0 || (r < 0 && errno != EINTR))
						close_fd(o ? &j->out : &j->err);
				} else
					continue;
				break;
			}
		}
	}
	for (int i = 0; i < nh; i++) {
		free(jobs[i].obuf);
		free(jobs[i].ebuf);
	}
	free(jobs);
	free(pf);
	free(cmd);
	free(remote.argv);
	if (fflush(stdout))
		return 1;
	return failed ? 1 : 0;
}

static const char *const commands[] = { "ls", "files", "read", "write" };

static int unknown_command(const char *cmd)
{
	fprintf(stderr, "%s: unknown command '", prog);
	put_escaped(stderr, cmd, strlen(cmd), "");
	fprintf(stderr, "' (commands: ls, files, read, write); try '%s --help'\n", prog);
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "name", required_argument, NULL, 'n' },
		{ "all", no_argument, NULL, 'a' },
		{ "tree", required_argument, NULL, 'T' },
		{ "machine", required_argument, NULL, 'M' },
		{ "host", required_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-reply", required_argument, NULL, OPT_MAX_REPLY },
		{ "jobs", required_argument, NULL, OPT_JOBS },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* Static: still reachable on an early exit (no leak reports). */
	static struct tlist targets;
	static char **names, *stdin_text;
	static pid_t *trees;
	static const char **hosts;
	const char *verb, *file = NULL, *text = NULL;
	bool want_all = false, known = false, given[NR_BOUNDS] = { false };
	size_t tlen = 0;
	int c, nn = 0, nt = 0, nh = 0, failed = 0, args;

	names = calloc((size_t)argc + 1, sizeof(char *));
	trees = calloc((size_t)argc + 1, sizeof(pid_t));
	machines.names = calloc((size_t)argc + 1, sizeof(char *));
	machines.pids = calloc((size_t)argc + 1, sizeof(pid_t));
	hosts = calloc((size_t)argc + 1, sizeof(char *));
	if (!names || !trees || !machines.names || !machines.pids || !hosts)
		return 1;
	while ((c = getopt_long(argc, argv, "+p:n:T:M:H:ajt:Vh", opts, NULL)) != -1) {
		static const struct {
			int opt;
			const char *as;
		} fwd[] = {
			{ 'p', "-p" }, { 'n', "-n" }, { 'T', "--tree" }, { 'M', "-M" },
			{ 'a', "--all" }, { 'j', "--json" }, { 't', "--timeout" },
			{ OPT_MAX_REPLY, "--max-reply" }, { OPT_JOBS, "--jobs" },
		};
		struct target t = { 0 };
		char *end;
		long pid;

		/* what a remote kkctl (-H) is given */
		for (size_t i = 0; i < sizeof(fwd) / sizeof(fwd[0]); i++)
			if (fwd[i].opt == c && remote_arg(fwd[i].as, c == 'a' || c == 'j' ? NULL :
							   optarg))
				return 1;
		switch (c) {
		case 'p':
		case 'T':
			pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0 || pid > 0x7fffffff) {
				fprintf(stderr, "%s: bad pid: %s\n", prog, optarg);
				return 2;
			}
			if (c == 'T') {
				trees[nt++] = (pid_t)pid;
				break;
			}
			machines.pids[machines.np++] = (pid_t)pid;	/* if -M comes */
			t.pid = (pid_t)pid;
			if (tlist_add(&targets, &t))
				return 1;
			break;
		case 'n':
			names[nn++] = optarg;
			break;
		case 'M':
			machines.names[machines.n++] = optarg;
			break;
		case 'H': {
			char dest[512], port[8];

			if (parse_host(optarg, dest, sizeof(dest), port, sizeof(port))) {
				fprintf(stderr, "%s: bad host: ", prog);
				put_escaped(stderr, optarg, strlen(optarg), "");
				fputs(" (want [user@]host[:port])\n", stderr);
				return 2;
			}
			hosts[nh++] = optarg;
			break;
		}
		case 'a':
			want_all = true;
			break;
		case 'j':
			json = true;
			break;
		case 't':
		case OPT_MAX_REPLY:
		case OPT_JOBS:
			for (size_t i = 0; i < NR_BOUNDS; i++)
				if (bound_opts[i].opt == c) {
					if (set_bound(i, optarg, false))
						return 2;
					given[i] = true;
				}
			break;
		case 'V':
			printf("kkctl (kernelkit) %s\n", KK_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "try '%s --help'\n", prog);
			return 2;
		}
	}
	if (bounds_from_env(given))
		return 2;
	/* A remote kkctl (-H) gets the bounds of our environment as options:
	 * the same command, whichever host runs it. */
	for (size_t i = 0; i < NR_BOUNDS; i++) {
		const char *v = getenv(bound_opts[i].env);

		if (nh && !given[i] && v && *v && remote_arg(bound_opts[i].option, v))
			return 1;
	}
	userns_load();
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		fprintf(stderr, "%s: no command (commands: ls, files, read, write); try '%s --help'\n",
			prog, prog);
		return 2;
	}
	verb = argv[0];
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		known |= !strcmp(verb, commands[i]);
	if (!known)
		return unknown_command(verb);
	args = argc - 1;
	for (int i = 0; i < argc; i++)
		if (remote_arg(argv[i], NULL))
			return 1;
	if (!strcmp(verb, "ls")) {
		if (args || targets.n || nn || nt || want_all) {
			fprintf(stderr, "%s: ls takes no target and no argument (but -M)\n", prog);
			return 2;
		}
		return nh ? run_hosts(hosts, nh, NULL, 0) : cmd_ls();
	}
	if ((!strcmp(verb, "files") && args != 0) || (!strcmp(verb, "read") && args != 1) ||
	    (!strcmp(verb, "write") && args != 1 && args != 2)) {
		fprintf(stderr, "%s: wrong number of arguments for %s; try '%s --help'\n", prog,
			verb, prog);
		return 2;
	}
	if (!targets.n && !nn && !nt && !want_all && !machines.n) {
		fprintf(stderr, "%s: %s needs a target: -p PID, -n NAME, --tree PID or --all\n",
			prog, verb);
		return 2;
	}
	if (machines.n)		/* -p PID is the pid inside the container */
		targets.n = 0;
	else
		machines.np = 0;
	file = args >= 1 ? argv[1] : NULL;
	if (file && strlen(file) >= KK_CONTROL_NAME_MAX) {
		fprintf(stderr, "%s: file name too long: %s\n", prog, file);
		return 2;
	}
	if (!strcmp(verb, "write")) {
		if (args == 2) {
			text = argv[2];
			tlen = strlen(text);
		} else {
			stdin_text = slurp(stdin, &tlen);
			if (!stdin_text) {
				fprintf(stderr, "%s: reading standard input: %s\n", prog,
					strerror(errno));
				return 1;
			}
			text = stdin_text;
		}
	}
	if (nh) {
		int st = run_hosts(hosts, nh, stdin_text, stdin_text ? tlen : 0);

		free(stdin_text);
		return st;
	}
	if (nn || nt || want_all || machines.n) {
		long matched;

		if (load_procs())
			return 1;
		/* A tree that is not there is a mistake, not an empty set: say
		 * so before anything is written anywhere. */
		for (int i = 0; i < nt; i++)
			if (!mark_tree(trees[i])) {
				fprintf(stderr, "%s: --tree %d: no such process\n", prog,
					(int)trees[i]);
				return 1;
			}
		matched = select_procs(&targets, want_all, names, nn, nt > 0);
		if (matched < 0)
			return 1;
		if (!matched && want_all) {
			fprintf(stderr, "%s: no process %shas a control endpoint\n", prog,
				geteuid() ? "of yours " : "");
			return 1;
		}
		if (!matched && machines.n) {
			fprintf(stderr, "%s: no process with a control endpoint in that container%s\n",
				prog, nn || nt || machines.np ? " matches" : "");
			return 1;
		}
		if (!matched) {
			fprintf(stderr, "%s: no process %s%s\n", prog,
				nt ? "in that tree " : "with a control endpoint ",
				nn && nt ? "with a control endpoint has that name" :
				nn ? "has that name" : "has a control endpoint");
			return 1;
		}
	}
	for (size_t i = 0; i < targets.n; i++) {
		struct target *t = &targets.v[i];

		if (!t->name[0]) {
			long uid = proc_uid(t->pid);

			t->uid = (uid_t)uid;
			proc_names(t);
			target_where(t, json);
		}
	}
	failed = serve_all(&targets, !strcmp(verb, "files") ? "list" : verb, file, text, tlen);
	free(stdin_text);
	free(procs.v);
	free(targets.v);
	free(names);
	free(trees);
	free(machines.names);
	free(machines.pids);
	if (fflush(stdout))
		return 1;
	return failed ? 1 : 0;
}
