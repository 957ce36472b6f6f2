/* SPDX-License-Identifier: MIT */
/* Where control sockets live; shared by the library and kkctl. */
#ifndef KK_CONTROL_PATH_H
#define KK_CONTROL_PATH_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The socket directory: $KK_CONTROL_DIR, else $XDG_RUNTIME_DIR/kernelkit,
 * else /tmp/kernelkit-<uid>.  Returns 0 or -ENAMETOOLONG.
 */
int kk_control_dir(char *buf, size_t len);
/* <dir>/<pid>.sock.  Returns 0 or -ENAMETOOLONG. */
int kk_control_sock_path(char *buf, size_t len, pid_t pid);
/*
 * Create the directory 0700 if needed, and refuse one that is a symlink, not a
 * directory, not ours, or open to group/others.  Returns 0 or -errno.
 */
int kk_control_dir_prepare(const char *dir);

/* send() all of @n bytes without raising SIGPIPE.  0, or -1 with errno set. */
int kk_send_all(int fd, const void *p, size_t n);

/* The wire protocol, one request per connection:
 *   client -> "read NAME\n" | "write NAME\n" BODY | "list\n", then shutdown(SHUT_WR)
 *   server -> "<status>\n" BODY, status 0 or a negative errno, then close.
 */
#define KK_CONTROL_TIMEOUT_MS 2000

#endif
