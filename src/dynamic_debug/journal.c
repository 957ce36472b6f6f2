// SPDX-License-Identifier: MIT
/*
 * The journal sink: each dynamic-debug message as one journal entry with
 * structured fields, sent with the journal's native protocol (see
 * systemd's "Native Journal Protocol"; no libsystemd):
 *
 *  - one datagram to /run/systemd/journal/socket per entry;
 *  - a field is "KEY=value\n", or "KEY\n" + 64-bit little-endian length +
 *    value + "\n" when the value holds a newline (a multi-line message);
 *  - an entry too big for a datagram goes in a sealed memfd, whose
 *    descriptor is the only content of the datagram (SCM_RIGHTS).
 *
 * The socket is opened at the first message, close-on-exec, and kept as a
 * struct kk_fd: if the program closes or reuses the number we open a new
 * one and never touch theirs.  No journal (no socket, or sending fails):
 * the message goes to stderr and we say so once; the next message tries
 * the journal again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <kernelkit/dynamic_debug.h>
#include "common/internal.h"
#include "dynamic_debug/internal.h"
#include <kernelkit/control.h>
#include "control.h"

#define JOURNAL_SOCKET	"/run/systemd/journal/socket"
#define MAX_FIELDS	9		/* MESSAGE PRIORITY CODE_* KK_MODULE TID SYSLOG_IDENTIFIER */

struct field {
	char head[32];			/* "KEY=" or "KEY\n" + length */
	size_t hlen;
	const char *val;
	size_t len;
};

struct entry {
	struct field f[MAX_FIELDS];
	int n;
	char line[16], tid[16];		/* the texts of CODE_LINE and TID */
};

/*
 * The socket, published once complete.  No lock: a fork() in another thread
 * must not leave one held in the child.  One replaced because the program
 * closed or reused its number stays allocated and reachable (a sender may
 * still read it); that happens only when the program closes our descriptor.
 */
struct journal_sock {
	struct kk_fd fd;
	struct journal_sock *retired;
};
static _Atomic(struct journal_sock *) journal_fd;
static int journal_warned;		/* we said once that there is no journal */

static void add(struct entry *e, const char *key, const char *val, size_t len)
{
	struct field *f = &e->f[e->n++];
	size_t k = strlen(key);

	memcpy(f->head, key, k);
	if (memchr(val, '\n', len)) {	/* the binary-safe form */
		uint64_t le = (uint64_t)len;

		f->head[k] = '\n';
		for (int i = 0; i < 8; i++)
			f->head[k + 1 + (size_t)i] = (char)(le >> (8 * i));
		f->hlen = k + 9;
	} else {
		f->head[k] = '=';
		f->hlen = k + 1;
	}
	f->val = val;
	f->len = len;
}

static void fill(struct entry *e, const struct _ddebug *d, const char *msg, size_t len)
{
	e->n = 0;
	if (len && msg[len - 1] == '\n')	/* the journal stores lines, not line ends */
		len--;
	add(e, "MESSAGE", msg, len);
	add(e, "PRIORITY", "7", 1);		/* LOG_DEBUG, as the kernel's pr_debug() */
	if (d) {
		int n;

		if (d->filename)
			add(e, "CODE_FILE", d->filename, strlen(d->filename));
		n = snprintf(e->line, sizeof(e->line), "%u", (unsigned int)d->lineno);
		add(e, "CODE_LINE", e->line, (size_t)n);
		if (d->function)
			add(e, "CODE_FUNC", d->function, strlen(d->function));
		if (d->modname)
			add(e, "KK_MODULE", d->modname, strlen(d->modname));
	}
	snprintf(e->tid, sizeof(e->tid), "%d", (int)gettid());
	add(e, "TID", e->tid, strlen(e->tid));
	add(e, "SYSLOG_IDENTIFIER", program_invocation_short_name,
	    strlen(program_invocation_short_name));
}

/* The iovecs of the entry: 4 per field (head, value, '\n'; 3 used). */
static int to_iov(const struct entry *e, struct iovec *iov)
{
	static char nl[] = "\n";
	int n = 0;

	for (int i = 0; i < e->n; i++) {
		iov[n++] = (struct iovec){ (void *)e->f[i].head, e->f[i].hlen };
		iov[n++] = (struct iovec){ (void *)e->f[i].val, e->f[i].len };
		iov[n++] = (struct iovec){ nl, 1 };
	}
	return n;
}

static const struct sockaddr_un journal_addr = { AF_UNIX, JOURNAL_SOCKET };

/* The socket, opened at the first message; or -errno. */
static int journal_socket(void)
{
	struct journal_sock *cur = atomic_load_explicit(&journal_fd, memory_order_acquire), *s;
	int fd, r;

	if (cur && kk_fd_ours(&cur->fd))
		return cur->fd.fd;
	/* none yet, or the program closed or reused the number: a new one */
	s = malloc(sizeof(*s));
	if (!s)
		return -ENOMEM;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	r = fd < 0 ? -errno : kk_fd_adopt(&s->fd, fd);
	if (r < 0) {
		free(s);
		return r;
	}
	s->retired = cur;
	if (atomic_compare_exchange_strong(&journal_fd, &cur, s))
		return s->fd.fd;
	/* another thread published one first: use it */
	kk_fd_release(&s->fd);
	free(s);
	return cur->fd.fd;
}

/* Too big for a datagram: the entry in a sealed memfd, passed by descriptor. */
static int send_memfd(int sock, const struct iovec *iov, int n)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} c;
	struct msghdr mh = { 0 };
	int mfd, r = 0;

	mfd = memfd_create("kernelkit-journal", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return -errno;
	for (int i = 0; i < n && !r; i++) {
		const char *p = iov[i].iov_base;
		size_t left = iov[i].iov_len;

		while (left) {
			ssize_t w = write(mfd, p, left);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				r = w < 0 ? -errno : -EIO;
				break;
			}
			p += w;
			left -= (size_t)w;
		}
	}
	/* journald only takes a sealed memfd: the content cannot change under it */
	if (!r && fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE |
			F_SEAL_SEAL) < 0)
		r = -errno;
	if (!r) {
		memset(&c, 0, sizeof(c));
		mh.msg_name = (void *)&journal_addr;
		mh.msg_namelen = sizeof(journal_addr);
		mh.msg_control = c.buf;
		mh.msg_controllen = sizeof(c.buf);
		c.h.cmsg_level = SOL_SOCKET;
		c.h.cmsg_type = SCM_RIGHTS;
		c.h.cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(&c.h), &mfd, sizeof(int));
		while ((r = (int)sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
			;
		r = r < 0 ? -errno : 0;
	}
	close(mfd);			/* made here: certainly ours */
	return r;
}

static int journal_send(const struct entry *e)
{
	struct iovec iov[MAX_FIELDS * 3];
	struct msghdr mh = { 0 };
	int n = to_iov(e, iov), sock, r;

	sock = journal_socket();
	if (sock < 0)
		return sock;
	mh.msg_name = (void *)&journal_addr;
	mh.msg_namelen = sizeof(journal_addr);
	mh.msg_iov = iov;
	mh.msg_iovlen = (size_t)n;
	while ((r = (int)sendmsg(sock, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	r = r < 0 ? -errno : 0;
	if (r == -EMSGSIZE || r == -ENOBUFS)
		r = send_memfd(sock, iov, n);
	return r;
}

KK_EXPORT void kk_dyndbg_sink_journal(const struct _ddebug *desc, const char *msg, size_t len, void *arg)
{
	struct entry e;
	int r;

	(void)arg;
	fill(&e, desc, msg, len);
	r = journal_send(&e);
	if (!r)
		return;
	/* each message tries again: a restarted journald gets the next one */
	if (!__atomic_exchange_n(&journal_warned, 1, __ATOMIC_RELAXED))
		kk_warn("dynamic debug: the journal at " JOURNAL_SOCKET " refuses messages (%s): "
			"those go to stderr", strerror(-r));
	fwrite(msg, 1, len, stderr);
}

/* KK_DYNDBG_SINK=stderr|syslog|journal, read with the other KK_DYNDBG settings. */
void kk_dd_sink_env(void)
{
	static const char *const choices[] = { "stderr", "syslog", "journal", NULL };
	static int warned;

	switch (kk_env_choice("KK_DYNDBG_SINK", choices, &warned)) {
	case 1:
		kk_dyndbg_set_sink(kk_dyndbg_sink_syslog, NULL);
		break;
	case 2:
		kk_dyndbg_set_sink(kk_dyndbg_sink_journal, NULL);
		break;
	default:
		break;			/* stderr: the default */
	}
}

/* ---- dynamic_debug/sink: the sink by name ----------------------------------------------
 * Reads "stderr", "syslog", "journal", or "custom" (a program's callback).
 * Writing one of the first three switches to it; writing what was read is
 * always accepted and changes nothing ("custom" only while it is current).
 */
static const char *sink_name(void)
{
	kk_dyndbg_sink_fn fn = kk_dd_sink_current();

	if (!fn)
		return "stderr";
	if (fn == kk_dyndbg_sink_syslog)
		return "syslog";
	if (fn == kk_dyndbg_sink_journal)
		return "journal";
	return "custom";
}

static int sink_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%s\n", sink_name()) < 0 ? -ENOMEM : 0;
}

static int sink_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
#define IS(word) (len == sizeof(word) - 1 && !memcmp(buf, word, len))
	if (IS("stderr"))
		kk_dyndbg_set_sink(NULL, NULL);
	else if (IS("syslog"))
		kk_dyndbg_set_sink(kk_dyndbg_sink_syslog, NULL);
	else if (IS("journal"))
		kk_dyndbg_set_sink(kk_dyndbg_sink_journal, NULL);
	else if (IS("custom") && !strcmp(sink_name(), "custom"))
		;			/* writing back what was read */
	else {
		kk_buf_printf(out, "expected stderr, syslog or journal\n");
		return -EINVAL;
	}
#undef IS
	return 0;
}

static const struct kk_control_file_ops sink_fops = {
	.show = sink_show,
	.write = sink_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(sink_file, "dynamic_debug/sink", &sink_fops);

/* From the dynamic-debug constructor: a static node, nothing allocated at load. */
void kk_dd_sink_file_add(void)
{
	kk_control_add_lib_file(&sink_file);
}
