/* SPDX-License-Identifier: MIT */
/* The control endpoint's address and wire protocol; shared by the library and kkctl. */
#ifndef KK_CONTROL_PATH_H
#define KK_CONTROL_PATH_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/*
 * A process serves its endpoint on the abstract Unix socket "\0kernelkit/<pid>"
 * (shown as "@kernelkit/<pid>" by /proc/net/unix and ss).  An abstract name is
 * no file: nothing to create, chmod or unlink, no runtime directory, and the
 * name disappears with the socket when the process dies, however it dies.
 * It also has no permissions: anyone in the network namespace may bind or
 * connect to it, so both sides check the other with SO_PEERCRED.
 */
#define KK_CONTROL_ABSTRACT_PREFIX	"kernelkit/"

/* Fill @sa with the address of @pid's endpoint, alt 0, or of its alternative
 * name "\0kernelkit/<pid>/<alt>" (alt > 0), which a process takes when its own
 * name is held by another socket (a squatter, or a process with the same pid
 * in another pid namespace).  Returns the address length (the name is not
 * NUL-terminated: abstract names are length-delimited). */
socklen_t kk_control_addr_n(struct sockaddr_un *sa, pid_t pid, int alt);

/*
 * When all of those are taken (someone squats the names of future pids), the
 * process binds "\0kernelkit/<pid>.<16 hex digits>" with a random suffix no
 * squatter can guess; kkctl finds it in /proc/net/unix by its prefix
 * "@kernelkit/<pid>." and verifies the owner by SO_PEERCRED like any other.
 */
#define KK_CONTROL_ALT_NAMES	16	/* the name and /1 ../15 */
#define KK_CONTROL_RANDOM_SEP	'.'

/* The address of the abstract name @name ("kernelkit/...", no '@' or NUL). */
socklen_t kk_control_addr_str(struct sockaddr_un *sa, const char *name);

/* The wire protocol, one request per connection:
 *   client -> "read NAME\n" | "write NAME\n" BODY | "list\n", then shutdown(SHUT_WR)
 *   server -> "<status>\n" BODY, status 0 or a negative errno, then close.
 */
/* One deadline per whole request: from accept() to the reply sent. */
#define KK_CONTROL_TIMEOUT_MS 2000

#endif
