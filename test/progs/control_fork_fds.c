// SPDX-License-Identifier: MIT
/*
 * The endpoint's thread makes no descriptor on its own once its start has
 * returned: not in the process that started it, and not in a fork child,
 * where it starts again inside fork().  A descriptor made by a thread of the
 * library takes the lowest free number; a daemon's child that closes 0, 1 and
 * 2 and opens /dev/null three times then gets 1, 2 and 3 (seen: 5 children in
 * 500), or the library closes a number the program has just dup2()'ed onto.
 *
 * open(), openat() and socket() are interposed here (the library calls them
 * through its PLT) and count the calls made by any thread but the main one
 * (its thread id is the process id).  Each process waits until the
 * library's thread sleeps (it has done its start) before it looks; the
 * wait's own fopen() is libc-internal and on the main thread.
 *
 * Nor does fork() itself open a file in the child: the child's endpoint
 * keeps the peer rules its parent read (the same user namespace), so a
 * daemon's fork costs no /proc reads.  Our fork handlers bracket the
 * library's (the prepare handler registered last runs first, the child
 * handler last).
 *   control_fork_fds      exit 0, or 1 with one line per count that is not 0
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>

#include "kktest.h"

static int foreign;		/* descriptors made by a thread not the main one */
static int base;		/* the count inherited from the parent */
static char first[128];		/* what the first of them past base was */
static int in_fork;		/* the main thread is inside fork() */
static int forked;		/* files it opened there, in the child (its
				 * endpoint's own socket is expected) */
static char forked_first[128];

static void seen(const char *what, int file)
{
	if (syscall(SYS_gettid) == getpid()) {
		if (file && in_fork && !forked++)
			snprintf(forked_first, sizeof(forked_first), "%s", what);
		return;
	}
	if (__atomic_fetch_add(&foreign, 1, __ATOMIC_RELAXED) == base)
		snprintf(first, sizeof(first), "%s", what);
}

/* The mode argument, present only with O_CREAT or O_TMPFILE. */
#define OPEN_MODE(flags, mode)                                     \
	do {                                                       \
		va_list ap;                                        \
		va_start(ap, flags);                               \
		if ((flags) & (O_CREAT | O_TMPFILE))               \
			mode = va_arg(ap, int);                    \
		va_end(ap);                                        \
	} while (0)

int openat(int dir, const char *path, int flags, ...)
{
	int mode = 0;

	OPEN_MODE(flags, mode);
	seen(path, 1);
	return (int)syscall(SYS_openat, dir, path, flags, mode);
}

int open(const char *path, int flags, ...)
{
	int mode = 0;

	OPEN_MODE(flags, mode);
	return openat(AT_FDCWD, path, flags, mode);
}

int open64(const char *path, int flags, ...) __attribute__((alias("open")));
int openat64(int dir, const char *path, int flags, ...) __attribute__((alias("openat")));

int socket(int domain, int type, int protocol)
{
	seen("socket()", 0);
	return (int)syscall(SYS_socket, domain, type, protocol);
}

/* 0, or 1 after saying what the library's thread opened. */
static int check(const char *who)
{
	int n;

	if (kkt_others_asleep()) {
		printf("%s: the library's thread never slept\n", who);
		fflush(stdout);
		return 1;
	}
	n = __atomic_load_n(&foreign, __ATOMIC_RELAXED) - base;
	if (!n)
		return 0;
	printf("%s: the library's thread made %d descriptor(s) after its start, first %s\n", who,
	       n, first);
	fflush(stdout);		/* the child leaves by _exit() */
	return 1;
}

static void fork_enter(void)
{
	in_fork = 1;
}

static void fork_leave(void)
{
	in_fork = 0;
}

/* 0, or 1 after saying what the child's fork() opened. */
static int check_fork(void)
{
	if (!forked)
		return 0;
	printf("fork child: fork() opened %d file(s) in the child, first %s\n", forked,
	       forked_first);
	fflush(stdout);
	return 1;
}

int main(void)
{
	int bad, st;
	pid_t pid;

	if (kk_control_start()) {
		printf("kk_control_start failed\n");
		return 1;
	}
	bad = check("parent");
	fflush(stdout);
	base = __atomic_load_n(&foreign, __ATOMIC_RELAXED);	/* before the child's start */
	if (pthread_atfork(fork_enter, fork_leave, fork_leave)) {
		printf("pthread_atfork failed\n");
		return 1;
	}
	pid = fork();
	if (pid == 0)
		_exit(check("fork child") | check_fork());
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		bad = 1;
	if (!bad)
		printf("control_fork_fds: ok\n");
	return bad;
}
