// SPDX-License-Identifier: MIT
/*
 * kkctl: what /proc says about a process: its uids, names, namespaces, cgroup,
 * parent, threads, and the endpoint names its network namespace lists.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "control_path.h"
#include "kkctl.h"

/*
 * Read /proc/@pid/@leaf into @buf (NUL-terminated; cut to @n - 1 bytes):
 * open, one read, close.  A /proc file of a process is made whole by the
 * read that asks for it, so one read of a buffer that holds it is all of
 * it; stdio would add an fstat() and a second read() for the end, and the
 * selection makes these calls for every process on the machine (issue 41:
 * beside 100 busy processes each call waits for a core).  Bytes, or -1 if
 * the process is gone (errno set).  (common/'s kk_read_proc() is the
 * library's: kkctl links none of it.)
 */
static ssize_t read_once(pid_t pid, const char *leaf, char *buf, size_t n)
{
	char path[64];
	ssize_t r;
	int fd, e;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, leaf);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	r = read(fd, buf, n - 1);
	e = errno;
	close(fd);
	buf[r > 0 ? r : 0] = '\0';
	errno = e;
	return r;
}

/*
 * The lines of /proc/PID/status kkctl uses, in one read: the kernel builds
 * the whole file for each open (every thread's state, every capability
 * set), so a selection reads it at most once a process (issue 41).  @uids
 * gets the real, effective, saved and filesystem uids, *@inpid the last
 * field of NSpid (the pid in its innermost pid namespace).  -1 if gone.
 */
static int read_status(pid_t pid, long uids[4], pid_t *inpid)
{
	char buf[4096], *line;

	if (read_once(pid, "status", buf, sizeof(buf)) < 0)
		return -1;
	if ((line = strstr(buf, "\nUid:")))
		sscanf(line + 5, "%ld %ld %ld %ld", &uids[0], &uids[1], &uids[2], &uids[3]);
	if ((line = strstr(buf, "\nNSpid:"))) {
		char *tok = line + 7, *end;
		long v;

		/* the last field: the pid in its innermost namespace */
		while ((v = strtol(tok, &end, 10)) > 0 && end != tok) {
			*inpid = (pid_t)v;
			tok = end;
		}
	}
	return 0;
}

/* The effective uid of @pid from /proc/PID/status (and in @all, if given,
 * its real, effective, saved and filesystem uids).  -1 if gone. */
long kkctl_proc_uids(pid_t pid, long all[4])
{
	long u[4] = { -1, -1, -1, -1 };
	pid_t inpid = pid;

	if (read_status(pid, u, &inpid))
		return -1;
	if (all)
		memcpy(all, u, sizeof(u));
	return u[1];
}

long kkctl_proc_uid(pid_t pid)
{
	return kkctl_proc_uids(pid, NULL);
}

bool kkctl_proc_exists(pid_t pid)
{
	char path[32];

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	return access(path, F_OK) == 0;
}

static unsigned long ino_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (unsigned long)st.st_ino;
}

/* The fields of /proc/PID/stat that kkctl uses. */
struct proc_stat {
	char state;			/* field 3 */
	int ppid;			/* field 4 */
	long threads;			/* field 20 */
	unsigned long long start;	/* field 22: clock ticks after boot */
};

/*
 * Read @pid's /proc/PID/stat into @ps.  A pid names a process only as long
 * as it lives: the pair (pid, start) names it for good.  -1 if there is no
 * such process.
 */
static int read_stat(pid_t pid, struct proc_stat *ps)
{
	char buf[1024], *p;

	if (read_once(pid, "stat", buf, sizeof(buf)) < 0)
		return -1;
	p = strrchr(buf, ')');	/* after the command name, which may hold ')' */
	if (!p || sscanf(p + 1, " %c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d "
			 "%*d %*d %ld %*d %llu", &ps->state, &ps->ppid, &ps->threads,
			 &ps->start) != 4)
		return -1;
	return 0;
}

/* @pid's start time, or 0 if it is gone (or a zombie: it serves nothing). */
unsigned long long kkctl_proc_start(pid_t pid)
{
	struct proc_stat ps;

	if (read_stat(pid, &ps) || ps.state == 'Z' || ps.state == 'X')
		return 0;
	return ps.start ? ps.start : 1;	/* (a process started in the boot's first tick) */
}

/*
 * A target is a process, not a pid, and its start time alone does not say
 * which: it counts clock ticks (10 ms), and a pid given again within one
 * tick (a short-lived process, a pid namespace's few pids) comes with the
 * same start.  A pidfd stays with the process it was opened on, across exec
 * too, so each target holds one, opened before its start is read: if the
 * pid changed hands in between, the pidfd says its process exited.  They
 * take at most half the descriptors we may open (the rest are for the
 * connections); a target past that has its start time alone.
 */
static struct {
	long open, max;
} pidfds;

void kkctl_target_watch(struct target *t)
{
	struct rlimit rl;

	if (t->watched)
		return;
	if (!pidfds.max)
		pidfds.max = getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur > 1 << 20 ?
			     512 : (long)(rl.rlim_cur / 2);
	if (pidfds.open >= pidfds.max)
		return;
	t->pidfd = (int)syscall(SYS_pidfd_open, t->pid, 0);	/* close-on-exec */
	t->watched = t->pidfd >= 0;
	pidfds.open += t->watched;
}

void kkctl_target_unwatch(struct target *t)
{
	if (!t->watched)
		return;
	close(t->pidfd);
	t->watched = false;
	pidfds.open--;
}

/* Is the process @t was (its pidfd, else its pid and start time) still
 * alive, not a zombie?  Start 0 (it was gone when we looked) is no process. */
bool kkctl_target_alive(const struct target *t)
{
	struct pollfd p = { .fd = t->watched ? t->pidfd : -1, .events = POLLIN };

	if (poll(&p, 1, 0) > 0)	/* readable: it exited (a zombie is) */
		return false;
	return t->start && kkctl_proc_start(t->pid) == t->start;
}

/* Our network namespace: its inode, and its /proc/net/unix's (see
 * kkctl_proc_where()), and our pid namespace's.  Filled by the first call,
 * before any thread. */
static struct {
	unsigned long ns, unix_list, pidns;
} ours;

unsigned long kkctl_our_netns(void)
{
	if (!ours.ns) {
		ours.ns = ino_of("/proc/self/ns/net");
		ours.unix_list = ino_of("/proc/self/net/unix");
		ours.pidns = ino_of("/proc/self/ns/pid");
	}
	return ours.ns;
}

/*
 * @pid's pid in its own pid namespace, into @w.  A process in our pid
 * namespace (/proc/PID/ns/pid is ours) has the pid we see: its status is not
 * read, only stat()ed links.  Else NSpid says, and Uid comes with it
 * (w->have_uids).  -1 if it is gone.
 */
static int where_pid(pid_t pid, struct where *w, bool want_uids)
{
	char path[64];
	unsigned long ino;

	w->inpid = pid;
	w->have_uids = false;
	for (int i = 0; i < 4; i++)
		w->uids[i] = -1;
	if (!want_uids) {
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)pid);
		kkctl_our_netns();
		ino = ino_of(path);
		if (ino && ino == ours.pidns)
			return 0;
		if (!ino && errno == ENOENT)
			return -1;
	}
	if (read_status(pid, w->uids, &w->inpid))
		return -1;
	w->have_uids = true;
	return 0;
}

/* Fill @w for @pid (with its uids, reading its status, if @want_uids).  -1
 * if it is gone.  A network namespace we may not look at (another user's
 * process, when we are not root) counts as ours: that is where we would look
 * for it, as before namespaces were looked at. */
int kkctl_proc_where_ids(pid_t pid, struct where *w, bool want_uids)
{
	char path[64];

	if (where_pid(pid, w, want_uids))
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	w->netns = ino_of(path);
	w->net_err = w->netns ? 0 : errno;
	w->other_net = w->netns && w->netns != kkctl_our_netns();
	/* Without ptrace access to @pid (another user's process) its
	 * namespace cannot be looked at, but its socket list can: each
	 * network namespace has its own /proc/net/unix entry, whose inode
	 * tells them apart. */
	if (!w->netns && w->net_err != ENOENT) {
		unsigned long theirs;

		kkctl_our_netns();
		snprintf(path, sizeof(path), "/proc/%d/net/unix", (int)pid);
		theirs = ino_of(path);
		w->other_net = ours.unix_list && theirs && theirs != ours.unix_list;
	}
	w->other_pid = w->inpid != pid;
	return 0;
}

int kkctl_proc_where(pid_t pid, struct where *w)
{
	return kkctl_proc_where_ids(pid, w, false);
}

/* The container @pid belongs to, as the host names it: the path of its
 * cgroup (the unified hierarchy's, else systemd's named v1 one's, where the
 * unified one is "/" or absent), e.g. /system.slice/docker-<id>.scope or
 * /kubepods.slice/.../cri-containerd-<id>.scope, cut to @bl.  "" if unknown.
 * Lines are read whole: a path may be as long as PATH_MAX (a unit's name
 * alone may be 255), and a cut one names a component that is not there. */
void kkctl_proc_cgroup(pid_t pid, char *buf, size_t bl)
{
	char path[64], *line = NULL, *q;
	size_t cap = 0;
	bool uni = false;	/* buf holds the unified hierarchy's path, not "/" */
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	f = fopen(path, "re");
	while (f && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "0::", 3) && (strcmp(line + 3, "/") || !buf[0])) {
			snprintf(buf, bl, "%s", line + 3);
			uni = strcmp(line + 3, "/") != 0;
		} else if (!uni && (q = strstr(line, ":name=systemd:"))) {
			snprintf(buf, bl, "%s", q + 14);
		}
	}
	free(line);
	if (f)
		fclose(f);
}

/* @t's comm ("?" if it is gone): its name in reports, and what -n matches
 * first. */
void kkctl_proc_comm(struct target *t)
{
	if (read_once(t->pid, "comm", t->name, sizeof(t->name)) > 0)
		t->name[strcspn(t->name, "\n")] = '\0';
	else
		strcpy(t->name, "?");
}

/* The base name of @t's argv[0] ("" if it is gone): -n's other name, read
 * only when the comm did not match. */
void kkctl_proc_argv0(struct target *t)
{
	char path[64], buf[4096];
	FILE *f;
	size_t n;

	t->argv0[0] = '\0';
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

/* @t's comm and the base name of its argv[0], what -n matches ("?" and ""
 * if it is gone). */
void kkctl_proc_names(struct target *t)
{
	kkctl_proc_comm(t);
	kkctl_proc_argv0(t);
}

/* The endpoint names in the network namespace of process @in (0: ours):
 * listening stream sockets (flag __SO_ACCEPTCON, 0x10000) in its
 * /proc/PID/net/unix named "@kernelkit/<pid>", "@kernelkit/<pid>/<n>" or
 * "@kernelkit/<pid>.<random>" (a process whose other names were squatted);
 * <pid> is a pid in the pid namespace of the process that bound it.  @each
 * gets that pid and the name without its '@' ("kernelkit/..."). */
int kkctl_scan_endpoints(pid_t in, void (*each)(pid_t pid, const char *name, void *arg),
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
		/* A process gone since it was listed has no names: not an error
		 * (the gone-process rule, docs/control.md). */
		if (in <= 0 || errno != ENOENT)
			fprintf(stderr, "%s: %s: %s\n", kkctl_prog, path, strerror(errno));
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

/* The name src/control.c gives the endpoint's thread. */
#define CONTROL_THREAD "kk-control"

/* Has @pid the endpoint's thread?  Its socket may be gone for a moment
 * while the endpoint re-creates it, the thread is not. */
bool kkctl_has_control_thread(pid_t pid)
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
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "task/%.16s/comm", e->d_name);
		found = read_once(pid, path, comm, sizeof(comm)) > 0 &&
			!strcmp(comm, CONTROL_THREAD "\n");
	}
	closedir(d);
	return found;
}

/* @pid's parent, number of threads and start time (as kkctl_proc_start()
 * says it), from one read of /proc/PID/stat.  -1 if gone. */
int kkctl_proc_stat(pid_t pid, pid_t *ppid, long *threads, unsigned long long *start)
{
	struct proc_stat ps;

	if (read_stat(pid, &ps))
		return -1;
	*ppid = (pid_t)ps.ppid;
	*threads = ps.threads;
	*start = ps.state == 'Z' || ps.state == 'X' ? 0 : ps.start ? ps.start : 1;
	return 0;
}
