/* SPDX-License-Identifier: MIT */
/*
 * What the test programs that play an endpoint share (control_refuse,
 * control_squat, record_old_library): the library's endpoint listens on the
 * abstract name @kernelkit/PID, and so do they, on a name of their choice.
 */
#ifndef KK_TEST_LISTEN_ABSTRACT_H
#define KK_TEST_LISTEN_ABSTRACT_H

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* The address of abstract name @name (without its leading NUL) into @sa; its length. */
static inline socklen_t abstract_addr(struct sockaddr_un *sa, const char *name)
{
	size_t n = strlen(name);

	if (n > sizeof(sa->sun_path) - 1)
		n = sizeof(sa->sun_path) - 1;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* A stream socket listening on @name (close-on-exec); -1 with errno set. */
static inline int listen_abstract(const char *name)
{
	struct sockaddr_un sa;
	socklen_t sl = abstract_addr(&sa, name);
	int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (l >= 0 && (bind(l, (struct sockaddr *)&sa, sl) || listen(l, 16))) {
		close(l);
		return -1;
	}
	return l;
}

#endif
