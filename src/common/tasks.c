// SPDX-License-Identifier: MIT
/*
 * The threads of this process and what /proc says about each: one lister for
 * the panic (which stops them) and the text sync layer (which signals them).
 *
 * /proc/self/task is read with open(2)+getdents64(2): no malloc, no opendir,
 * so that a panic in a thread that holds malloc's lock, or a signal handler,
 * can list.  Out of descriptors (EMFILE, ENFILE: the program is at its
 * limit), the listing is done by a helper process that shares our memory but
 * has a copy of our descriptor table (clone(CLONE_VM) without CLONE_FILES):
 * it may close descriptors of its copy to open the directory, and writes the
 * tids straight into the caller's array.  No descriptor is kept open.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/internal.h"

#define KK_LISTER_STACK	(32 * 1024)

struct linux_dirent64_ {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* A positive decimal (a tid), or -1. */
static long parse_tid(const char *s)
{
	long v = 0;

	if (!*s)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (long)INT32_MAX / 10)
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v > 0 && v <= INT32_MAX ? v : -1;
}

/* Append decimal @v at @p; returns the end. */
static char *put_num(char *p, unsigned long v)
{
	char num[24];
	int i = sizeof(num);

	do
		num[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	memcpy(p, num + i, sizeof(num) - (size_t)i);
	return p + sizeof(num) - i;
}

/* "/proc/self/task/<tid>/<leaf>" (tid 0: "/proc/thread-self/<leaf>"). */
static void task_path(char *buf, size_t n, pid_t tid, const char *leaf)
{
	char num[24] = "";
	const char *part[] = { tid ? "/proc/self/task/" : "/proc/thread-self/", num,
			       tid ? "/" : "", leaf };
	size_t len = 0;

	if (tid)
		*put_num(num, (unsigned int)tid) = '\0';
	for (size_t k = 0; k < sizeof(part) / sizeof(part[0]); k++)
		for (const char *p = part[k]; *p && len + 1 < n; p++)
			buf[len++] = *p;
	if (n)
		buf[len] = '\0';
}

/*
 * /proc counted in another pid namespace.  procfs counts pids in the
 * namespace of whoever mounted it.  A process in a pid namespace of its own
 * whose /proc was not mounted again (`unshare -pf` without --mount-proc, a
 * runtime that bind-mounts the host's /proc) finds its threads there under
 * the outer numbers, while gettid() and tgkill() count in its own: a signal
 * round sent to the numbers listed reached no thread (ESRCH, taken for
 * "exited") and a panic stopped none.  Seen as /proc/self naming another
 * number than getpid().  Then each number listed is translated by the last
 * field of its status file's NSpid line (a thread's: its tid in each
 * namespace, the innermost, ours, last),
 * and a thread's files are found by the reverse: remembered from the last
 * listing (one word a pair, so never torn) and checked on every use.
 */
#define XL_SLOTS	1024
static uint64_t xl[XL_SLOTS];		/* ours << 32 | /proc's */
static pid_t view_pid, view_foreign;	/* for which getpid(), and the answer */

static long parse_num(const char *s, size_t n)
{
	char tmp[16];

	if (!n || n >= sizeof(tmp))
		return -1;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	return parse_tid(tmp);
}

/* The pid /proc/self names (procfs's count), or -errno. */
static long proc_self_pid(void)
{
	char buf[24];
	long n = syscall(SYS_readlinkat, AT_FDCWD, "/proc/self", buf, sizeof(buf) - 1);

	if (n < 0)
		return -errno;
	return parse_num(buf, (size_t)n);
}

/* Does /proc count in another pid namespace than ours?  Asked again after
 * a fork (a child of unshare(CLONE_NEWPID) is in the new one). */
static bool proc_foreign(void)
{
	pid_t me = getpid();

	if (__atomic_load_n(&view_pid, __ATOMIC_ACQUIRE) != me) {
		long p = proc_self_pid();

		__atomic_store_n(&view_foreign, p > 0 && p != me, __ATOMIC_RELAXED);
		__atomic_store_n(&view_pid, me, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&view_foreign, __ATOMIC_RELAXED);
}

/* Our number for /proc's @ptid (the last field of NSpid), or -errno; its
 * status file is left in @buf.  The process is /proc's @ppid, or 0 for
 * /proc/self (the lister helper is another process: its /proc/self is its
 * own). */
static long ns_tid_of_in(long ppid, long ptid, char *buf, size_t size)
{
	char path[80] = "/proc/", *q = path + 6;
	const char *p, *last = NULL;
	ssize_t n;

	if (ppid > 0) {
		q = put_num(q, (unsigned long)ppid);
	} else {
		memcpy(q, "self", 4);
		q += 4;
	}
	memcpy(q, "/task/", 6);
	q = put_num(q + 6, (unsigned long)ptid);
	memcpy(q, "/status", 8);
	if ((n = kk_read_proc(path, buf, size)) < 0)
		return n;
	if (!(p = strstr(buf, "\nNSpid:")))
		return -ENOSYS;		/* before Linux 4.1 */
	for (p += 7; *p && *p != '\n'; ) {
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p >= '0' && *p <= '9')
			last = p;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (!last)
		return -ENOSYS;
	for (p = last; *p >= '0' && *p <= '9'; p++)
		;
	return parse_num(last, (size_t)(p - last));
}

static void xl_note(long tid, long ptid)
{
	__atomic_store_n(&xl[(unsigned long)tid % XL_SLOTS], (uint64_t)tid << 32 | (uint64_t)ptid,
			 __ATOMIC_RELAXED);
}

/* /proc's number for our @tid, or -ESRCH; its status file is left in @st
 * (which verified it). */
static long proc_tid_of(pid_t tid, char *st, size_t size)
{
	uint64_t w = __atomic_load_n(&xl[(unsigned long)tid % XL_SLOTS], __ATOMIC_RELAXED);
	char buf[4096];
	long n, found = -ESRCH;
	int fd;

	if ((pid_t)(w >> 32) == tid && ns_tid_of_in(0, (long)(w & 0xffffffffu), st, size) == tid)
		return (long)(w & 0xffffffffu);
	if ((fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -errno;
	while (found < 0 && (n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (long off = 0; off < n && found < 0;) {
			struct linux_dirent64_ *d = (struct linux_dirent64_ *)(buf + off);
			long pt = parse_tid(d->d_name);

			off += d->d_reclen;
			if (pt > 0 && ns_tid_of_in(0, pt, st, size) == tid)
				found = pt;
		}
	close(fd);
	if (found > 0)
		xl_note(tid, found);
	return found;
}

int kk_task_path(char *buf, size_t n, pid_t tid, const char *leaf)
{
	char st[2048];
	long pt = tid;

	if (tid && proc_foreign() && (pt = proc_tid_of(tid, st, sizeof(st))) < 0)
		return (int)pt;
	task_path(buf, n, (pid_t)pt, leaf);
	return 0;
}

/* Translate a listing of /proc's process @ppid (0: self) in place to our
 * numbers, dropping threads gone. */
static int list_translate(long ppid, pid_t *tids, int n)
{
	int k = 0;

	char st[2048];

	for (int i = 0; i < n; i++) {
		long t = ns_tid_of_in(ppid, tids[i], st, sizeof(st));

		if (t == -EMFILE || t == -ENFILE || t == -ENOSYS)
			return (int)t;
		if (t <= 0)
			continue;
		xl_note(t, tids[i]);
		tids[k++] = (pid_t)t;
	}
	return k;
}

struct list_req {
	pid_t *tids;
	int max;
	int n;			/* threads seen, may exceed max */
	int err;		/* errno of the helper */
	pid_t pid;
	bool foreign;		/* /proc counts in an outer pid namespace */
	int translated;		/* the helper's list_translate() */
};

/* getdents64() over an open task directory: the tids into @r. */
static void collect_tids(int fd, struct list_req *r)
{
	char buf[4096];
	long n;

	r->n = 0;
	while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
		for (long off = 0; off < n;) {
			struct linux_dirent64_ *d = (struct linux_dirent64_ *)(buf + off);
			long v = parse_tid(d->d_name);

			off += d->d_reclen;
			if (v <= 0)
				continue;
			if (r->n < r->max)
				r->tids[r->n] = (pid_t)v;
			r->n++;
		}
	}
}

static char lister_stack[KK_LISTER_STACK] __attribute__((aligned(64)));
static int lister_busy;

/*
 * In the helper process: our memory, its own copy of our descriptor table.
 * Raw system calls only (errno is the caller's thread's).
 */
static int lister(void *arg)
{
	struct list_req *r = arg;
	char path[64] = "/proc/";
	long fd;

	memcpy(put_num(path + 6, (unsigned int)r->pid), "/task", 6);
	fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	/* Closing here closes the copies, not the program's descriptors. */
	for (int d = 0; d < 1024 && fd < 0; d++) {
		syscall(SYS_close, d);
		fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0) {
		r->err = (int)-fd;
		return 0;
	}
	collect_tids((int)fd, r);
	/* Translating opens each thread's status: with the descriptor
	 * just freed (open(), read() and close() here set the caller's
	 * errno at worst: it sleeps until we exit). */
	if (r->foreign) {
		syscall(SYS_close, fd);
		r->translated = list_translate(r->pid, r->tids, r->n < r->max ? r->n : r->max);
	}
	return 0;
}

/* The count to return: past @max only counted; the rest in our numbers. */
static int listed(const struct list_req *r)
{
	int kept;

	if (!r->foreign)
		return r->n;
	kept = r->pid ? r->translated : list_translate(0, r->tids, r->n < r->max ? r->n : r->max);
	if (kept < 0)
		return kept;
	return r->n <= r->max ? kept : r->n;
}

int kk_list_tasks(pid_t *tids, int max)
{
	struct list_req r = { tids, max, 0, 0, 0, proc_foreign(), 0 };
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = errno, st;
	long pid;

	if (fd >= 0) {
		collect_tids(fd, &r);
		close(fd);
		return listed(&r);
	}
	if (e != EMFILE && e != ENFILE)
		return -e;
	/* One helper stack: a second lister out of descriptors at the same
	 * time (a panic during a sync) gets the error instead. */
	if (__atomic_exchange_n(&lister_busy, 1, __ATOMIC_ACQUIRE))
		return -e;
	r.pid = r.foreign ? (pid_t)proc_self_pid() : getpid();
	/* CLONE_VFORK: we sleep until the helper has exited. */
	pid = clone(lister, lister_stack + sizeof(lister_stack), CLONE_VM | CLONE_VFORK, &r);
	if (pid >= 0)
		waitpid((pid_t)pid, &st, __WCLONE);
	__atomic_store_n(&lister_busy, 0, __ATOMIC_RELEASE);
	if (pid < 0)
		return -e;
	return r.err ? -r.err : listed(&r);
}

ssize_t kk_read_proc(const char *path, char *buf, size_t n)
{
	size_t got = 0;
	int fd;

	if (n == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (got + 1 < n) {
		ssize_t r = read(fd, buf + got, n - 1 - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = '\0';
	close(fd);
	return (ssize_t)got;
}

/* /proc/self/task/<tid>/<leaf> (tid 0: /proc/thread-self/<leaf>). */
static ssize_t kk_task_read(pid_t tid, const char *leaf, char *buf, size_t n)
{
	char path[64];
	int ret = kk_task_path(path, sizeof(path), tid, leaf);

	return ret ? ret : kk_read_proc(path, buf, n);
}

/* The hexadecimal mask after "\n<field>:" in a status file. */
static int status_mask(const char *buf, const char *field, uint64_t *mask)
{
	const char *p = buf;
	size_t fl = strlen(field);
	uint64_t m = 0;

	for (; (p = strchr(p, '\n')); p++)
		if (!strncmp(p + 1, field, fl) && p[1 + fl] == ':')
			break;
	if (!p)
		return -ENOENT;
	for (p += 2 + fl; *p == ' ' || *p == '\t'; p++)
		;
	for (; (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'); p++)
		m = m << 4 | (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	*mask = m;
	return 0;
}

static ssize_t read_status(pid_t tid, char *buf, size_t n)
{
	/* Where /proc counts elsewhere, finding the thread read its status. */
	if (tid && proc_foreign())
		return proc_tid_of(tid, buf, n);
	return kk_task_read(tid, "status", buf, n);
}

int kk_task_sigmasks(pid_t tid, uint64_t *blocked, uint64_t *caught)
{
	char buf[2048];
	ssize_t n = read_status(tid, buf, sizeof(buf));
	int ret;

	if (n < 0)
		return (int)n;
	ret = status_mask(buf, "SigBlk", blocked);
	if (!ret && caught)
		ret = status_mask(buf, "SigCgt", caught);
	return ret;
}

int kk_task_sigblk(pid_t tid, uint64_t *mask)
{
	return kk_task_sigmasks(tid, mask, NULL);
}

int kk_task_sigpnd(pid_t tid, uint64_t *mask)
{
	char buf[2048];
	ssize_t n = read_status(tid, buf, sizeof(buf));

	return n < 0 ? (int)n : status_mask(buf, "SigPnd", mask);
}

int kk_task_comm(pid_t tid, char *buf, size_t n)
{
	ssize_t r = kk_task_read(tid, "comm", buf, n);

	if (r < 0) {
		if (n)
			buf[0] = '\0';
		return (int)r;
	}
	if (r > 0 && buf[r - 1] == '\n')
		buf[r - 1] = '\0';
	return 0;
}

unsigned long long kk_task_starttime(pid_t tid)
{
	char buf[512], *p;

	if (kk_task_read(tid, "stat", buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* past the name (which may hold spaces), fields 3 to 21 */
	p++;
	for (int field = 3; field < 22; field++) {
		while (*p == ' ')
			p++;
		while (*p && *p != ' ')
			p++;
	}
	return strtoull(p, NULL, 10);
}

char kk_task_state(pid_t tid)
{
	char buf[512], *p;

	if (kk_task_read(tid, "stat", buf, sizeof(buf)) <= 0 || !(p = strrchr(buf, ')')) ||
	    p[1] != ' ' || !p[2])
		return '\0';
	return p[2];
}

bool kk_task_alive(pid_t tid)
{
	char st;

	if (syscall(SYS_tgkill, getpid(), tid, 0) != 0 && errno == ESRCH)
		return false;
	st = kk_task_state(tid);
	return st != '\0' && st != 'Z' && st != 'X';
}
