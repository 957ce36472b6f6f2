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

/* "/proc/self/task/<tid>/<leaf>" (tid 0: "/proc/thread-self/<leaf>"). */
static void task_path(char *buf, size_t n, pid_t tid, const char *leaf)
{
	char num[16];
	size_t len = 0, i = sizeof(num);
	const char *head = tid ? "/proc/self/task/" : "/proc/thread-self/";
	unsigned int v = (unsigned int)tid;

	num[--i] = '\0';
	if (tid) {
		do
			num[--i] = (char)('0' + v % 10);
		while ((v /= 10) && i > 0);
	}
	for (const char *p = head; *p && len + 1 < n; p++)
		buf[len++] = *p;
	for (const char *p = num + i; *p && len + 1 < n; p++)
		buf[len++] = *p;
	if (tid && len + 1 < n)
		buf[len++] = '/';
	for (const char *p = leaf; *p && len + 1 < n; p++)
		buf[len++] = *p;
	buf[len] = '\0';
}

struct list_req {
	pid_t *tids;
	int max;
	int n;			/* threads seen, may exceed max */
	int err;		/* errno of the helper */
	pid_t pid;
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
	size_t len = 6;
	char num[16];
	int i = sizeof(num);
	unsigned int v = (unsigned int)r->pid;
	long fd;

	num[--i] = '\0';
	do
		num[--i] = (char)('0' + v % 10);
	while ((v /= 10) && i > 0);
	for (const char *p = num + i; *p; p++)
		path[len++] = *p;
	memcpy(path + len, "/task", 6);
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
	return 0;
}

int kk_list_tasks(pid_t *tids, int max)
{
	struct list_req r = { tids, max, 0, 0, 0 };
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int e = errno, st;
	long pid;

	if (fd >= 0) {
		collect_tids(fd, &r);
		close(fd);
		return r.n;
	}
	if (e != EMFILE && e != ENFILE)
		return -e;
	/* One helper stack: a second lister out of descriptors at the same
	 * time (a panic during a sync) gets the error instead. */
	if (__atomic_exchange_n(&lister_busy, 1, __ATOMIC_ACQUIRE))
		return -e;
	r.pid = getpid();
	/* CLONE_VFORK: we sleep until the helper has exited. */
	pid = clone(lister, lister_stack + sizeof(lister_stack), CLONE_VM | CLONE_VFORK, &r);
	if (pid >= 0)
		waitpid((pid_t)pid, &st, __WCLONE);
	__atomic_store_n(&lister_busy, 0, __ATOMIC_RELEASE);
	if (pid < 0)
		return -e;
	return r.err ? -r.err : r.n;
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

	task_path(path, sizeof(path), tid, leaf);
	return kk_read_proc(path, buf, n);
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

int kk_task_sigmasks(pid_t tid, uint64_t *blocked, uint64_t *caught)
{
	char buf[2048];
	ssize_t n = kk_task_read(tid, "status", buf, sizeof(buf));
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
