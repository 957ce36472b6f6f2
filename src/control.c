// SPDX-License-Identifier: MIT
/*
 * The control endpoint: debugfs for one process, served on a Unix socket.
 *
 * One thread accepts one connection at a time.  Every socket operation has a
 * timeout and every request a size limit, so a slow, huge or malformed client
 * costs that thread at most a couple of seconds and never touches the rest of
 * the process.  Handlers run under a read lock of the file registry; the
 * socket I/O does not, so fork() and file removal wait only for a handler.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "control_path.h"

/* ---- text buffers ---------------------------------------------------------- */

static int buf_reserve(struct kk_buf *b, size_t extra)
{
	size_t want;
	char *p;

	if (b->error)
		return b->error;
	if (b->len + extra + 1 <= b->cap)
		return 0;
	want = b->cap ? b->cap : 256;
	while (want < b->len + extra + 1)
		want *= 2;
	p = realloc(b->data, want);
	if (!p)
		return b->error = -ENOMEM;
	b->data = p;
	b->cap = want;
	return 0;
}

int kk_buf_write(struct kk_buf *b, const void *p, size_t n)
{
	int ret = buf_reserve(b, n);

	if (ret)
		return ret;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int kk_buf_vprintf(struct kk_buf *b, const char *fmt, va_list ap)
{
	va_list ap2;
	int n, ret;

	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n < 0)
		return -EINVAL;
	ret = buf_reserve(b, (size_t)n);
	if (ret)
		return ret;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int kk_buf_printf(struct kk_buf *b, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = kk_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return ret;
}

void kk_buf_reset(struct kk_buf *b)
{
	b->len = 0;
	b->error = 0;
	if (b->data)
		b->data[0] = '\0';
}

void kk_buf_free(struct kk_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- the file registry ----------------------------------------------------- */

struct kk_cfile {
	struct kk_cfile *next;
	char name[KK_CONTROL_NAME_MAX];
	const struct kk_control_file_ops *ops;
	void *priv;
};

static pthread_rwlock_t files_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct kk_cfile *files;		/* sorted by name, for `list` */

static int name_ok(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (n == 0 || n >= KK_CONTROL_NAME_MAX || name[0] == '/' || strstr(name, ".."))
		return 0;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr("_./-", *p)))
			return 0;
	return 1;
}

static struct kk_cfile *find_file(const char *name)
{
	for (struct kk_cfile *f = files; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

int kk_control_create_file(const char *name, const struct kk_control_file_ops *ops, void *priv)
{
	struct kk_cfile *f, **pp;

	if (!name_ok(name) || !ops || (!ops->show && !ops->write))
		return -EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	strcpy(f->name, name);
	f->ops = ops;
	f->priv = priv;
	pthread_rwlock_wrlock(&files_lock);
	if (find_file(name)) {
		pthread_rwlock_unlock(&files_lock);
		free(f);
		return -EEXIST;
	}
	for (pp = &files; *pp && strcmp((*pp)->name, name) < 0; pp = &(*pp)->next)
		;
	f->next = *pp;
	*pp = f;
	pthread_rwlock_unlock(&files_lock);
	return 0;
}

int kk_control_remove_file(const char *name)
{
	struct kk_cfile *f = NULL, **pp;

	if (!name)
		return -EINVAL;
	pthread_rwlock_wrlock(&files_lock);
	for (pp = &files; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->name, name)) {
			f = *pp;
			*pp = f->next;
			break;
		}
	}
	pthread_rwlock_unlock(&files_lock);
	free(f);
	return f ? 0 : -ENOENT;
}

/* Run one request against the registry.  @out gets the body to send back. */
static int dispatch(const char *verb, const char *name, const char *body, size_t len,
		    struct kk_buf *out)
{
	struct kk_cfile *f;
	int ret;

	pthread_rwlock_rdlock(&files_lock);
	if (!strcmp(verb, "list")) {
		for (f = files; f; f = f->next)
			kk_buf_printf(out, "%s%s\t%s\n", f->ops->show ? "r" : "-",
				      f->ops->write ? "w" : "-", f->name);
		ret = out->error;
		goto out;
	}
	f = find_file(name);
	if (!f) {
		kk_buf_printf(out, "no such file: %s\n", name);
		ret = -ENOENT;
	} else if (!strcmp(verb, "read")) {
		if (f->ops->show) {
			ret = f->ops->show(out, f->priv);
			if (!ret)
				ret = out->error;
		} else {
			kk_buf_printf(out, "%s is write-only\n", name);
			ret = -EACCES;
		}
	} else if (!strcmp(verb, "write")) {
		size_t lim = f->ops->max_write ? f->ops->max_write : KK_CONTROL_MAX_REQUEST;

		if (!f->ops->write) {
			kk_buf_printf(out, "%s is read-only\n", name);
			ret = -EACCES;
		} else if (len >= lim) {
			kk_buf_printf(out, "write of %zu bytes is too large (limit %zu)\n",
				      len, lim - 1);
			ret = -E2BIG;
		} else {
			ret = f->ops->write(body, len, out, f->priv);
		}
	} else {
		kk_buf_printf(out, "unknown request: %s\n", verb);
		ret = -EINVAL;
	}
out:
	pthread_rwlock_unlock(&files_lock);
	return ret;
}

static char *take_text(struct kk_buf *b, size_t *len)
{
	char *s = b->data ? b->data : strdup("");

	if (len)
		*len = b->len;
	b->data = NULL;
	kk_buf_free(b);
	return s;
}

int kk_control_read(const char *name, char **text, size_t *len)
{
	struct kk_buf out = { 0 };
	int ret;

	if (!name_ok(name))
		return -EINVAL;
	ret = dispatch("read", name, NULL, 0, &out);
	if (text && !ret)
		*text = take_text(&out, len);
	kk_buf_free(&out);
	return ret;
}

int kk_control_write(const char *name, const char *buf, size_t len, char **reply)
{
	struct kk_buf out = { 0 };
	char *copy;
	int ret;

	if (!name_ok(name) || (!buf && len))
		return -EINVAL;
	/* Handlers may rely on the NUL after the body, as they do for remote writes. */
	copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	if (len)
		memcpy(copy, buf, len);
	copy[len] = '\0';
	ret = dispatch("write", name, copy, len, &out);
	free(copy);
	if (reply)
		*reply = take_text(&out, NULL);
	kk_buf_free(&out);
	return ret;
}

/* ---- the socket server ----------------------------------------------------- */

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static int listen_fd = -1;
static int stop_pipe[2] = { -1, -1 };
static pthread_t srv_thread;
static int srv_running;
static pid_t srv_pid;
static char srv_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Send the reply, then read what the client still sends until it closes its
 * side.  Closing a Unix socket with unread data resets the connection, and
 * the client would lose the reply (an early refusal: foreign uid, E2BIG).
 * Bounded by time and bytes like everything else here.
 */
static void reply(int fd, int status, const struct kk_buf *body)
{
	uint64_t deadline = now_ms() + KK_CONTROL_TIMEOUT_MS;
	char head[32], sink[4096];
	size_t drained = 0;
	int n = snprintf(head, sizeof(head), "%d\n", status);

	if (kk_send_all(fd, head, (size_t)n) == 0 && body->len)
		kk_send_all(fd, body->data, body->len);
	shutdown(fd, SHUT_WR);
	while (drained < 4 * KK_CONTROL_MAX_REQUEST && now_ms() < deadline) {
		ssize_t r = recv(fd, sink, sizeof(sink), 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		drained += (size_t)r;
	}
}

static int peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl))
		return 0;
	return cr.uid == 0 || cr.uid == geteuid();
}

/* Serve one connection. */
static void handle(int fd)
{
	struct timeval tv = { KK_CONTROL_TIMEOUT_MS / 1000, (KK_CONTROL_TIMEOUT_MS % 1000) * 1000 };
	const size_t cap = KK_CONTROL_MAX_REQUEST + KK_CONTROL_NAME_MAX + 16;
	struct kk_buf out = { 0 };
	char *req, *nl, *sp, *name = "";
	size_t len = 0;
	int status;

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (!peer_allowed(fd)) {
		kk_buf_printf(&out, "peer is neither uid %u nor root\n", (unsigned)geteuid());
		reply(fd, -EACCES, &out);
		kk_buf_free(&out);
		return;
	}
	req = malloc(cap + 1);
	if (!req)
		return;
	for (;;) {
		ssize_t r = recv(fd, req + len, cap - len, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {	/* timeout or reset: the client gets nothing */
			free(req);
			return;
		}
		if (r == 0)
			break;
		len += (size_t)r;
		if (len == cap) {
			kk_buf_printf(&out, "request larger than %d bytes\n", KK_CONTROL_MAX_REQUEST);
			status = -E2BIG;
			goto send;
		}
	}
	req[len] = '\0';
	nl = memchr(req, '\n', len);
	if (!nl) {
		kk_buf_printf(&out, "malformed request\n");
		status = -EINVAL;
		goto send;
	}
	*nl = '\0';
	sp = strchr(req, ' ');
	if (sp) {
		*sp = '\0';
		name = sp + 1;
	}
	if (strcmp(req, "list") && !name_ok(name)) {
		kk_buf_printf(&out, "bad file name\n");
		status = -EINVAL;
		goto send;
	}
	status = dispatch(req, name, nl + 1, len - (size_t)(nl + 1 - req), &out);
send:
	reply(fd, status, &out);
	kk_buf_free(&out);
	free(req);
}

static void *serve(void *arg)
{
	sigset_t set;

	(void)arg;
	/* Leave process-directed signals to the application's threads. */
	sigemptyset(&set);
	for (int s = 1; s < SIGRTMIN; s++)
		if (s != SIGTRAP && s != SIGSEGV && s != SIGBUS && s != SIGILL && s != SIGFPE)
			sigaddset(&set, s);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_setname_np(pthread_self(), "kk-control");

	for (;;) {
		struct pollfd p[2] = { { listen_fd, POLLIN, 0 }, { stop_pipe[0], POLLIN, 0 } };
		int fd;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		handle(fd);
		close(fd);
	}
	return NULL;
}

static void close_fds(void)
{
	if (listen_fd >= 0)
		close(listen_fd);
	if (stop_pipe[0] >= 0) {
		close(stop_pipe[0]);
		close(stop_pipe[1]);
	}
	listen_fd = stop_pipe[0] = stop_pipe[1] = -1;
}

/* Remove the sockets of processes that died without cleaning up (killed, _exit). */
static void sweep_stale(const char *dir)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		if (kill((pid_t)pid, 0) && errno == ESRCH) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	}
	closedir(d);
}

static int start_locked(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char dir[sizeof(sa.sun_path)];
	int ret;

	if (srv_running)
		return 0;
	ret = kk_control_dir(dir, sizeof(dir));
	if (!ret)
		ret = kk_control_dir_prepare(dir);
	if (!ret)
		ret = kk_control_sock_path(sa.sun_path, sizeof(sa.sun_path), getpid());
	if (ret)
		return ret;
	sweep_stale(dir);
	listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (listen_fd < 0 || pipe2(stop_pipe, O_CLOEXEC)) {
		ret = -errno;
		goto fail;
	}
	unlink(sa.sun_path);	/* a stale socket of an earlier process with our pid */
	if (bind(listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(sa.sun_path, 0600) || listen(listen_fd, 16)) {
		ret = -errno;
		unlink(sa.sun_path);
		goto fail;
	}
	strcpy(srv_path, sa.sun_path);
	srv_pid = getpid();
	ret = -pthread_create(&srv_thread, NULL, serve, NULL);
	if (ret) {
		unlink(srv_path);
		goto fail;
	}
	srv_running = 1;
	return 0;
fail:
	close_fds();
	return ret;
}

int kk_control_start(void)
{
	int ret;

	pthread_mutex_lock(&srv_lock);
	ret = start_locked();
	pthread_mutex_unlock(&srv_lock);
	return ret;
}

static void stop_locked(void)
{
	if (!srv_running)
		return;
	if (write(stop_pipe[1], "x", 1) == 1)
		pthread_join(srv_thread, NULL);
	if (srv_pid == getpid())
		unlink(srv_path);
	close_fds();
	srv_running = 0;
}

void kk_control_stop(void)
{
	pthread_mutex_lock(&srv_lock);
	stop_locked();
	pthread_mutex_unlock(&srv_lock);
}

const char *kk_control_socket_path(void)
{
	return srv_running ? srv_path : NULL;
}

/* fork(): the child has no server thread; give it an endpoint of its own. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&srv_lock);
	pthread_rwlock_wrlock(&files_lock);
}

static void atfork_parent(void)
{
	pthread_rwlock_unlock(&files_lock);
	pthread_mutex_unlock(&srv_lock);
}

static void atfork_child(void)
{
	int was_running = srv_running;

	/* Not an unlock: glibc tells a writer's unlock from a reader's by the
	 * kernel thread id, which is new in the child. */
	pthread_rwlock_init(&files_lock, NULL);
	close_fds();		/* the parent's socket stays; only the parent unlinks it */
	srv_running = 0;
	if (was_running)
		start_locked();
	pthread_mutex_unlock(&srv_lock);
}

static void at_exit(void)
{
	/* Only the socket's own process removes it; the thread dies with us. */
	if (srv_running && srv_pid == getpid())
		unlink(srv_path);
}

__attribute__((constructor(200))) static void control_init(void)
{
	const char *e = getenv("KK_CONTROL");

	pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
	atexit(at_exit);
	if (e && !strcmp(e, "0"))
		return;
	kk_control_start();
}
