// SPDX-License-Identifier: MIT
/*
 * kkctl: read and write the virtual files that kernelkit processes serve on
 * their control endpoints.
 *
 *   kkctl ls                              your processes that serve, reachable or not
 *   kkctl TARGETS files                   the files each target serves
 *   kkctl TARGETS read FILE               print a file of each target
 *   kkctl TARGETS write FILE [TEXT]       write TEXT (or stdin) to each target
 *   TARGETS: -p PID, -n NAME, --tree PID (each repeatable), --all
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
#include <poll.h>
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
} bounds = { 10, 64 << 20 };

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [--json] ls\n"
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
		"options:\n"
		"  -j, --json        one JSON object per line (per process for files/read/write)\n"
		"  -t, --timeout SECONDS  give up on a target whose whole reply takes longer\n"
		"                    (default 10, or $KKCTL_TIMEOUT)\n"
		"      --max-reply SIZE   give up on a target whose reply is larger (bytes,\n"
		"                    suffix K, M or G; default 64M, or $KKCTL_MAX_REPLY)\n"
		"  -V, --version     print the version\n"
		"  -h, --help        show this help\n"
		"\n"
		"With several targets, each reply is preceded by a line \"==> PID NAME <==\".\n"
		"A matched process kkctl cannot reach is reported, not skipped.  Process PID\n"
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

/* Is @pid in another network namespace than ours?  Its abstract sockets are
 * out of our sight then.  (False when we may not look: we cannot tell.) */
static bool other_netns(pid_t pid)
{
	struct stat ours, theirs;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	return !stat(path, &theirs) && !stat("/proc/self/ns/net", &ours) &&
	       (ours.st_dev != theirs.st_dev || ours.st_ino != theirs.st_ino);
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

/* ---- connecting from inside the target's user namespace ---------------------
 *
 * The endpoint judges the uid of whoever called connect(), mapped into its own
 * user namespace.  A rootless container's namespace does not map host root,
 * so host root would be the overflow uid there, a stranger.  So when the
 * target lives in another user namespace, a child enters it (setns) and
 * becomes its root -- the namespace's owner, mapped to uid 0 there -- and
 * connects; the socket comes back over SCM_RIGHTS and we run the exchange.
 * The kernel decides who may: setns() into a user namespace needs
 * CAP_SYS_ADMIN over it, which its owner and the root of an ancestor
 * namespace have and the root of a sibling namespace has not.  A child,
 * because a multithreaded process cannot enter a user namespace and because
 * it changes its credentials.
 */

/* The steps of entering, in order; the child reports the one that failed. */
enum { ENTER_SETNS = 1, ENTER_SETRESGID, ENTER_SETRESUID };
static const char *const enter_steps[] = {
	[ENTER_SETNS] = "setns", [ENTER_SETRESGID] = "setresgid", [ENTER_SETRESUID] = "setresuid",
};

/* @pid's user namespace, opened, if it is not ours; else -1.  (One we cannot
 * open, without ptrace access to @pid, we cannot enter either.) */
static int userns_of(pid_t pid)
{
	struct stat ours, theirs;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (stat("/proc/self/ns/user", &ours) || fstat(fd, &theirs) ||
	    (ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino)) {
		close(fd);
		return -1;
	}
	return fd;
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

/* In the child: { failed step or 0, errno } and the socket if connected. */
static void send_result(int sp, int step, int err, int fd)
{
	int msg[2] = { step, err };
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { msg, sizeof(msg) };
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

/* In the parent: the child's { step, errno } and socket (or -1).  -1 if it
 * died without a word. */
static int recv_result(int sp, int msg[2])
{
	union {
		struct cmsghdr h;
		char b[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct iovec iov = { msg, 2 * sizeof(int) };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b,
			     .msg_controllen = sizeof(ctl.b) };
	struct cmsghdr *c;
	ssize_t n;
	int fd = -1;

	do
		n = recvmsg(sp, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n != 2 * (ssize_t)sizeof(int))
		return msg[0] = -1, -1;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(&fd, CMSG_DATA(c), sizeof(int));
	return fd;
}

/*
 * Connect to @sa from a child that entered the user namespace @nsfd as its
 * root.  The socket, or -1 with errno (connect()'s).  If the child could not
 * enter, -2 and why in @note.
 */
static int connect_in_userns(int nsfd, pid_t pid, const struct sockaddr_un *sa, socklen_t sl,
			     char *note, size_t nl)
{
	int sp[2], msg[2] = { -1, 0 }, fd = -1, st;
	pid_t child;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) || (child = fork()) < 0) {
		snprintf(note, nl, "cannot enter process %d's user namespace: %s", (int)pid,
			 strerror(errno));
		return -2;
	}
	if (child == 0) {
		int step = become_ns_root(nsfd), err = errno;

		if (!step) {
			fd = connect_addr(sa, sl);
			err = fd < 0 ? errno : 0;
		}
		send_result(sp[1], step, err, fd);
		_exit(0);
	}
	close(sp[1]);
	fd = recv_result(sp[0], msg);
	close(sp[0]);
	while (waitpid(child, &st, 0) < 0 && errno == EINTR)
		;
	if (msg[0] == 0) {
		errno = msg[1];
		return fd;
	}
	if (msg[0] > 0)
		snprintf(note, nl, "could not enter process %d's user namespace as its root: "
			 "%s: %s", (int)pid, enter_steps[msg[0]], strerror(msg[1]));
	else
		snprintf(note, nl, "could not enter process %d's user namespace: the helper "
			 "process died", (int)pid);
	return -2;
}

/* The endpoint names in /proc/net/unix: listening stream sockets (flag
 * __SO_ACCEPTCON, 0x10000) named "@kernelkit/<pid>", "@kernelkit/<pid>/<n>"
 * or "@kernelkit/<pid>.<random>" (a process whose other names were squatted).
 * @each gets the pid and the name without its '@' ("kernelkit/..."). */
static int scan_endpoints(void (*each)(pid_t pid, const char *name, void *arg), void *arg)
{
	static const char prefix[] = "@" KK_CONTROL_ABSTRACT_PREFIX;
	char line[512];
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f) {
		fprintf(stderr, "%s: /proc/net/unix: %s\n", prog, strerror(errno));
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
	char *why;
	size_t wl;
	bool any, refused;
	bool lasting;		/* a failure that trying again will not change */
	int fd;			/* the verified connection, or -1 */
	int nsfd;		/* the pid's user namespace if not ours, or -1 */
	char addr[128];		/* its name, with '@' */
	char *note;		/* why we could not enter it, if we could not */
	size_t nl;
};

/* Connect to @sa and verify its owner; a refused one is reported in r->why. */
static void try_name(struct reach *r, const struct sockaddr_un *sa, socklen_t sl)
{
	bool stale = false;
	int fd = r->nsfd >= 0 ? connect_in_userns(r->nsfd, r->pid, sa, sl, r->note, r->nl) : -2;

	if (fd == -2) {		/* not entering: as we are, and the endpoint decides */
		if (r->nsfd >= 0)
			close(r->nsfd);
		r->nsfd = -1;
		fd = connect_addr(sa, sl);
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
	if (pid != r->pid || r->fd >= 0 || !strcmp(name, own))
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
	struct reach r = { .pid = pid, .why = why, .wl = wl, .fd = -1, .nsfd = userns_of(pid),
			   .note = note, .nl = nl };
	struct sockaddr_un sa;

	if (other_netns(pid))
		snprintf(why, wl, "process %d has no control endpoint in this network namespace "
			 "(it is in another: nsenter -t %d -n kkctl -p %d ...)", (int)pid, (int)pid,
			 (int)pid);
	else
		snprintf(why, wl, "process %d has no control endpoint", (int)pid);
	note[0] = '\0';
	try_name(&r, &sa, kk_control_addr(&sa, pid));
	if (r.fd < 0)		/* the name itself would not do */
		scan_endpoints(try_alt, &r);
	if (r.nsfd >= 0)
		close(r.nsfd);
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
		bool serves;	/* an endpoint name in /proc/net/unix, or the thread */
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

/* Fill procs.  -1 after saying why. */
static int load_procs(void)
{
	struct pids eps = { 0 };
	struct dirent *e;
	DIR *d;

	if (scan_endpoints(add_endpoint_pid, &eps)) {	/* (it said why) */
		free(eps.v);
		return -1;
	}
	if (eps.nomem || !(d = opendir("/proc"))) {
		fprintf(stderr, "%s: %s%s\n", prog, eps.nomem ? "" : "/proc: ",
			eps.nomem ? "out of memory" : strerror(errno));
		free(eps.v);
		return -1;
	}
	if (eps.n)
		qsort(eps.v, eps.n, sizeof(*eps.v), cmp_pid_t);
	while ((e = readdir(d))) {
		struct proc p = { 0 };
		long pid, threads;
		char *end;

		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > 0x7fffffff)
			continue;
		p.pid = (pid_t)pid;
		if (proc_stat(p.pid, &p.ppid, &threads))
			continue;	/* gone */
		/* The thread is looked for only when there is no name: a
		 * single-threaded process has none. */
		p.serves = (eps.n && bsearch(&p.pid, eps.v, eps.n, sizeof(*eps.v), cmp_pid_t)) ||
			   (threads > 1 && has_control_thread(p.pid));
		if (procs.n == procs.cap) {
			size_t cap = procs.cap ? 2 * procs.cap : 256;
			struct proc *v = realloc(procs.v, cap * sizeof(*v));

			if (!v) {
				fprintf(stderr, "%s: out of memory\n", prog);
				closedir(d);
				free(eps.v);
				return -1;
			}
			procs.v = v;
			procs.cap = cap;
		}
		procs.v[procs.n++] = p;
	}
	closedir(d);
	free(eps.v);
	if (procs.n)
		qsort(procs.v, procs.n, sizeof(*procs.v), cmp_proc);
	return 0;
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

/*
 * Add to @l, in pid order, every process that serves and is matched: by
 * @all (yours()), or by the names and trees, which narrow each other (with
 * both, a process must have one of the names and be in one of the trees).
 * How many matched, or -1 (out of memory).
 */
static long select_procs(struct tlist *l, bool all, char **names, int nn, bool trees)
{
	long matched = 0;

	for (size_t i = 0; i < procs.n; i++) {
		struct proc *p = &procs.v[i];
		struct target t = { .pid = p->pid, .selected = true };

		if (!p->serves || (!all && !nn && !trees))
			continue;
		t.uid = (uid_t)proc_uid(p->pid);
		proc_names(&t);
		if (((nn || trees) && (!nn || name_matches(&t, names, nn)) &&
		     (!trees || p->in_tree)) || (all && yours(p->pid))) {
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
		uint64_t deadline = kk_now_ns() + (uint64_t)(bounds.timeout_s * 1e9);
		struct result r = { 0 };
		int tries = 1, fd = reach_pid(t->pid, deadline, &tries, &r);

		if (fd >= 0)
			close(fd);
		if (json) {
			printf("{\"pid\":%d,\"name\":", (int)t->pid);
			put_json(stdout, t->name, strlen(t->name));
			printf(",\"uid\":%ld,\"ok\":%s", t->uid == (uid_t)-1 ? -1L : (long)t->uid,
			       fd >= 0 ? "true" : "false");
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
		printf(",\"uid\":%ld,\"ok\":%s,", t->uid == (uid_t)-1 ? -1L : (long)t->uid,
		       r->ok ? "true" : "false");
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

/* ---- the bounds, from options or the environment ------------------------------ */

enum { OPT_MAX_REPLY = 256 };	/* long options without a short one */

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
		{ "json", no_argument, NULL, 'j' },
		{ "timeout", required_argument, NULL, 't' },
		{ "max-reply", required_argument, NULL, OPT_MAX_REPLY },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	/* Static: still reachable on an early exit (no leak reports). */
	static struct tlist targets;
	static char **names, *stdin_text;
	static pid_t *trees;
	const char *verb, *file = NULL, *text = NULL;
	bool want_all = false, known = false, given[NR_BOUNDS] = { false };
	size_t tlen = 0;
	int c, nn = 0, nt = 0, failed = 0, args;

	names = calloc((size_t)argc + 1, sizeof(char *));
	trees = calloc((size_t)argc + 1, sizeof(pid_t));
	if (!names || !trees)
		return 1;
	while ((c = getopt_long(argc, argv, "+p:n:T:ajt:Vh", opts, NULL)) != -1) {
		struct target t = { 0 };
		char *end;
		long pid;

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
			t.pid = (pid_t)pid;
			if (tlist_add(&targets, &t))
				return 1;
			break;
		case 'n':
			names[nn++] = optarg;
			break;
		case 'a':
			want_all = true;
			break;
		case 'j':
			json = true;
			break;
		case 't':
		case OPT_MAX_REPLY:
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
	if (!strcmp(verb, "ls")) {
		if (args || targets.n || nn || nt || want_all) {
			fprintf(stderr, "%s: ls takes no target and no argument\n", prog);
			return 2;
		}
		return cmd_ls();
	}
	if ((!strcmp(verb, "files") && args != 0) || (!strcmp(verb, "read") && args != 1) ||
	    (!strcmp(verb, "write") && args != 1 && args != 2)) {
		fprintf(stderr, "%s: wrong number of arguments for %s; try '%s --help'\n", prog,
			verb, prog);
		return 2;
	}
	if (!targets.n && !nn && !nt && !want_all) {
		fprintf(stderr, "%s: %s needs a target: -p PID, -n NAME, --tree PID or --all\n",
			prog, verb);
		return 2;
	}
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
	if (nn || nt || want_all) {
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
		struct result r;

		if (!t->name[0]) {
			long uid = proc_uid(t->pid);

			t->uid = (uid_t)uid;
			proc_names(t);
		}
		request(t->pid, !strcmp(verb, "files") ? "list" : verb, file, text, tlen, &r);
		report(t, &r, targets.n > 1);
		failed |= !r.ok;
		free(r.body);
	}
	free(stdin_text);
	free(procs.v);
	free(targets.v);
	free(names);
	free(trees);
	if (fflush(stdout))
		return 1;
	return failed ? 1 : 0;
}
