// SPDX-License-Identifier: MIT
/*
 * Descriptors the library keeps.  See common/internal.h: a number is only ours while
 * fstat() shows the file we opened; otherwise the program has closed it or
 * reused it, and we forget it without closing it.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/internal.h"

int kk_fd_adopt(struct kk_fd *f, int fd)
{
	struct stat st;

	f->fd = -1;
	if (fd < 0)
		return -EBADF;
	/* Never sit on 0, 1 or 2: a program that closed stdin and opens a file
	 * expecting descriptor 0 must get it. */
	if (fd < 3) {
		int hi = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		int e = errno;

		close(fd);
		if (hi < 0)
			return -e;
		fd = hi;
	}
	if (fstat(fd, &st)) {
		int e = errno;

		close(fd);
		return -e;
	}
	f->fd = fd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->pid = getpid();
	return fd;
}

bool kk_fd_ours(const struct kk_fd *f)
{
	struct stat st;

	return f->fd >= 0 && fstat(f->fd, &st) == 0 && st.st_dev == f->dev &&
	       st.st_ino == f->ino;
}

void kk_fd_release(struct kk_fd *f)
{
	if (kk_fd_ours(f))
		close(f->fd);
	f->fd = -1;
}
