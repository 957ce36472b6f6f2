// SPDX-License-Identifier: MIT
/* Socket-path rules for the control endpoint (library and kkctl). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "control_path.h"

int kk_control_dir(char *buf, size_t len)
{
	const char *d = getenv("KK_CONTROL_DIR");
	const char *x = getenv("XDG_RUNTIME_DIR");
	int n;

	if (d && *d)
		n = snprintf(buf, len, "%s", d);
	else if (x && *x)
		n = snprintf(buf, len, "%s/kernelkit", x);
	else
		n = snprintf(buf, len, "/tmp/kernelkit-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int kk_control_sock_path(char *buf, size_t len, pid_t pid)
{
	char dir[4096];
	int n, ret = kk_control_dir(dir, sizeof(dir));

	if (ret)
		return ret;
	n = snprintf(buf, len, "%s/%d.sock", dir, (int)pid);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int kk_control_dir_prepare(const char *dir)
{
	struct stat st;

	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(dir, &st))
		return -errno;
	/* Someone else's directory, or one others can write into, could let
	 * them replace our socket or read what we serve: refuse it. */
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

int kk_send_all(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t w = send(fd, c, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}
