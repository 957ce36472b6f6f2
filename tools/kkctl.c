// SPDX-License-Identifier: MIT
/*
 * kkctl: read and write the virtual files that kernelkit processes serve on
 * their control endpoints.
 *
 *   kkctl ls                          processes with an endpoint we may use
 *   kkctl -p PID files                the files a process serves
 *   kkctl -p PID read FILE            print a file
 *   kkctl -p PID write FILE [TEXT]    write TEXT (or stdin) to a file
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include "control_path.h"

static const char *prog = "kkctl";

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s ls\n"
		"       %s -p PID files\n"
		"       %s -p PID read FILE\n"
		"       %s -p PID write FILE [TEXT]\n"
		"\n"
		"Talk to the control endpoint of a process that uses kernelkit.\n"
		"  ls      list the processes that have an endpoint you may use\n"
		"  files   list the virtual files a process serves\n"
		"  read    print a file\n"
		"  write   write TEXT to a file; without TEXT, read it from standard input\n"
		"\n"
		"options:\n"
		"  -p, --pid PID   the process to talk to\n"
		"  -h, --help      show this help\n"
		"\n"
		"Process PID serves the abstract Unix socket @kernelkit/PID.  Exit status:\n"
		"0 ok, 1 failed, 2 usage.\n",
		prog, prog, prog, prog);
}

/*
 * Print what a process sent us with its control characters escaped: the
 * process is not trusted to write to our terminal.  @keep: "\n\t" for file
 * text, "" for one-line fields.
 */
static void put_escaped(FILE *f, const char *s, size_t n, const char *keep)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if ((c < 0x20 && !(c && strchr(keep, c))) || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else if (c == '\\' && *keep == '\0')
			fputs("\\\\", f);
		else
			putc(c, f);
	}
}

/*
 * The peer is what we asked for: the socket's owner (SO_PEERCRED: the process
 * that called listen()) is process @pid, and it runs as our uid, or we are
 * root.  Abstract names have no owner, so without this another user's process
 * could squat @kernelkit/PID and read what we write.  0, or 1 with a message.
 */
static int check_peer(int fd, pid_t pid)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);
	uid_t me = geteuid();

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl)) {
		fprintf(stderr, "%s: process %d: cannot check the endpoint's owner: %s\n", prog,
			(int)pid, strerror(errno));
		return 1;
	}
	if (cr.pid != pid) {
		fprintf(stderr, "%s: refusing @%s%d: it is served by process %d (uid %u), "
			"not by process %d\n", prog, KK_CONTROL_ABSTRACT_PREFIX, (int)pid,
			(int)cr.pid, (unsigned)cr.uid, (int)pid);
		return 1;
	}
	if (cr.uid != me && me != 0) {
		fprintf(stderr, "%s: refusing process %d: it runs as uid %u, you are uid %u "
			"(and not root)\n", prog, (int)pid, (unsigned)cr.uid, (unsigned)me);
		return 1;
	}
	return 0;
}

/* Connect to @pid's endpoint.  -1 with errno set on failure. */
static int connect_pid(pid_t pid, int flags)
{
	struct sockaddr_un sa;
	socklen_t sl = kk_control_addr(&sa, pid);
	struct timeval tv = { KK_CONTROL_TIMEOUT_MS / 1000 + 3, 0 };
	int fd, e;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | flags, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sl)) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

/* Read until EOF into a malloc'ed, NUL-terminated buffer. */
static char *slurp(int fd, FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap *= 2);

			if (!nb) {
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		if (f) {
			r = (ssize_t)fread(buf + n, 1, cap - n - 1, f);
			if (r == 0 && ferror(f))
				r = -1;
		} else {
			r = recv(fd, buf + n, cap - n - 1, 0);
		}
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (buf)
		buf[n] = '\0';
	*len = n;
	return buf;
}

/* One request; prints the body to stdout, or the error to stderr. */
static int request(pid_t pid, const char *verb, const char *file, const char *body, size_t blen)
{
	char head[KK_CONTROL_NAME_MAX + 16], *resp, *nl;
	size_t rlen;
	int fd, status, n;

	n = snprintf(head, sizeof(head), "%s%s%s\n", verb, file ? " " : "", file ? file : "");
	if (n >= (int)sizeof(head)) {
		fprintf(stderr, "%s: file name too long: %s\n", prog, file);
		return 2;
	}
	fd = connect_pid(pid, 0);
	if (fd < 0) {
		if (errno == ECONNREFUSED || errno == ENOENT)
			fprintf(stderr, "%s: process %d has no control endpoint\n", prog, (int)pid);
		else
			fprintf(stderr, "%s: cannot connect to process %d: %s\n", prog, (int)pid,
				strerror(errno));
		return 1;
	}
	if (check_peer(fd, pid)) {
		close(fd);
		return 1;
	}
	/* A peer that refuses us may close before reading: EPIPE is not fatal,
	 * its reply (if any) says why. */
	if (kk_send_all(fd, head, (size_t)n) == 0 && blen)
		kk_send_all(fd, body, blen);
	shutdown(fd, SHUT_WR);
	errno = 0;
	resp = slurp(fd, NULL, &rlen);
	close(fd);
	if (!resp || !(nl = memchr(resp, '\n', rlen))) {
		fprintf(stderr, "%s: process %d: no reply%s%s\n", prog, (int)pid,
			errno ? ": " : "", errno ? strerror(errno) : "");
		free(resp);
		return 1;
	}
	*nl = '\0';
	status = atoi(resp);
	if (status < 0) {
		const char *msg = nl + 1;
		size_t ml = rlen - (size_t)(nl + 1 - resp);

		while (ml && msg[ml - 1] == '\n')
			ml--;
		fprintf(stderr, "%s: %s%s%s: %s%s", prog, verb, file ? " " : "", file ? file : "",
			strerror(-status), ml ? ": " : "");
		put_escaped(stderr, msg, ml, "\n\t");
		fputc('\n', stderr);
		free(resp);
		return 1;
	}
	put_escaped(stdout, nl + 1, rlen - (size_t)(nl + 1 - resp), "\n\t");
	free(resp);
	return fflush(stdout) ? 1 : 0;
}

/* @pid serves a live endpoint that we may use (its owner checked as for a request). */
static int usable(pid_t pid)
{
	struct ucred cr;
	socklen_t sl = sizeof(cr);
	int fd = connect_pid(pid, SOCK_NONBLOCK), ok;

	if (fd < 0)
		return 0;
	ok = !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &sl) && cr.pid == pid &&
	     (cr.uid == geteuid() || geteuid() == 0);
	close(fd);
	return ok;
}

/*
 * Endpoints are abstract sockets: find them in /proc/net/unix, listening
 * sockets (flag __SO_ACCEPTCON, 0x10000) named "@kernelkit/<pid>", and keep
 * the live processes we may control.
 */
static int cmd_ls(void)
{
	static const char prefix[] = "@" KK_CONTROL_ABSTRACT_PREFIX;
	char line[512];
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f) {
		fprintf(stderr, "%s: /proc/net/unix: %s\n", prog, strerror(errno));
		return 1;
	}
	printf("%-8s %s\n", "PID", "COMMAND");
	while (fgets(line, sizeof(line), f)) {
		char comm[64] = "?", path[64], name[256] = "", *end;
		unsigned long flags;
		unsigned type, st;
		long pid;
		FILE *c;

		if (sscanf(line, "%*s %*s %*s %lx %x %x %*s %255s", &flags, &type, &st, name) != 4 ||
		    !(flags & 0x10000) || type != SOCK_STREAM ||
		    strncmp(name, prefix, sizeof(prefix) - 1))
			continue;
		pid = strtol(name + sizeof(prefix) - 1, &end, 10);
		if (pid <= 0 || *end || !usable((pid_t)pid))
			continue;
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		c = fopen(path, "re");
		if (c) {
			if (fgets(comm, sizeof(comm), c))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(c);
		}
		printf("%-8ld ", pid);
		put_escaped(stdout, comm, strlen(comm), "");
		putchar('\n');
	}
	fclose(f);
	return fflush(stdout) ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	long pid = 0;
	char *end;
	int c;

	while ((c = getopt_long(argc, argv, "+p:h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			pid = strtol(optarg, &end, 10);
			if (*end || pid <= 0) {
				fprintf(stderr, "%s: bad pid: %s\n", prog, optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[0], "ls") && argc == 1)
		return cmd_ls();
	if (!pid) {
		fprintf(stderr, "%s: %s needs -p PID\n", prog, argv[0]);
		return 2;
	}
	if (!strcmp(argv[0], "files") && argc == 1)
		return request((pid_t)pid, "list", NULL, NULL, 0);
	if (!strcmp(argv[0], "read") && argc == 2)
		return request((pid_t)pid, "read", argv[1], NULL, 0);
	if (!strcmp(argv[0], "write") && (argc == 2 || argc == 3)) {
		size_t len;
		char *text;
		int ret;

		if (argc == 3)
			return request((pid_t)pid, "write", argv[1], argv[2], strlen(argv[2]));
		text = slurp(-1, stdin, &len);
		if (!text) {
			fprintf(stderr, "%s: reading standard input: %s\n", prog, strerror(errno));
			return 1;
		}
		ret = request((pid_t)pid, "write", argv[1], text, len);
		free(text);
		return ret;
	}
	usage(stderr);
	return 2;
}
