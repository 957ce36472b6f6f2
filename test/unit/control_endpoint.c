// SPDX-License-Identifier: MIT
/* The control endpoint: file registry rules, bad input on the socket, size
 * limits, stalled clients and foreign uids. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>

static char last_write[256];

static int echo_show(struct kk_buf *out, void *priv)
{
	return kk_buf_printf(out, "hello %s\n", (const char *)priv);
}

static int echo_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	if (len && buf[0] == '!') {
		kk_buf_printf(out, "refusing '%s'", buf);
		return -EINVAL;
	}
	snprintf(last_write, sizeof(last_write), "%.*s", (int)len, buf);
	kk_buf_printf(out, "got %zu bytes\n", len);
	return 0;
}

static const struct kk_control_file_ops echo_ops = {
	.show = echo_show, .write = echo_write, .max_write = 100,
};

static void setup(void)
{
	cr_assert_eq(kk_control_create_file("test/echo", &echo_ops, "world"), 0);
	cr_assert(kk_control_socket_path(), "the endpoint is not running");
}

/* Send raw bytes, read the whole reply; returns the status line's value. */
static int raw(const void *req, size_t len, char *body, size_t blen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	strcpy(sa.sun_path, kk_control_socket_path());
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "%s", strerror(errno));
	if (len)
		send(fd, req, len, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	while (n < sizeof(buf) - 1 && (r = recv(fd, buf + n, sizeof(buf) - 1 - n, 0)) > 0)
		n += (size_t)r;
	buf[n] = '\0';
	close(fd);
	cr_assert(strchr(buf, '\n'), "no status line in reply '%s'", buf);
	if (body)
		snprintf(body, blen, "%s", strchr(buf, '\n') + 1);
	return atoi(buf);
}

Test(registry, names_and_duplicates)
{
	cr_expect_eq(kk_control_create_file("", &echo_ops, NULL), -EINVAL);
	cr_expect_eq(kk_control_create_file("../x", &echo_ops, NULL), -EINVAL);
	cr_expect_eq(kk_control_create_file("/abs", &echo_ops, NULL), -EINVAL);
	cr_expect_eq(kk_control_create_file("sp ace", &echo_ops, NULL), -EINVAL);
	cr_expect_eq(kk_control_create_file("x", NULL, NULL), -EINVAL);
	cr_expect_eq(kk_control_create_file("ok/name-1.x", &echo_ops, NULL), 0);
	cr_expect_eq(kk_control_create_file("ok/name-1.x", &echo_ops, NULL), -EEXIST);
	cr_expect_eq(kk_control_remove_file("ok/name-1.x"), 0);
	cr_expect_eq(kk_control_remove_file("ok/name-1.x"), -ENOENT);
	cr_expect_eq(kk_control_read("ok/name-1.x", NULL, NULL), -ENOENT);
}

Test(registry, in_process_read_write, .init = setup)
{
	char *txt = NULL, *reply = NULL;
	char big[200];

	cr_assert_eq(kk_control_read("test/echo", &txt, NULL), 0);
	cr_expect_str_eq(txt, "hello world\n");
	free(txt);
	cr_assert_eq(kk_control_write("test/echo", "abc", 3, &reply), 0);
	cr_expect_str_eq(reply, "got 3 bytes\n");
	cr_expect_str_eq(last_write, "abc");
	free(reply);
	cr_expect_eq(kk_control_write("test/echo", "!no", 3, &reply), -EINVAL);
	cr_expect_str_eq(reply, "refusing '!no'");
	free(reply);
	memset(big, 'x', sizeof(big));
	cr_expect_eq(kk_control_write("test/echo", big, 100, NULL), -E2BIG, "max_write is exclusive");
	cr_expect_eq(kk_control_write("test/echo", big, 99, NULL), 0);
}

Test(socket, served_requests, .init = setup)
{
	char body[4096];

	cr_expect_eq(raw("read test/echo\n", 15, body, sizeof(body)), 0);
	cr_expect_str_eq(body, "hello world\n");
	cr_expect_eq(raw("write test/echo\nxyz", 19, body, sizeof(body)), 0);
	cr_expect_str_eq(last_write, "xyz");
	cr_expect_eq(raw("list\n", 5, body, sizeof(body)), 0);
	cr_expect(strstr(body, "rw\ttest/echo\n"), "%s", body);
	cr_expect(strstr(body, "r-\tstatic_keys\n"), "%s", body);
}

Test(socket, bad_input_is_rejected, .init = setup)
{
	static const char junk[] = { 'r', 'e', 0, 'a', 'd', '\n', 0x7f, (char)0xff };
	char body[4096];

	cr_expect_eq(raw("", 0, NULL, 0), -EINVAL, "empty request");
	cr_expect_eq(raw("read test/echo", 14, NULL, 0), -EINVAL, "no newline");
	cr_expect_eq(raw("read ../../etc/passwd\n", 22, NULL, 0), -EINVAL);
	cr_expect_eq(raw("read\n", 5, NULL, 0), -EINVAL);
	cr_expect_eq(raw("frobnicate test/echo\n", 21, body, sizeof(body)), -EINVAL);
	cr_expect(strstr(body, "unknown request"), "%s", body);
	cr_expect_eq(raw("read nope\n", 10, NULL, 0), -ENOENT);
	cr_expect_eq(raw(junk, sizeof(junk), NULL, 0), -EINVAL);
	cr_expect_eq(raw("write test/echo\n!bad", 20, body, sizeof(body)), -EINVAL);
	cr_expect_str_eq(body, "refusing '!bad'");
	cr_expect_eq(raw("write static_keys\nx", 19, NULL, 0), -EACCES, "read-only file");
	/* still serving */
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0);
}

Test(socket, oversize_requests, .init = setup)
{
	size_t n = KK_CONTROL_MAX_REQUEST + 4096;
	char *req = malloc(n);

	memcpy(req, "write test/echo\n", 16);
	memset(req + 16, 'a', n - 16);
	cr_expect_eq(raw(req, n, NULL, 0), -E2BIG);
	cr_expect_eq(raw(req, 16 + 100, NULL, 0), -E2BIG, "over the file's own limit");
	cr_expect_eq(raw(req, 16 + 99, NULL, 0), 0);
	free(req);
}

static void *stalled_client(void *arg)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	(void)arg;
	strcpy(sa.sun_path, kk_control_socket_path());
	connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	send(fd, "read te", 7, MSG_NOSIGNAL);	/* ... and never finish */
	sleep(4);
	close(fd);
	return NULL;
}

Test(socket, stalled_client_does_not_block_others, .init = setup, .timeout = 20)
{
	pthread_t th;

	pthread_create(&th, NULL, stalled_client, NULL);
	usleep(100 * 1000);
	/* The server drops the stalled client after its receive timeout. */
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0);
	pthread_join(th, NULL);
}

Test(socket, permissions)
{
	struct stat st;
	char dir[512];

	snprintf(dir, sizeof(dir), "%s", kk_control_socket_path());
	cr_assert_eq(stat(dir, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600, "socket mode %o", st.st_mode & 0777);
	*strrchr(dir, '/') = '\0';
	cr_assert_eq(stat(dir, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0700, "dir mode %o", st.st_mode & 0777);
}

/* A client running as nobody is refused by SO_PEERCRED even when the file
 * permissions let it connect. */
Test(socket, foreign_uid_is_refused, .init = setup)
{
	struct passwd *pw = getpwnam("nobody");
	char path[512], dir[512];
	int st;
	pid_t pid;

	if (geteuid() != 0 || !pw)
		cr_skip_test("needs root and a 'nobody' user");
	snprintf(path, sizeof(path), "%s", kk_control_socket_path());
	snprintf(dir, sizeof(dir), "%s", path);
	*strrchr(dir, '/') = '\0';
	chmod(dir, 0711);
	chmod(path, 0666);
	pid = fork();
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char buf[256] = "";
		ssize_t n;
		int fd;

		if (setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(10);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		strcpy(sa.sun_path, path);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(11);
		send(fd, "read test/echo\n", 15, MSG_NOSIGNAL);
		shutdown(fd, SHUT_WR);
		n = recv(fd, buf, sizeof(buf) - 1, MSG_WAITALL);
		if (n <= 0)
			_exit(12);
		buf[n] = '\0';
		_exit(atoi(buf) == -EACCES && !strstr(buf, "hello") ? 0 : 13);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	chmod(dir, 0700);
	chmod(path, 0600);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0, "still serving its owner");
}

/* fork() from a forked child: the registry lock must come through both. */
Test(socket, fork_of_a_fork, .timeout = 30)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t gc = fork();
		int gst;

		if (gc < 0)
			_exit(10);
		if (gc == 0) {
			char *txt = NULL;

			/* the grandchild serves and reads its own registry */
			_exit(kk_control_read("static_keys", &txt, NULL) == 0 &&
			      kk_control_socket_path() ? 0 : 11);
		}
		if (waitpid(gc, &gst, 0) != gc || !WIFEXITED(gst))
			_exit(12);
		if (kk_control_create_file("test/after-fork", &echo_ops, "x"))
			_exit(13);
		_exit(WEXITSTATUS(gst));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
