// SPDX-License-Identifier: MIT
/* The control endpoint's address (library and kkctl). */
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "control_path.h"

socklen_t kk_control_addr_n(struct sockaddr_un *sa, pid_t pid, int alt)
{
	int n;

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] stays NUL: the abstract namespace. */
	if (alt)
		n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
			     KK_CONTROL_ABSTRACT_PREFIX "%d/%d", (int)pid, alt);
	else
		n = snprintf(sa->sun_path + 1, sizeof(sa->sun_path) - 1,
			     KK_CONTROL_ABSTRACT_PREFIX "%d", (int)pid);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

socklen_t kk_control_addr_str(struct sockaddr_un *sa, const char *name)
{
	size_t n = strnlen(name, sizeof(sa->sun_path) - 1);

	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}
