// SPDX-License-Identifier: MIT
/*
 * A stand-in for systemd-journald that checks the wire format of the native
 * protocol (systemd's "Native Journal Protocol") strictly, for
 * test/scripts/dynamic_debug_journal.sh where no journald can run.
 *   journal_fake SOCKET
 * Binds SOCKET (a datagram socket), and for each datagram prints one JSON
 * object per line on stdout, as `journalctl -o json` would: the fields, plus
 * _PID (from SCM_CREDENTIALS) and _TRANSPORT=journal.  A datagram with no
 * payload must carry exactly one memfd (SCM_RIGHTS) sealed against shrinking,
 * growing and writing, whose content is the entry.  Any violation: a line on
 * stderr and exit 1.  Runs until killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "journal_fake: %s\n", what);
	exit(1);
}

static void json_str(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20 || c == 0x7f)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static int valid_key(const char *k, size_t n)
{
	/* journald: A-Z, 0-9 and '_', not starting with '_' or a digit, at most 64 */
	if (!n || n > 64 || k[0] == '_' || (k[0] >= '0' && k[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return 0;
	return 1;
}

static void entry(const char *p, size_t len, pid_t pid)
{
	const char *end = p + len;

	putchar('{');
	while (p < end) {
		const char *eq = memchr(p, '=', (size_t)(end - p));
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *val;
		size_t vlen;

		if (!nl)
			die("a field without its final newline");
		if (eq && eq < nl) {			/* KEY=value\n */
			if (!valid_key(p, (size_t)(eq - p)))
				die("an invalid field name");
			val = eq + 1;
			vlen = (size_t)(nl - val);
			json_str(p, (size_t)(eq - p));
		} else {				/* KEY\n<le64><value>\n */
			uint64_t n = 0;

			if (!valid_key(p, (size_t)(nl - p)))
				die("an invalid field name (binary form)");
			if ((size_t)(end - nl) < 9)
				die("a binary field without its length");
			for (int i = 7; i >= 0; i--)
				n = n << 8 | (unsigned char)nl[1 + i];
			val = nl + 9;
			if (n >= (uint64_t)(end - val) || val[n] != '\n')
				die("a binary field whose length does not end at a newline");
			vlen = (size_t)n;
			json_str(p, (size_t)(nl - p));
			nl = val + n;
		}
		putchar(':');
		json_str(val, vlen);
		putchar(',');
		p = nl + 1;
	}
	printf("\"_PID\":\"%d\",\"_TRANSPORT\":\"journal\"}\n", (int)pid);
	fflush(stdout);
}

static void from_memfd(int fd, pid_t pid)
{
	int seals = fcntl(fd, F_GET_SEALS);
	int need = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
	struct stat st;
	void *m;

	if (seals < 0 || (seals & need) != need)
		die("a memfd that is not sealed against shrink, grow and write");
	if (fstat(fd, &st) || st.st_size <= 0)
		die("an empty memfd");
	m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		die("mmap of the memfd failed");
	entry(m, (size_t)st.st_size, pid);
	munmap(m, (size_t)st.st_size);
}

int main(int argc, char **argv)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int s, on = 1, big = 8 << 20;

	if (argc != 2 || strlen(argv[1]) >= sizeof(a.sun_path))
		return 2;
	strcpy(a.sun_path, argv[1]);
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)))
		die("socket");
	setsockopt(s, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	unlink(a.sun_path);
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) || chmod(a.sun_path, 0666))
		die("bind");
	for (;;) {
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(8 * sizeof(int))];
		} c;
		struct msghdr mh = { 0 };
		struct iovec iov;
		char *buf;
		ssize_t n = recv(s, NULL, 0, MSG_PEEK | MSG_TRUNC);
		pid_t pid = 0;
		int fds[8], nfds = 0;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("recv");
		}
		buf = malloc((size_t)n + 1);
		if (!buf)
			die("malloc");
		iov.iov_base = buf;
		iov.iov_len = (size_t)n + 1;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		n = recvmsg(s, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0)
			die("recvmsg");
		if (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))
			die("a truncated datagram");
		for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
			if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_CREDENTIALS) {
				struct ucred u;

				memcpy(&u, CMSG_DATA(h), sizeof(u));
				pid = u.pid;
			} else if (h->cmsg_level == SOL_SOCKET && h->cmsg_type == SCM_RIGHTS) {
				nfds = (int)((h->cmsg_len - CMSG_LEN(0)) / sizeof(int));
				memcpy(fds, CMSG_DATA(h), (size_t)nfds * sizeof(int));
			}
		}
		if (nfds > 1 || (nfds == 1 && n > 0))
			die("descriptors other than one memfd in an empty datagram");
		if (nfds == 1) {
			from_memfd(fds[0], pid);
			close(fds[0]);
		} else if (n > 0) {
			entry(buf, (size_t)n, pid);
		} else {
			die("an empty datagram");
		}
		free(buf);
	}
}
