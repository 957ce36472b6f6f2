// SPDX-License-Identifier: MIT
/*
 * The process's ids change while the endpoint's thread makes its socket, for
 * test/scripts/control_setuid_race.sh: this program defines listen(), which
 * the library's call binds to (the program itself listens on nothing), and
 * the first time the library calls it, it changes the process's ids to
 * $KK_RACE_UID (glibc's setgid and setuid: every thread) right after the
 * real listen().  The socket
 * then holds the old owner (root) while the process runs as the new one: a
 * worker that drops privileges right after fork, while the endpoint starts
 * in it, lands there by chance (mp_server.sh did under ASan).  The endpoint
 * must notice and make a socket of the new owner, or kkctl refuses it.
 * Prints its pid, then waits for its stdin to close.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>

static int raced;

int listen(int fd, int backlog)
{
	static int (*real)(int, int);
	const char *uid = getenv("KK_RACE_UID");
	int ret;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "listen");
	ret = real(fd, backlog);
	if (!ret && uid && !__atomic_exchange_n(&raced, 1, __ATOMIC_SEQ_CST)) {
		uid_t u = (uid_t)atol(uid);

		if (setgid(u) || setuid(u))
			perror("control_setuid_race: setgid/setuid");
	}
	return ret;
}

__attribute__((noinline)) void race_site(int v)
{
	pr_debug("race %d\n", v);
}

int main(void)
{
	char c;

	race_site(0);
	printf("%d\n", (int)getpid());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
