// SPDX-License-Identifier: MIT
/* The control endpoint: file registry rules, bad input on the socket, size
 * limits, stalled clients, foreign uids, the abstract address, a squatted
 * name, and kk_threads_stop(). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/kernelkit.h>

#include "kktest.h"

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

/* The address of "@kernelkit/<pid>": '@' is the leading NUL, no trailing NUL. */
static socklen_t addr_of(struct sockaddr_un *sa, const char *name)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	cr_assert(name && name[0] == '@', "address %s", name ? name : "(null)");
	memcpy(sa->sun_path + 1, name + 1, strlen(name) - 1);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(name));
}

/* connect() to @pid's endpoint: 0 or -errno. */
static int try_connect(pid_t pid)
{
	char name[64];
	struct sockaddr_un sa;
	socklen_t sl;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	snprintf(name, sizeof(name), "@kernelkit/%d", (int)pid);
	sl = addr_of(&sa, name);
	ret = connect(fd, (struct sockaddr *)&sa, sl) ? -errno : 0;
	close(fd);
	return ret;
}

/* Send raw bytes, read the whole reply; returns the status line's value. */
static int raw(const void *req, size_t len, char *body, size_t blen)
{
	struct sockaddr_un sa;
	socklen_t sl = addr_of(&sa, kk_control_socket_path());
	char buf[4096];
	size_t n = 0;
	ssize_t r;
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sl), 0, "%s", strerror(errno));
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

Test(control_endpoint, registry_names_and_duplicates)
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

Test(control_endpoint, registry_in_process_read_write, .init = setup)
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

Test(control_endpoint, socket_served_requests, .init = setup)
{
	char body[4096];

	cr_expect_eq(raw("read test/echo\n", 15, body, sizeof(body)), 0);
	cr_expect_str_eq(body, "hello world\n");
	cr_expect_eq(raw("write test/echo\nxyz", 19, body, sizeof(body)), 0);
	cr_expect_str_eq(last_write, "xyz");
	cr_expect_eq(raw("list\n", 5, body, sizeof(body)), 0);
	cr_expect(strstr(body, "rw\ttest/echo\n"), "%s", body);
	cr_expect(strstr(body, "rw\tstatic_keys\n"), "%s", body);	/* exported keys */
}

Test(control_endpoint, socket_bad_input_is_rejected, .init = setup)
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
	cr_expect_eq(raw("write debug_objects/stats\nx", 27, NULL, 0), -EACCES, "read-only file");
	/* still serving */
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0);
}

/* A NUL byte in a write is refused before any handler runs, in one line, in
 * process and over the socket (issue 37: a handler that reads C strings
 * stopped at it, and one query of two ran). */
Test(control_endpoint, write_with_a_nul_is_refused, .init = setup)
{
	static const char req[] = "write test/echo\nab\0cd";
	char *reply = NULL, body[256];

	last_write[0] = '\0';
	cr_expect_eq(kk_control_write("test/echo", "ab\0cd", 5, &reply), -EINVAL);
	cr_expect(reply && strstr(reply, "NUL byte at offset 2") &&
		  strchr(reply, '\n') == reply + strlen(reply) - 1,
		  "not one line: '%s'", reply ? reply : "(null)");
	free(reply);
	cr_expect_eq(kk_control_write("test/echo", "ab\0", 3, NULL), -EINVAL, "a NUL at the end");
	cr_expect_eq(raw(req, sizeof(req) - 1, body, sizeof(body)), -EINVAL);
	cr_expect(strstr(body, "NUL byte at offset 2"), "body '%s'", body);
	cr_expect_str_eq(last_write, "", "the handler ran");
	cr_expect_eq(kk_control_write("test/echo", "ab", 2, NULL), 0, "without the NUL");
	cr_expect_str_eq(last_write, "ab");
}

Test(control_endpoint, socket_oversize_requests, .init = setup)
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

/* Events between the test and its stalled client, in place of sleeps: the
 * client says when its half request is sent, and holds its connection open
 * until the test says the other client has been served. */
static pthread_mutex_t stall_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t stall_cv = PTHREAD_COND_INITIALIZER;
static int stall_sent, stall_done;

static void stall_signal(int *flag)
{
	pthread_mutex_lock(&stall_mu);
	*flag = 1;
	pthread_cond_broadcast(&stall_cv);
	pthread_mutex_unlock(&stall_mu);
}

static void stall_wait(const int *flag)
{
	pthread_mutex_lock(&stall_mu);
	while (!*flag)
		pthread_cond_wait(&stall_cv, &stall_mu);
	pthread_mutex_unlock(&stall_mu);
}

static void *stalled_client(void *arg)
{
	struct sockaddr_un sa;
	socklen_t sl = addr_of(&sa, kk_control_socket_path());
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	(void)arg;
	connect(fd, (struct sockaddr *)&sa, sl);
	send(fd, "read te", 7, MSG_NOSIGNAL);	/* ... and never finish */
	stall_signal(&stall_sent);
	stall_wait(&stall_done);
	close(fd);
	return NULL;
}

Test(control_endpoint, socket_stalled_client_does_not_block_others, .init = setup, .timeout = 20)
{
	pthread_t th;

	pthread_create(&th, NULL, stalled_client, NULL);
	/* The stalled client is connected (ahead of us in the accept queue)
	 * and stays connected, half a request sent, until we are answered. */
	stall_wait(&stall_sent);
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0);
	stall_signal(&stall_done);
	pthread_join(th, NULL);
}

/* The endpoint is an abstract socket: no file anywhere, listed in
 * /proc/net/unix as @kernelkit/<pid>, listening, its descriptor close-on-exec. */
Test(control_endpoint, socket_abstract_name_no_file, .init = setup)
{
	char want[64], line[512];
	FILE *f = fopen("/proc/net/unix", "re");
	int found = 0, cloexec = -1;

	snprintf(want, sizeof(want), "@kernelkit/%d", (int)getpid());
	cr_expect_str_eq(kk_control_socket_path(), want);
	cr_assert(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long flags;
		char name[256];

		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %*s %255s", &flags, name) == 2 &&
		    !strcmp(name, want) && (flags & 0x10000))
			found++;
	}
	fclose(f);
	cr_expect_eq(found, 1, "%s listening %d times", want, found);
	for (int fd = 3; fd < 1024; fd++) {
		struct sockaddr_un sa;
		socklen_t sl = sizeof(sa);

		if (getsockname(fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sun_family == AF_UNIX &&
		    sl == offsetof(struct sockaddr_un, sun_path) + strlen(want) && !sa.sun_path[0] &&
		    !memcmp(sa.sun_path + 1, want + 1, strlen(want) - 1))
			cloexec = fcntl(fd, F_GETFD) & FD_CLOEXEC;
	}
	cr_expect_eq(cloexec, FD_CLOEXEC, "the listening descriptor is not close-on-exec");
}

/* A client running as nobody can connect (an abstract name has no
 * permissions) and is refused by SO_PEERCRED. */
Test(control_endpoint, socket_foreign_uid_is_refused, .init = setup)
{
	struct passwd *pw = getpwnam("nobody");
	char path[512];
	int st;
	pid_t pid;

	if (geteuid() != 0 || !pw)
		cr_skip_test("needs root and a 'nobody' user");
	snprintf(path, sizeof(path), "%s", kk_control_socket_path());
	pid = fork();
	if (pid == 0) {
		struct sockaddr_un sa;
		socklen_t sl = addr_of(&sa, path);
		char buf[256] = "";
		ssize_t n;
		int fd;

		if (setgid(pw->pw_gid) || setuid(pw->pw_uid))
			_exit(10);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sl))
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
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_expect_eq(raw("read test/echo\n", 15, NULL, 0), 0, "still serving its owner");
}

/*
 * Strangers cannot starve the owner: up to 256 connections from nobody, held
 * open without a byte sent, and the owner's request is still answered while
 * D, an owner's client that connected before them and sends nothing, is still
 * inside its deadline.  The endpoint cuts D off at its deadline, so "D still
 * open" says that no deadline had to pass for the answer: the strangers never
 * held the slots the owner needed.  (Before, each held a slot for 2 s.)
 */
static int stranger_flood(const char *path, uid_t uid, gid_t gid)
{
	struct sockaddr_un sa;
	socklen_t sl = addr_of(&sa, path);
	int held = 0, tries = 0;

	if (setgid(gid) || setuid(uid))
		return -1;
	while (held < 256 && tries < 2000) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0);

		if (s < 0)
			break;
		if (!connect(s, (struct sockaddr *)&sa, sl)) {
			held++;		/* kept open until the parent is done */
			continue;
		}
		close(s);
		if (errno != EAGAIN)
			break;
		tries++;		/* the backlog is full: bounded polling */
		poll(NULL, 0, 1);
	}
	return held;
}

Test(control_endpoint, socket_strangers_do_not_starve_the_owner, .init = setup, .timeout = 60)
{
	struct passwd *pw = getpwnam("nobody");
	struct sockaddr_un sa;
	char path[512], body[256];
	int rp[2], gp[2], d, held = 0, st;
	ssize_t r;
	pid_t pid;

	if (geteuid() != 0 || !pw)
		cr_skip_test("needs root and a 'nobody' user");
	snprintf(path, sizeof(path), "%s", kk_control_socket_path());
	d = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(connect(d, (struct sockaddr *)&sa, addr_of(&sa, path)), 0);
	cr_assert_eq(pipe(rp), 0);
	cr_assert_eq(pipe(gp), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c;

		close(d);
		held = stranger_flood(path, pw->pw_uid, pw->pw_gid);
		if (write(rp[1], &held, sizeof(held)) != sizeof(held))
			_exit(10);
		close(gp[1]);
		_exit(read(gp[0], &c, 1) == 0 ? 0 : 11);	/* until the parent closes it */
	}
	close(gp[0]);
	cr_assert_eq(read(rp[0], &held, sizeof(held)), (ssize_t)sizeof(held));
	cr_log_info("%d stranger connections held open", held);
	cr_expect_geq(held, 17, "only %d stranger connections", held);
	cr_expect_eq(raw("read test/echo\n", 15, body, sizeof(body)), 0, "owner not answered");
	cr_expect_str_eq(body, "hello world\n");
	r = recv(d, body, sizeof(body), MSG_DONTWAIT);
	cr_expect(r < 0 && errno == EAGAIN, "the first client was cut off (its deadline "
		  "passed) before the owner was answered: recv %zd", r);
	close(gp[1]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	close(d);
	close(rp[0]);
	close(rp[1]);
}

/* Someone else holds our name: the endpoint takes @kernelkit/<pid>/1 and
 * says once, in one line, which name it refused. */
Test(control_endpoint, socket_squatted_name_is_reported_once, .timeout = 20)
{
	int go[2], errp[2], st, s;
	char buf[1024] = "", name[64];
	struct sockaddr_un sa;
	ssize_t n, got = 0;
	socklen_t sl;
	pid_t pid;

	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(errp), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char c, want[64];

		dup2(errp[1], 2);
		if (read(go[0], &c, 1) != 1)
			_exit(10);
		if (kk_control_start() != 0 || kk_control_start() != 0)
			_exit(11);
		snprintf(want, sizeof(want), "@kernelkit/%d/1", (int)getpid());
		if (kk_control_create_file("test/squat", &echo_ops, "x") || !kk_control_socket_path() ||
		    strcmp(kk_control_socket_path(), want))
			_exit(12);
		kk_control_stop();
		_exit(0);
	}
	close(errp[1]);
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(name, sizeof(name), "@kernelkit/%d", (int)pid);
	sl = addr_of(&sa, name);
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sl), 0, "%s", strerror(errno));
	cr_assert_eq(listen(s, 1), 0);
	cr_assert_eq(write(go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	close(s);
	while ((n = read(errp[0], buf + got, sizeof(buf) - 1 - (size_t)got)) > 0)
		got += n;
	buf[got] = '\0';
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	cr_expect(strstr(buf, "is taken by another socket"), "stderr: '%s'", buf);
	cr_expect(got > 0 && strchr(buf, '\n') == buf + got - 1, "not one line: '%s'", buf);
}

/*
 * kk_threads_stop(): the endpoint's thread is gone (one thread left) and
 * nobody can connect; it does not start while stopped; kk_threads_start()
 * brings it back.  In a fork child, where the only thread is ours.
 */
Test(control_endpoint, threads_stop_and_start, .timeout = 30)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t me = getpid();

		if (kkt_nr_tasks() != 1)
			_exit(9);
		if (kk_control_start() || kkt_nr_tasks() != 2 || try_connect(me))
			_exit(10);
		if (kk_threads_stop() || kkt_nr_tasks() != 1)
			_exit(11);
		if (try_connect(me) != -ECONNREFUSED || kk_control_socket_path())
			_exit(12);
		if (kk_control_start() != -EAGAIN || kkt_nr_tasks() != 1)
			_exit(13);
		if (kk_control_create_file("test/stopped", &echo_ops, "x") || kkt_nr_tasks() != 1)
			_exit(14);
		if (kk_threads_start() || kkt_nr_tasks() != 2 || try_connect(me))
			_exit(15);
		if (!kk_control_socket_path())
			_exit(16);
		kk_control_stop();
		if (kkt_nr_tasks() != 1 || try_connect(me) != -ECONNREFUSED)
			_exit(17);
		/* stopped by hand: a new file of the program's does not restart it */
		if (kk_control_create_file("test/after-stop", &echo_ops, "x") || kkt_nr_tasks() != 1)
			_exit(19);
		/* stopped by hand: kk_threads_start() leaves it stopped */
		if (kk_threads_stop() || kk_threads_start() || kkt_nr_tasks() != 1)
			_exit(18);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

/*
 * kk_threads_stop() right after the endpoint started: its thread is gone
 * before the call returns, even when it has not run a line of its own yet.
 * One CPU, so the creator usually runs on as soon as the new thread says it
 * started (the join once read the thread's id before the thread had written
 * it, and did not wait for it to leave the thread group: child status 11).
 */
Test(control_endpoint, threads_stop_right_after_start, .timeout = 60)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (kkt_pin_to_one_cpu())
			_exit(9);
		if (kk_control_start() || kk_threads_stop() || kkt_nr_tasks() != 1)
			_exit(10);
		for (int i = 0; i < 200; i++)
			if (kk_threads_start() || kkt_nr_tasks() != 2 || kk_threads_stop() ||
			    kkt_nr_tasks() != 1)
				_exit(11);
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
}

/* fork() from a forked child: the registry lock must come through both, and
 * each generation serves its own endpoint, @kernelkit/<its pid>. */
static int serves_own(void)
{
	char want[64];
	const char *p = kk_control_socket_path();

	snprintf(want, sizeof(want), "@kernelkit/%d", (int)getpid());
	return p && !strcmp(p, want) && try_connect(getpid()) == 0;
}

Test(control_endpoint, socket_fork_of_a_fork, .timeout = 30)
{
	int st;
	pid_t pid;

	cr_assert_eq(kk_control_start(), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		pid_t gc = fork();
		int gst;

		if (gc < 0)
			_exit(10);
		if (gc == 0) {
			char *txt = NULL;

			/* the grandchild serves and reads its own registry */
			_exit(kk_control_read("static_keys", &txt, NULL) == 0 && serves_own() ? 0 : 11);
		}
		if (waitpid(gc, &gst, 0) != gc || !WIFEXITED(gst))
			_exit(12);
		if (kk_control_create_file("test/after-fork", &echo_ops, "x") || !serves_own())
			_exit(13);
		_exit(WEXITSTATUS(gst));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
	cr_expect(serves_own(), "the parent lost its endpoint");
}

/* A process without an endpoint forks a child without one: nothing to control. */
Test(control_endpoint, socket_no_endpoint_no_endpoint_in_the_child, .timeout = 30)
{
	int st;
	pid_t pid;

	cr_assert_null(kk_control_socket_path());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(!kk_control_socket_path() && kkt_nr_tasks() == 1 &&
		      try_connect(getpid()) == -ECONNREFUSED ? 0 : 10);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %#x", st);
}
