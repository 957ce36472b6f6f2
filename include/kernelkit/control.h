/* SPDX-License-Identifier: MIT */
/*
 * The control endpoint: debugfs for one process.
 *
 * A process that uses kernelkit can serve the abstract Unix socket
 *   "\0kernelkit/<pid>"   (written "@kernelkit/<pid>", as /proc/net/unix shows it)
 * Facilities register virtual text files on it; `kkctl` reads and writes them.
 * An abstract name is no file: no directory, no permissions to set, nothing to
 * unlink at exit, nothing left behind by a killed process.  Since anyone may
 * bind or connect to such a name, both sides check the other with
 * SO_PEERCRED: the endpoint serves root, and a client whose uid and gid are
 * all of the process's (real, effective, saved) while it is dumpable (who
 * may ptrace it), checked again at each request; kkctl
 * talks only to a socket whose owner is the pid it was given, running as its
 * own uid (or kkctl runs as root).  If another socket holds our name, the
 * process says so once on stderr and serves nothing.
 *
 * When it starts (one thread, "kk-control", and one listening descriptor):
 *  - when the first object with static-key or pr_debug sites registers, or
 *    the program creates a control file of its own: then there is something
 *    to control.  A process with neither starts no thread and opens nothing;
 *  - kk_control_start();
 *  - at load, with KK_CONTROL=1.  KK_CONTROL=0: never by itself (an explicit
 *    kk_control_start() still starts it).  Both read with secure_getenv
 *    semantics (ignored in set-user-ID programs).
 * kk_threads_stop() stops it (and kk_threads_start() brings it back); while
 * the library's threads are stopped it does not start.  After fork() the
 * child serves its own endpoint if the parent served one.
 *
 * The endpoint survives the program closing its descriptor (closefrom(),
 * close_range(), dup2() over it): it never closes a number that is no longer
 * its socket, and makes a new socket.  A program that sandboxes itself with a
 * seccomp filter that forbids socket calls should stop the library's threads
 * first (kk_threads_stop()), or the first client would make the endpoint's
 * thread run into the filter.
 *
 * This has no kernel twin, hence the kk_ prefix.
 */
#ifndef KERNELKIT_CONTROL_H
#define KERNELKIT_CONTROL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* A growable text buffer that show() and write() handlers print into. */
struct kk_buf {
	char *data;
	size_t len;
	size_t cap;
	int error;		/* sticky -ENOMEM once an append failed */
};

int kk_buf_printf(struct kk_buf *b, const char *fmt, ...)
	__attribute__((__format__(__printf__, 2, 3)));
int kk_buf_vprintf(struct kk_buf *b, const char *fmt, va_list ap);
int kk_buf_write(struct kk_buf *b, const void *p, size_t n);
void kk_buf_reset(struct kk_buf *b);
void kk_buf_free(struct kk_buf *b);

/* Requests larger than this are refused with E2BIG before any handler runs. */
#define KK_CONTROL_MAX_REQUEST	(64 * 1024)
#define KK_CONTROL_NAME_MAX	64

struct kk_control_file_ops {
	/* Fill @out with the file's text.  Return 0 or -errno. NULL: not readable. */
	int (*show)(struct kk_buf *out, void *priv);
	/*
	 * Apply a write of @len bytes (not NUL-terminated; buf[len] is a NUL the
	 * endpoint adds for convenience).  Text put in @out is sent back to the
	 * writer: a report on success, the error message on failure.
	 * Return 0 or -errno.  NULL: not writable (EACCES).
	 */
	int (*write)(const char *buf, size_t len, struct kk_buf *out, void *priv);
	/* Writes of max_write bytes or more fail with E2BIG. 0: KK_CONTROL_MAX_REQUEST. */
	size_t max_write;
};

/*
 * Register a virtual file.  @name is a path-like string ("panic",
 * "dynamic_debug/control") of [A-Za-z0-9_./-], no "..", at most
 * KK_CONTROL_NAME_MAX-1 bytes.  @ops must stay valid until removed.
 * Returns 0, -EINVAL (bad name or ops), -EEXIST, or -ENOMEM.
 */
int kk_control_create_file(const char *name, const struct kk_control_file_ops *ops,
			   void *priv);
/* Returns 0 or -ENOENT.  Waits for a running handler of this file to finish. */
int kk_control_remove_file(const char *name);

/*
 * The same operations as a remote client gets, in-process (for tests and
 * programs that want to apply their own settings text).  On success *text /
 * *reply is a malloc'ed NUL-terminated string the caller frees (may be NULL
 * when the pointer argument is NULL).  Return 0 or -errno; on error *reply
 * holds the handler's message when there was one.
 */
int kk_control_read(const char *name, char **text, size_t *len);
int kk_control_write(const char *name, const char *buf, size_t len, char **reply);

/*
 * Start or stop the endpoint by hand.  Start is idempotent; 0, -EAGAIN while
 * the library's threads are stopped, -EADDRINUSE when another socket holds
 * the name, or another -errno.  Stop waits for a running request to finish;
 * after it, the endpoint starts again only by kk_control_start().
 */
int kk_control_start(void);
void kk_control_stop(void);
/*
 * The endpoint's address, "@kernelkit/<pid>" (the '@' stands for the leading
 * NUL byte of the abstract name; the name has no trailing NUL), or NULL when
 * the endpoint is not running.
 */
const char *kk_control_socket_path(void);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif /* KERNELKIT_CONTROL_H */
