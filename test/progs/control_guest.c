// SPDX-License-Identifier: MIT
/*
 * A program that treats its descriptors and threads the way servers do, for
 * the control endpoint's script tests (test/scripts/control_guest.sh).
 * It has pr_debug sites, so it serves an endpoint from load on.  It reads one
 * command per line on stdin and answers one line on stdout, so that the
 * script orders everything through the pipe, not by sleeping:
 *
 *   closefrom            closefrom(3): every descriptor but 0-2 goes
 *   close_range          close_range(3, ~0U, 0): the same, by the other call
 *   open FILE            open FILE at the lowest number (3 after closefrom),
 *                        a pipe and a socketpair; remember their identities
 *   check                the remembered descriptors are intact here
 *   fork N               fork N children one after another; each checks the
 *                        descriptors (identity, flags, data through each)
 *   dup2                 dup2() /dev/null over the endpoint's listening socket
 *   tasks                the number of threads (/proc/self/task)
 *   stop | start         kk_threads_stop() | kk_threads_start()
 *   debug                run the pr_debug site (its message goes to stderr)
 *   comm                 set the thread name to one with an escape character
 *   quiet                wait until every other thread sleeps (the endpoint's
 *                        thread is then in its wait: accept or poll)
 *   lowfd FILE           open FILE and dup2() it onto the lowest free number
 *                        (2 when started with 2>&-), as a server puts its log
 *                        on fd 2; answers "ok N", or the errno of dup2
 *   ids UID              setgroups(0), setgid(UID), setuid(UID): a worker's
 *                        privilege drop (every thread, through glibc)
 *   dumpable N           prctl(PR_SET_DUMPABLE, N) (after a drop, lets the
 *                        new uid ptrace the process, and use its endpoint)
 *   chroot DIR           chroot(DIR) and chdir("/"): a worker's jail, with
 *                        no /proc in it
 *   quit                 exit(0)
 * Answers: "ok[ detail]" or "fail what".  A write of anything to the control
 * file guest/dup2 does the dup2 from the endpoint's own thread, while it is
 * not waiting in accept().  guest/evil reads as text with control characters
 * (kkctl must escape them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/kernelkit.h>

#include "kktest.h"

enum { F_FILE, F_PIPE_R, F_PIPE_W, F_SOCK_A, F_SOCK_B, NFDS };

static struct mine {
	int fd;
	dev_t dev;
	ino_t ino;
	int fdflags;
} mine[NFDS];
static int have_fds;
static char file_text[64];

void guest_hello(int n)
{
	pr_debug("guest hello %d\n", n);
}

static int remember(int i, int fd)
{
	struct stat st;

	if (fd < 0 || fstat(fd, &st))
		return -1;
	mine[i].fd = fd;
	mine[i].dev = st.st_dev;
	mine[i].ino = st.st_ino;
	mine[i].fdflags = fcntl(fd, F_GETFD);
	return 0;
}

static int open_mine(const char *path)
{
	int p[2], s[2];
	ssize_t n;

	if (remember(F_FILE, open(path, O_RDONLY)))
		return -1;
	n = pread(mine[F_FILE].fd, file_text, sizeof(file_text) - 1, 0);
	if (n <= 0)
		return -1;
	file_text[n] = '\0';
	if (pipe(p) || socketpair(AF_UNIX, SOCK_STREAM, 0, s))
		return -1;
	if (remember(F_PIPE_R, p[0]) || remember(F_PIPE_W, p[1]) ||
	    remember(F_SOCK_A, s[0]) || remember(F_SOCK_B, s[1]))
		return -1;
	have_fds = 1;
	return 0;
}

/* 0, or the index + 1 of the first descriptor that is not what we opened. */
static int check_ids(void)
{
	for (int i = 0; i < NFDS; i++) {
		struct stat st;

		if (fstat(mine[i].fd, &st) || st.st_dev != mine[i].dev || st.st_ino != mine[i].ino ||
		    fcntl(mine[i].fd, F_GETFD) != mine[i].fdflags)
			return i + 1;
	}
	return 0;
}

/* A child: the descriptors are intact and data flows through each. */
static int child_check(void)
{
	char buf[64];
	ssize_t n;

	if (check_ids())
		return 10 + check_ids();
	n = pread(mine[F_FILE].fd, buf, sizeof(buf) - 1, 0);
	if (n < 0 || (buf[n] = '\0', strcmp(buf, file_text)))
		return 20;
	if (read(mine[F_PIPE_R].fd, buf, 1) != 1 || buf[0] != 'p')
		return 21;
	if (read(mine[F_SOCK_B].fd, buf, 1) != 1 || buf[0] != 's')
		return 22;
	if (write(mine[F_SOCK_B].fd, "c", 1) != 1)
		return 23;
	return 0;
}

static int fork_n(int n, char *why, size_t len)
{
	for (int i = 0; i < n; i++) {
		char c;
		int st;
		pid_t pid;

		/* One byte for the child on the pipe and on the socket. */
		if (write(mine[F_PIPE_W].fd, "p", 1) != 1 || write(mine[F_SOCK_A].fd, "s", 1) != 1) {
			snprintf(why, len, "parent write %d", i);
			return -1;
		}
		pid = fork();
		if (pid < 0) {
			snprintf(why, len, "fork %d: %s", i, strerror(errno));
			return -1;
		}
		if (pid == 0)
			_exit(child_check());
		if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			snprintf(why, len, "child %d status %#x", i, st);
			return -1;
		}
		if (read(mine[F_SOCK_A].fd, &c, 1) != 1 || c != 'c') {
			snprintf(why, len, "child %d did not answer on the socketpair", i);
			return -1;
		}
	}
	return 0;
}

/* The endpoint's listening socket: bound to @kernelkit/<pid>, accepting.
 * (Also <dir>/<pid>.sock, the path of the endpoint before it moved to the
 * abstract namespace, so that this test can be run against that code.) */
static int find_listener(void)
{
	char want[64], old[64];
	int n = snprintf(want, sizeof(want), "kernelkit/%d", (int)getpid());

	snprintf(old, sizeof(old), "/%d.sock", (int)getpid());
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t sl = sizeof(sa);
		int acc = 0;
		socklen_t al = sizeof(acc);
		size_t pl;

		memset(&sa, 0, sizeof(sa));
		if (getsockname(fd, (struct sockaddr *)&sa, &sl) || sa.sun_family != AF_UNIX)
			continue;
		pl = strnlen(sa.sun_path, sizeof(sa.sun_path) - 1);
		if (sa.sun_path[0] ? !(pl > strlen(old) && !strcmp(sa.sun_path + pl - strlen(old), old))
				   : (sl != offsetof(struct sockaddr_un, sun_path) + 1 + (socklen_t)n ||
				      memcmp(sa.sun_path + 1, want, (size_t)n)))
			continue;
		if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &al) == 0 && acc)
			return fd;
	}
	return -1;
}

static int null_fd = -1, null_num = -1;

static int dup2_listener(void)
{
	int l = find_listener();
	struct stat st;

	if (l < 0)
		return -1;
	null_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, l) != l)
		return -1;
	null_num = l;
	return fstat(l, &st) == 0 && S_ISCHR(st.st_mode) ? l : -1;
}

static int dup2_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	int l;

	(void)buf; (void)len; (void)priv;
	l = dup2_listener();
	kk_buf_printf(out, "%d\n", l);
	return l < 0 ? -EIO : 0;
}

static const struct kk_control_file_ops dup2_ops = { .write = dup2_write };

/* The lowest number no descriptor has. */
static int lowest_free(void)
{
	int n = 0;

	while (fcntl(n, F_GETFD) >= 0)
		n++;
	return n;
}

static int evil_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "esc\033[2J bel\a cr\r del\177 tab\tend\n");
}

static const struct kk_control_file_ops evil_ops = { .show = evil_show };

int main(void)
{
	char line[512], why[256];

	setvbuf(stdout, NULL, _IOLBF, 0);
	kk_control_create_file("guest/dup2", &dup2_ops, NULL);
	kk_control_create_file("guest/evil", &evil_ops, NULL);
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strcmp(line, "closefrom")) {
			closefrom(3);
			puts("ok");
		} else if (!strcmp(line, "close_range")) {
			puts(close_range(3, ~0U, 0) ? "fail close_range" : "ok");
		} else if (!strncmp(line, "open ", 5)) {
			if (open_mine(line + 5))
				printf("fail open: %s\n", strerror(errno));
			else
				printf("ok %d %d %d %d %d\n", mine[0].fd, mine[1].fd, mine[2].fd,
				       mine[3].fd, mine[4].fd);
		} else if (!strcmp(line, "check")) {
			int bad = have_fds ? check_ids() : -1;
			struct stat st;

			if (bad)
				printf("fail descriptor %d\n", bad);
			else if (null_num >= 0 && (fstat(null_num, &st) || !S_ISCHR(st.st_mode)))
				printf("fail %d is not /dev/null any more\n", null_num);
			else
				puts("ok");
		} else if (!strncmp(line, "fork ", 5)) {
			if (fork_n(atoi(line + 5), why, sizeof(why)))
				printf("fail %s\n", why);
			else
				puts("ok");
		} else if (!strcmp(line, "dup2")) {
			int l = dup2_listener();

			printf(l < 0 ? "fail dup2\n" : "ok %d\n", l);
		} else if (!strcmp(line, "tasks")) {
			printf("ok %d\n", kkt_nr_tasks());
		} else if (!strcmp(line, "stop")) {
			puts(kk_threads_stop() ? "fail stop" : "ok");
		} else if (!strcmp(line, "start")) {
			puts(kk_threads_start() ? "fail start" : "ok");
		} else if (!strcmp(line, "debug")) {
			guest_hello(42);
			fflush(stderr);
			puts("ok");
		} else if (!strncmp(line, "debug ", 6)) {	/* a numbered record */
			guest_hello(atoi(line + 6));
			fflush(stderr);
			puts("ok");
		} else if (!strcmp(line, "comm")) {
			puts(prctl(PR_SET_NAME, "gu\033]0;x\aest") ? "fail prctl" : "ok");
		} else if (!strcmp(line, "quiet")) {
			puts(kkt_others_asleep() ? "fail other threads kept running" : "ok");
		} else if (!strncmp(line, "lowfd ", 6)) {
			int n = lowest_free(), fd = open(line + 6, O_WRONLY | O_APPEND);

			if (fd < 0)
				printf("fail open: %s\n", strerror(errno));
			else if (fd != n && dup2(fd, n) != n)
				printf("fail dup2(%d, %d): %s\n", fd, n, strerror(errno));
			else
				printf("ok %d\n", n);
			if (fd >= 0 && fd != n)
				close(fd);
		} else if (!strncmp(line, "ids ", 4)) {
			uid_t u = (uid_t)atol(line + 4);

			if (setgroups(0, NULL) || setgid(u) || setuid(u))
				printf("fail set ids: %s\n", strerror(errno));
			else
				puts("ok");
		} else if (!strncmp(line, "dumpable ", 9)) {
			if (prctl(PR_SET_DUMPABLE, atol(line + 9), 0, 0, 0))
				printf("fail prctl: %s\n", strerror(errno));
			else
				puts("ok");
		} else if (!strncmp(line, "chroot ", 7)) {
			if (chroot(line + 7) || chdir("/"))
				printf("fail chroot: %s\n", strerror(errno));
			else
				puts("ok");
		} else if (!strcmp(line, "quit")) {
			exit(0);
		} else {
			printf("fail unknown command %s\n", line);
		}
	}
	return 0;
}
