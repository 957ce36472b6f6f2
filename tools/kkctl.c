// SPDX-License-Identifier: MIT
/*
 * kkctl: read and write the virtual files that kernelkit processes serve on
 * their control endpoints.
 *
 *   kkctl ls                          processes with an endpoint
 *   kkctl -p PID files                the files a process serves
 *   kkctl -p PID read FILE            print a file
 *   kkctl -p PID write FILE [TEXT]    write TEXT (or stdin) to a file
 *
 * Exit status: 0 success, 1 the operation failed, 2 usage error.
 */
#include <dirent.h>
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
		"  ls      list the processes that have an endpoint\n"
		"  files   list the virtual files a process serves\n"
		"  read    print a file\n"
		"  write   write TEXT to a file; without TEXT, read it from standard input\n"
		"\n"
		"options:\n"
		"  -p, --pid PID   the process to talk to\n"
		"  -h, --help      show this help\n"
		"\n"
		"Sockets are looked up in $KK_CONTROL_DIR, else $XDG_RUNTIME_DIR/kernelkit,\n"
		"else /tmp/kernelkit-<uid>.  Exit status: 0 ok, 1 failed, 2 usage.\n",
		prog, prog, prog, prog);
}

static int connect_pid(pid_t pid)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { KK_CONTROL_TIMEOUT_MS / 1000 + 3, 0 };
	int fd, e;

	if (kk_control_sock_path(sa.sun_path, sizeof(sa.sun_path), pid)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
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

	fd = connect_pid(pid);
	if (fd < 0) {
		if (errno == ENOENT || errno == ECONNREFUSED)
			fprintf(stderr, "%s: process %d has no control endpoint\n", prog, (int)pid);
		else
			fprintf(stderr, "%s: cannot connect to process %d: %s\n", prog, (int)pid,
				strerror(errno));
		return 1;
	}
	n = snprintf(head, sizeof(head), "%s%s%s\n", verb, file ? " " : "", file ? file : "");
	if (n >= (int)sizeof(head)) {
		fprintf(stderr, "%s: file name too long: %s\n", prog, file);
		close(fd);
		return 2;
	}
	/* A peer that refuses us may close before reading: EPIPE is not fatal,
	 * its reply (if any) says why. */
	if (kk_send_all(fd, head, (size_t)n) == 0 && blen)
		kk_send_all(fd, body, blen);
	shutdown(fd, SHUT_WR);
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
		fprintf(stderr, "%s: %s%s%s: %s%s%.*s\n", prog, verb, file ? " " : "", file ? file : "",
			strerror(-status), ml ? ": " : "", (int)ml, msg);
		free(resp);
		return 1;
	}
	fwrite(nl + 1, 1, rlen - (size_t)(nl + 1 - resp), stdout);
	free(resp);
	return fflush(stdout) ? 1 : 0;
}

static int cmd_ls(void)
{
	char dir[4096];
	struct dirent *de;
	DIR *d;

	if (kk_control_dir(dir, sizeof(dir))) {
		fprintf(stderr, "%s: socket directory path too long\n", prog);
		return 1;
	}
	d = opendir(dir);
	if (!d) {
		if (errno == ENOENT)
			return 0;	/* no process has started an endpoint yet */
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return 1;
	}
	printf("%-8s %s\n", "PID", "COMMAND");
	while ((de = readdir(d))) {
		char comm[64] = "?", path[64], *end;
		long pid = strtol(de->d_name, &end, 10);
		FILE *f;
		int fd;

		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		fd = connect_pid((pid_t)pid);
		if (fd < 0)
			continue;	/* a stale socket of a process that is gone */
		close(fd);
		snprintf(path, sizeof(path), "/proc/%ld/comm", pid);
		f = fopen(path, "re");
		if (f) {
			if (fgets(comm, sizeof(comm), f))
				comm[strcspn(comm, "\n")] = '\0';
			fclose(f);
		}
		printf("%-8ld %s\n", pid, comm);
	}
	closedir(d);
	return 0;
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
