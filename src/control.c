// SPDX-License-Identifier: MIT
/*
 * The control endpoint: debugfs for one process, served on the abstract Unix
 * socket "\0kernelkit/<pid>".
 *
 * One thread serves up to 16 clients at once with poll(), each with one
 * deadline for its whole request (2 s from accept() to the reply sent) and a
 * size limit, so a slow, dripping, huge or malformed client costs one slot for
 * at most 2 s, never delays another client, and never touches the rest of the
 * process.  Whom it serves is decided as ptrace would, against the process's
 * ids of that moment, at accept() and again when the request is complete
 * (see peer_check()): anyone else is refused in one line, without a slot.
 * Handlers run under a read lock of the file registry; the socket I/O does
 * not, so fork() and file removal wait only for a handler.
 *
 * A guest in the process: the endpoint starts only when there is something to
 * control (see kk_control_autostart()), keeps one listening descriptor that it
 * never closes unless it provably still is ours, needs no file, directory or
 * exit-time clean-up, and stops with kk_threads_stop().
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
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

KK_EXPORT int kk_buf_write(struct kk_buf *b, const void *p, size_t n)
{
	int ret = buf_reserve(b, n);

	if (ret)
		return ret;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

KK_EXPORT int kk_buf_vprintf(struct kk_buf *b, const char *fmt, va_list ap)
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

KK_EXPORT int kk_buf_printf(struct kk_buf *b, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = kk_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return ret;
}

KK_EXPORT void kk_buf_reset(struct kk_buf *b)
{
	b->len = 0;
	b->error = 0;
	if (b->data)
		b->data[0] = '\0';
}

KK_EXPORT void kk_buf_free(struct kk_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

/* ---- the file registry ----------------------------------------------------- */

/* struct kk_cfile: see control.h.  Files made by kk_control_create_file()
 * carry their name after the node, in the same allocation. */
struct kk_cfile_dyn {
	struct kk_cfile f;
	char name[KK_CONTROL_NAME_MAX];
};

static pthread_rwlock_t files_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct kk_cfile *files;		/* sorted by name, for `list` */
/* Library files added at load, linked in by the first use of the registry:
 * adding one at load then costs two stores, and reads no name. */
static struct kk_cfile *lib_pending KK_LOAD_DATA;

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

/*
 * The library's own files.  Creating them says nothing about whether the
 * program has anything to control (panic, debug objects and shazptr register
 * theirs in every process), so they do not start the endpoint; any other file
 * is the program's, and does.
 */
static bool library_file(const char *name)
{
	static const char *const lib[] = {
		"static_keys", "panic", "dynamic_debug/", "debug_objects/", "shazptr/",
	};

	for (size_t i = 0; i < sizeof(lib) / sizeof(lib[0]); i++) {
		size_t n = strlen(lib[i]);

		if (lib[i][n - 1] == '/' ? !strncmp(name, lib[i], n) : !strcmp(name, lib[i]))
			return true;
	}
	return false;
}

static struct kk_cfile *find_file(const char *name)
{
	for (struct kk_cfile *f = files; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	return NULL;
}

/* Link @f in name order, under files_lock.  -EEXIST if the name is taken. */
static int insert_file_locked(struct kk_cfile *f)
{
	struct kk_cfile **pp;
	int cmp = 1;

	for (pp = &files; *pp && (cmp = strcmp((*pp)->name, f->name)) < 0; pp = &(*pp)->next)
		;
	if (*pp && !cmp)
		return -EEXIST;
	f->next = *pp;
	*pp = f;
	return 0;
}

/* Under files_lock (write): link in the library files added since.  They
 * came first, so a taken name is the program's mistake, not theirs. */
static void merge_lib_files_locked(void)
{
	struct kk_cfile *f = __atomic_exchange_n(&lib_pending, NULL, __ATOMIC_ACQUIRE), *next;

	for (; f; f = next) {
		next = f->next;
		insert_file_locked(f);
	}
}

/* Take files_lock for reading, with the library files linked in. */
static void files_rdlock(void)
{
	if (__atomic_load_n(&lib_pending, __ATOMIC_ACQUIRE)) {
		pthread_rwlock_wrlock(&files_lock);
		merge_lib_files_locked();
		pthread_rwlock_unlock(&files_lock);
	}
	pthread_rwlock_rdlock(&files_lock);
}

static void files_wrlock(void)
{
	pthread_rwlock_wrlock(&files_lock);
	merge_lib_files_locked();
}

static int insert_file(struct kk_cfile *f)
{
	int ret;

	files_wrlock();
	ret = insert_file_locked(f);
	pthread_rwlock_unlock(&files_lock);
	return ret;
}

KK_EXPORT int kk_control_create_file(const char *name, const struct kk_control_file_ops *ops, void *priv)
{
	struct kk_cfile_dyn *d;
	int ret;

	if (!name_ok(name) || !ops || (!ops->show && !ops->write))
		return -EINVAL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	strcpy(d->name, name);
	d->f.name = d->name;
	d->f.ops = ops;
	d->f.priv = priv;
	ret = insert_file(&d->f);
	if (ret) {
		free(d);
		return ret;
	}
	if (!library_file(name))
		kk_control_autostart();
	return 0;
}

/* A lock-free push; the names are looked at when the registry is first used. */
KK_LOAD_TEXT void kk_control_add_lib_file(struct kk_cfile *f)
{
	struct kk_cfile *head = __atomic_load_n(&lib_pending, __ATOMIC_RELAXED);

	do
		f->next = head;
	while (!__atomic_compare_exchange_n(&lib_pending, &head, f, true, __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED));
}

KK_EXPORT int kk_control_remove_file(const char *name)
{
	struct kk_cfile *f = NULL, **pp;

	if (!name)
		return -EINVAL;
	files_wrlock();
	for (pp = &files; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->name, name)) {
			f = *pp;
			*pp = f->next;
			break;
		}
	}
	pthread_rwlock_unlock(&files_lock);
	if (!f)
		return -ENOENT;
	if (!f->lib)
		free(f);	/* a struct kk_cfile_dyn: f is its first member */
	else
		f->next = NULL;	/* the facility's node: it may be added again */
	return 0;
}

/* Run one request against the registry.  @out gets the body to send back. */
static int dispatch(const char *verb, const char *name, const char *body, size_t len,
		    struct kk_buf *out)
{
	struct kk_cfile *f;
	int ret;

	files_rdlock();
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
		const char *nul = memchr(body, '\0', len);

		if (!f->ops->write) {
			kk_buf_printf(out, "%s is read-only\n", name);
			ret = -EACCES;
		} else if (len >= lim) {
			kk_buf_printf(out, "write of %zu bytes is too large (limit %zu)\n",
				      len, lim - 1);
			ret = -E2BIG;
		} else if (nul) {
			/* Files are text: a handler that reads C strings would
			 * silently stop at it (issue 37: one query of two ran). */
			kk_buf_printf(out, "NUL byte at offset %zu: control files take text; "
				      "nothing written\n", (size_t)(nul - body));
			ret = -EINVAL;
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

KK_EXPORT int kk_control_read(const char *name, char **text, size_t *len)
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

KK_EXPORT int kk_control_write(const char *name, const char *buf, size_t len, char **reply)
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

/* ---- the socket server -----------------------------------------------------
 *
 * State.  srv_lock serialises start, stop, fork and the services; lfd_lock
 * guards the listening socket, which the thread itself replaces when the
 * program has closed its number, and the table of clients.  The thread never
 * takes srv_lock (stop holds it while joining), and holds lfd_lock while it
 * works on its sockets, never across poll() or a handler.  Nothing on the
 * program's own paths takes either lock.
 */

enum { CTL_LAZY, CTL_NEVER, CTL_ALWAYS };

static pthread_mutex_t srv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lfd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kk_fd lfd = KK_FD_INIT;	/* the listening socket (lfd_lock) */
static struct kk_thread srv_thread;
static bool srv_running;		/* srv_thread exists and is not joined yet */
static int srv_serving;			/* atomic: the thread has not exited */
static int srv_stop;			/* atomic: the thread must exit */
static int srv_wanted;			/* atomic: should run (restarted by kk_threads_start) */
static int srv_off;			/* atomic: kk_control_stop() was called: no autostart */
static char srv_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1]; /* "@kernelkit/<pid>" */
static __thread bool on_srv_thread;

static int hooks_done KK_LOAD_DATA;	/* atomic: register_hooks() ran */
/*
 * An object registers its tables in two constructors (static keys at 101,
 * pr_debug sites at 102): between kk_object_register_begin() and _end() a
 * start waits (reg_pending), so that the endpoint never answers with half
 * an object registered (a query would match none of its pr_debug sites).
 */
static int reg_held KK_LOAD_DATA;	/* atomic: an object's registration is under way */
static int reg_pending KK_LOAD_DATA;	/* atomic: a start waits for its end */
static void register_hooks(void);

static uint64_t now_ms(void)
{
	return kk_now_ns() / 1000000;
}

/* KK_CONTROL: unset = start when there is something to control; 1 = at load; 0 = never by itself. */
KK_LOAD_TEXT static int control_mode(void)
{
	static int mode = -1;
	int m = __atomic_load_n(&mode, __ATOMIC_RELAXED);
	const char *v;
	bool b;

	if (m >= 0)
		return m;
	v = kk_env_any() ? kk_getenv("KK_CONTROL") : NULL;	/* no .rodata at load */
	if (!v) {
		m = CTL_LAZY;
	} else if (kk_parse_bool(v, &b)) {
		(void)kk_env_bool("KK_CONTROL", false);	/* its one-line warning */
		m = CTL_LAZY;
	} else {
		m = b ? CTL_ALWAYS : CTL_NEVER;
	}
	__atomic_store_n(&mode, m, __ATOMIC_RELAXED);
	return m;
}

/*
 * The clients being served, each with one deadline for its whole request:
 * KK_CONTROL_TIMEOUT_MS from accept() to the last byte of the reply (and the
 * drain after it).  One thread polls the listening socket and all of them, so
 * a client that stalls or drips holds one slot until its deadline and never
 * delays another.  The thread holds lfd_lock while it touches this table
 * (never across poll() or a handler), so fork() sees it whole.
 */
#define CTL_CLIENTS 16

struct control_client {
	bool used;
	bool answered;			/* out holds "<status>\n" BODY */
	bool shut;			/* all of out sent, SHUT_WR done: draining */
	struct kk_fd fd;
	struct ucred peer;		/* SO_PEERCRED: the client's ids at connect() */
	uint64_t deadline;		/* now_ms() value */
	struct kk_buf req;		/* the request received so far */
	struct kk_buf out;
	size_t sent, drained;
};

static struct control_client clients[CTL_CLIENTS];	/* lfd_lock */
static __thread const struct control_client *cur_client;	/* whose handler runs here */

/*
 * Whom the endpoint serves: who may ptrace the process (the kernel's
 * __ptrace_may_access()), decided against the process's ids of the moment,
 * at accept() and again when the request is complete, just before it runs
 * (kernelkit issue 37: a connection accepted while a root daemon had
 * seteuid() to a user for a moment must not run once it is root again, and
 * what a process recorded while privileged must not be read by the user it
 * dropped to).  The peer's ids are SO_PEERCRED's, taken at its connect() and
 * mapped by the kernel into our user namespace.  Served:
 *  - uid 0, the root of our namespace (host root where the namespace maps
 *    host root, e.g. `unshare -U -r` run by root; a namespace's root controls
 *    only the processes of that namespace, where its uid 0 is mapped);
 *  - a peer whose uid is the process's real, effective and saved uid and
 *    whose gid is its real, effective and saved gid, while the process is
 *    dumpable (PR_GET_DUMPABLE is 1).  The kernel clears that flag when the
 *    process changes its effective or filesystem ids or runs a set-id or
 *    file-capability program (fs.suid_dumpable 0, the default), and a program
 *    may clear it or set it again itself with prctl(PR_SET_DUMPABLE).
 * A uid our namespace does not map shows as the overflow uid: that is anyone
 * at all, so it is never trusted, not even by a process that itself runs as
 * that uid (a container's nobody).  Except in a namespace that maps every uid
 * (the initial one): nobody can show as the overflow uid there by being
 * unmapped, so it is the real nobody.  Supplementary groups grant nothing.
 * The ids are the endpoint thread's: glibc and musl change every thread's
 * (a raw setuid system call changes one thread, but the dumpable flag, which
 * it clears, is the whole process's).
 */
struct peer_rules {
	uid_t overflow;			/* /proc/sys/kernel/overflowuid */
	bool all_mapped;		/* /proc/self/uid_map maps every uid */
};

static struct peer_rules rules = { .overflow = 65534 };	/* written before the thread starts */

/*
 * Read at each start but a fork child's (the sysctl can change; the kernel's
 * default if unreadable), by the thread that starts the endpoint, before the
 * endpoint's thread exists: a descriptor opened takes the lowest free number,
 * and on our own thread that would race the program (a fork child that closed
 * 0, 1 and 2 and opens /dev/null got 1, 2 and 3; a dup2() onto the number
 * would be closed by us).  test/progs/control_fork_fds.c.
 */
static void rules_load(void)
{
	char b[32], *end;
	unsigned long v;

	unsigned long lo, to, n;
	char map[128] = "", *nl;

	rules.overflow = 65534;
	/* one line, "0 0 4294967295" */
	rules.all_mapped = kk_read_proc("/proc/self/uid_map", map, sizeof(map)) > 0 &&
			   (nl = strchr(map, '\n')) && !nl[1] &&
			   sscanf(map, "%lu %lu %lu", &lo, &to, &n) == 3 && !lo && !to &&
			   n == 4294967295UL;
	if (kk_read_proc("/proc/sys/kernel/overflowuid", b, sizeof(b)) <= 0)
		return;
	v = strtoul(b, &end, 10);
	if (end != b && (*end == '\n' || !*end))
		rules.overflow = (uid_t)v;
}

/* The process's ids, dumpable flag and capabilities, as peer_check() compares them. */
struct proc_ids {
	uid_t uid[3];			/* real, effective, saved */
	gid_t gid[3];
	int dumpable;			/* PR_GET_DUMPABLE: 1 is SUID_DUMP_USER */
	uint64_t permitted;		/* permitted capabilities */
};

enum peer_verdict { PEER_OK, PEER_STRANGER, PEER_IDS_MIXED, PEER_NOT_DUMPABLE, PEER_CAPABLE };

/*
 * The permitted set, or every bit where capget() fails.  The kernel lets a
 * tracer attach only if the tracee's permitted set is within its own; a
 * peer's set is not in SO_PEERCRED, so a process that holds any capability
 * is served to root only (stricter than the kernel for a peer holding the
 * same ones).
 */
static uint64_t permitted_caps(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];

	if (syscall(SYS_capget, &h, d))
		return ~0ull;
	return (uint64_t)d[1].permitted << 32 | d[0].permitted;
}

static enum peer_verdict peer_verdict(const struct ucred *cr, struct proc_ids *p)
{
	uid_t *u = p->uid;
	gid_t *g = p->gid;

	if (getresuid(&u[0], &u[1], &u[2]) || getresgid(&g[0], &g[1], &g[2]))
		return PEER_STRANGER;	/* (only EFAULT: cannot happen) */
	p->dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
	if (cr->uid == rules.overflow && !rules.all_mapped)
		return PEER_STRANGER;	/* unmapped in our namespace: anyone */
	if (cr->uid == 0)
		return PEER_OK;
	if (cr->uid != u[0] && cr->uid != u[1] && cr->uid != u[2])
		return PEER_STRANGER;
	for (int i = 0; i < 3; i++)
		if (u[i] != cr->uid || g[i] != cr->gid)
			return PEER_IDS_MIXED;
	if (p->dumpable != 1)
		return PEER_NOT_DUMPABLE;
	p->permitted = permitted_caps();
	return p->permitted ? PEER_CAPABLE : PEER_OK;
}

/* Whether @cr may use the endpoint now: 0, or -EACCES with the one line that
 * says why in @why. */
static int peer_check(const struct ucred *cr, struct kk_buf *why)
{
	struct proc_ids p = { { 0 }, { 0 }, 0, 0 };

	switch (peer_verdict(cr, &p)) {
	case PEER_OK:
		return 0;
	case PEER_STRANGER:
		kk_buf_printf(why, "peer is neither uid %u nor root\n", (unsigned)p.uid[1]);
		break;
	case PEER_IDS_MIXED:
		kk_buf_printf(why, "peer is not root, and this process's ids (uids %u %u %u, "
			      "gids %u %u %u) are not all the peer's (uid %u, gid %u)\n",
			      (unsigned)p.uid[0], (unsigned)p.uid[1], (unsigned)p.uid[2],
			      (unsigned)p.gid[0], (unsigned)p.gid[1], (unsigned)p.gid[2],
			      (unsigned)cr->uid, (unsigned)cr->gid);
		break;
	case PEER_NOT_DUMPABLE:
		kk_buf_printf(why, "peer is not root, and this process is not dumpable (it changed "
			      "its ids, or says so with prctl(PR_SET_DUMPABLE))\n");
		break;
	case PEER_CAPABLE:
		kk_buf_printf(why, "peer is not root, and this process holds capabilities "
			      "(permitted 0x%llx): only root may reach it\n",
			      (unsigned long long)p.permitted);
		break;
	}
	return -EACCES;
}

/* The client's credentials, taken at its connect(): false if unreadable. */
static bool peer_creds(int fd, struct ucred *cr)
{
	socklen_t sl = sizeof(*cr);

	return !getsockopt(fd, SOL_SOCKET, SO_PEERCRED, cr, &sl) && sl == sizeof(*cr);
}

/*
 * A stranger is refused at accept(), before it holds a slot: one line if the
 * fresh socket takes it at once (it always has room for it), then close.  So
 * any number of strangers' connections costs the owner and root nothing but
 * an accept(), a send() and a recv() each: they never wait behind a stranger's
 * deadline.  The one recv() takes a request already queued: closing a Unix
 * socket with unread data resets it, and the client could lose the line.
 */
static void refuse_stranger(int fd, struct kk_buf *why)
{
	char msg[4096];
	int n = snprintf(msg, sizeof(msg), "%d\n%s", -EACCES,
			 why->data ? why->data : "peer credentials unreadable\n");

	if (n >= (int)sizeof(msg))
		n = (int)sizeof(msg) - 1;
	send(fd, msg, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	(void)!recv(fd, msg, sizeof(msg), MSG_DONTWAIT);
	close(fd);		/* accept4 just made it: ours */
	kk_buf_free(why);
}

/* Forget a client: close its socket if still ours (lfd_lock held). */
static void client_close(struct control_client *c)
{
	kk_fd_release(&c->fd);
	kk_buf_free(&c->req);
	kk_buf_free(&c->out);
	memset(c, 0, sizeof(*c));
	c->fd.fd = -1;
}

/* The answer is ready; it is sent as the socket takes it. */
static void client_answer(struct control_client *c, int status, struct kk_buf *body)
{
	kk_buf_printf(&c->out, "%d\n", status);
	if (body->len)
		kk_buf_write(&c->out, body->data, body->len);
	kk_buf_free(body);
	kk_buf_free(&c->req);
	c->answered = true;
}

/*
 * The whole request is in (the client shut its side): run it.  lfd_lock is
 * dropped around the handler (a handler may stop the endpoint); fork() waits
 * for the handler through files_lock, and the table is not touched meanwhile.
 */
static void client_request(struct control_client *c)
{
	struct kk_buf body = { 0 }, again = { 0 };
	char *req = c->req.data, *nl, *sp, *name = "";
	size_t len = c->req.len;
	int status;

	/* Trusted at accept(), but the process's ids may have changed since. */
	status = peer_check(&c->peer, &body);
	if (status) {
		client_answer(c, status, &body);
		return;
	}
	nl = req ? memchr(req, '\n', len) : NULL;
	if (!nl) {
		kk_buf_printf(&body, "malformed request\n");
		client_answer(c, -EINVAL, &body);
		return;
	}
	*nl = '\0';
	sp = strchr(req, ' ');
	if (sp) {
		*sp = '\0';
		name = sp + 1;
	}
	if (strcmp(req, "list") && !name_ok(name)) {
		kk_buf_printf(&body, "bad file name\n");
		client_answer(c, -EINVAL, &body);
		return;
	}
	pthread_mutex_unlock(&lfd_lock);
	cur_client = c;
	status = dispatch(req, name, nl + 1, len - (size_t)(nl + 1 - req), &body);
	cur_client = NULL;
	pthread_mutex_lock(&lfd_lock);
	/* A read may have waited (trace_pipe: up to 250 ms for a record): what
	 * it returns must still be the peer's to see.  A write is not judged
	 * again: it was trusted when it changed something. */
	if (!strcmp(req, "read") && peer_check(&c->peer, &again)) {
		kk_buf_free(&body);
		client_answer(c, -EACCES, &again);
		return;
	}
	client_answer(c, status, &body);
}

/*
 * The client closed its socket, not only its sending side: it gave up
 * waiting (kkctl's deadline passed while this process was stopped by
 * SIGSTOP or a debugger) and told its user that the request got no reply.
 * A Unix stream socket shows POLLHUP once its peer is closed, and only
 * POLLRDHUP after a shutdown(SHUT_WR).
 */
static bool client_gave_up(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
}

/*
 * A Unix stream socket takes data while what it holds in flight is below
 * its send buffer (the kernel doubles what SO_SNDBUF asks, for its own
 * overhead): half of what getsockopt() reads back is room for data, less
 * the status line and a page of slack.  The socket is ours.  Not kept
 * in the client's slot: a connection carries one request (it runs when
 * the client shuts its side), so these two system calls are already once
 * a connection.
 */
size_t kk_control_reply_room(size_t want)
{
	const struct control_client *c = cur_client;
	int ask = want < (size_t)INT_MAX / 2 ? (int)want : INT_MAX / 2, got = 0;
	socklen_t len = sizeof(got);
	size_t room;

	if (!c || c->fd.fd < 0)
		return want;
	(void)setsockopt(c->fd.fd, SOL_SOCKET, SO_SNDBUF, &ask, sizeof(ask));
	if (getsockopt(c->fd.fd, SOL_SOCKET, SO_SNDBUF, &got, &len) || got <= 0)
		return 64u << 10;	/* (the smallest a Linux default has been) */
	room = (size_t)got / 2;
	room = room > 8192 ? room - 4096 : room / 2;
	return room < want ? room : want;
}

/*
 * The holder of what the request does (dynamic_debug/session): a pidfd of
 * the peer whose request runs on this thread, or -errno: -ESRCH when there
 * is none (kk_control_write() from the program) or its pid is not visible
 * here (SO_PEERCRED gives 0 for a peer in a pid namespace we do not see, as
 * kkctl on the host is to a container).  The pid is the peer's at
 * connect(); while the peer is still connected it is still the peer's (a
 * pid is not reused while its process lives), so the pidfd is checked after
 * it is opened.  pidfd_open() (Linux 5.3) sets close-on-exec.
 */
int kk_control_peer_pidfd(pid_t *pid)
{
	const struct control_client *c = cur_client;
	int fd;

	*pid = 0;
	if (!c || c->peer.pid <= 0)
		return -ESRCH;
	*pid = c->peer.pid;
#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, c->peer.pid, 0);
#else
	fd = -1;
	errno = ENOSYS;
#endif
	if (fd < 0)
		return -errno;
	if (client_gave_up(c->fd.fd)) {
		close(fd);	/* just made: ours */
		return -ESRCH;
	}
	return fd;
}

/* Receive what is there.  false: the client is gone (or failed). */
static bool client_recv(struct control_client *c)
{
	const size_t cap = KK_CONTROL_MAX_REQUEST + KK_CONTROL_NAME_MAX + 16;
	char tmp[4096];

	for (;;) {
		ssize_t r = recv(c->fd.fd, tmp, sizeof(tmp), MSG_DONTWAIT);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		if (r == 0) {
			if (c->shut)
				return false;	/* drained: done */
			/* Nobody waits for it: running it now would be a change
			 * its client reported as not made (issue 22 audit). */
			if (!c->answered && client_gave_up(c->fd.fd))
				return false;
			if (!c->answered)
				client_request(c);
			return true;
		}
		if (c->answered) {	/* an early answer, or draining: discard */
			c->drained += (size_t)r;
			if (c->drained > 4 * KK_CONTROL_MAX_REQUEST)
				return false;
			continue;
		}
		if (c->req.len + (size_t)r >= cap) {
			struct kk_buf body = { 0 };

			kk_buf_printf(&body, "request larger than %d bytes\n", KK_CONTROL_MAX_REQUEST);
			client_answer(c, -E2BIG, &body);
			continue;
		}
		if (kk_buf_write(&c->req, tmp, (size_t)r))
			return false;
	}
}

/* Send what the socket takes; shut our side when all is sent. */
static bool client_send(struct control_client *c)
{
	while (c->sent < c->out.len) {
		ssize_t w = send(c->fd.fd, c->out.data + c->sent, c->out.len - c->sent,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK;
		c->sent += (size_t)w;
	}
	if (!c->shut) {
		/* Then read until the client closes: closing a Unix socket with
		 * unread data resets the connection, and an early answer
		 * (E2BIG) could be lost. */
		shutdown(c->fd.fd, SHUT_WR);
		c->shut = true;
	}
	return true;
}

/* Serve a client poll() reported (lfd_lock held). */
static void client_io(struct control_client *c)
{
	bool ok;

	/* The program may have closed the number and reused it meanwhile. */
	if (!kk_fd_ours(&c->fd)) {
		c->fd.fd = -1;
		client_close(c);
		return;
	}
	ok = client_recv(c);
	if (ok && c->answered && (c->out.error || !client_send(c)))
		ok = false;
	if (ok && c->shut)
		ok = client_recv(c);	/* EOF may already be queued */
	if (!ok)
		client_close(c);
}

/* A new, trusted connection (lfd_lock held): a free slot gets it, with its deadline. */
static void client_new(int fd, const struct ucred *peer)
{
	struct control_client *c = NULL;

	for (int i = 0; i < CTL_CLIENTS && !c; i++)
		if (!clients[i].used)
			c = &clients[i];
	if (!c) {			/* cannot happen: not polled when full */
		close(fd);
		return;
	}
	if (kk_fd_adopt(&c->fd, fd) < 0)
		return;
	c->used = true;
	c->peer = *peer;
	c->deadline = now_ms() + KK_CONTROL_TIMEOUT_MS;
}

static void clients_close_all(void)
{
	for (int i = 0; i < CTL_CLIENTS; i++)
		if (clients[i].used)
			client_close(&clients[i]);
}

/*
 * A new listening socket (lfd_lock held, or no thread yet) on our name,
 * "\0kernelkit/<pid>".  Abstract names have no owner: any process in the
 * network namespace may squat it, and a process of another pid namespace may
 * hold the same number.  Then we take "\0kernelkit/<pid>/<n>", n = 1..15; and
 * as anyone can squat all of those for future pids, then a name with a random
 * suffix, "\0kernelkit/<pid>.<16 hex digits>", which nobody can take first.
 * kkctl finds them in /proc/net/unix and verifies them by peer credentials
 * like any other; and we say once, in one line, every name we could not take.
 */
static struct sockaddr_un srv_addr;	/* the name bound (lfd_lock) */
static socklen_t srv_addrlen;
/* A copy for kk_control_timer_kick(), which runs in a handler: under
 * files_lock, which comes after lfd_lock (fork takes both). */
static pthread_mutex_t kick_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sockaddr_un kick_addr;	/* kick_lock */
static socklen_t kick_addrlen;
/* The ids the socket was made with: what kkctl sees as its owner (SO_PEERCRED
 * of a listening socket is its maker's at listen()).  See ids_changed(). */
static uid_t srv_euid;
static gid_t srv_egid;

#define CTL_RANDOM_TRIES 4	/* a random name taken: a collision, or a guess */

/* 64 bits no squatter sees before we bind: getrandom() without blocking, or
 * early in boot (no entropy yet) the clock mixed with a stack address. */
static uint64_t random_suffix(void)
{
	uint64_t r;

	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) == (ssize_t)sizeof(r))
		return r;
	return (kk_now_ns() ^ (uintptr_t)&r) * 0x9e3779b97f4a7c15ull;
}

/* Bind @fd to name number @n: below KK_CONTROL_ALT_NAMES the names anyone can
 * predict ("<pid>", "<pid>/<n>"), from there a random one.  0 or -errno. */
static int bind_name(int fd, int n, struct sockaddr_un *sa, socklen_t *sl)
{
	char name[64];

	if (n < KK_CONTROL_ALT_NAMES) {
		*sl = kk_control_addr_n(sa, getpid(), n);
	} else {
		snprintf(name, sizeof(name), KK_CONTROL_ABSTRACT_PREFIX "%d%c%016llx",
			 (int)getpid(), KK_CONTROL_RANDOM_SEP, (unsigned long long)random_suffix());
		*sl = kk_control_addr_str(sa, name);
	}
	return bind(fd, (struct sockaddr *)sa, *sl) ? -errno : 0;
}

/* Once, one line: the @n predictable names refused, and what we serve
 * (@serving, or NULL: nothing). */
static void say_refused(int n, const char *serving)
{
	char list[400];
	size_t len = 0;

	for (int i = 0; i < n && len < sizeof(list); i++) {
		struct sockaddr_un sa;

		kk_control_addr_n(&sa, getpid(), i);
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s@%s",
					!i ? "" : i == n - 1 ? " and " : ", ", sa.sun_path + 1);
	}
	kk_warn_once(warned_taken, "control endpoint: %s %s (refused); %s%s%s", list,
		     n == 1 ? "is taken by another socket" : "are taken by other sockets",
		     serving ? "serving @" : "this process serves none",
		     serving ? serving : "", serving ? " instead" : "");
}

static int listen_new(void)
{
	struct sockaddr_un sa;
	socklen_t sl = 0;
	int fd, ret = 0, n;
	/* The ids before the socket: if they change while we make it (a fork
	 * child's setuid() racing our start), the socket may hold the old ones,
	 * and ids_changed() must then see a change, not the new ids. */
	uid_t euid = geteuid();
	gid_t egid = getegid();

	/* Non-blocking: we accept only after poll() says a connection is
	 * there, and one that went away in between must not block us. */
	fd = kk_fd_adopt(&lfd, socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
	if (fd < 0)
		return fd == -EBADF ? -errno : fd;
	for (n = 0; n < KK_CONTROL_ALT_NAMES + CTL_RANDOM_TRIES; n++) {
		ret = bind_name(fd, n, &sa, &sl);
		if (ret != -EADDRINUSE)
			break;
	}
	if (!ret && listen(fd, 16))
		ret = -errno;
	if (ret) {
		kk_fd_release(&lfd);
		if (ret == -EADDRINUSE)
			say_refused(KK_CONTROL_ALT_NAMES, NULL);
		return ret;
	}
	if (n)
		say_refused(n < KK_CONTROL_ALT_NAMES ? n : KK_CONTROL_ALT_NAMES, sa.sun_path + 1);
	srv_addr = sa;
	srv_addrlen = sl;
	pthread_mutex_lock(&kick_lock);
	kick_addr = sa;
	kick_addrlen = sl;
	pthread_mutex_unlock(&kick_lock);
	srv_euid = euid;
	srv_egid = egid;
	snprintf(srv_name, sizeof(srv_name), "@%s", sa.sun_path + 1);
	return 0;
}

/* The connection came in on a socket bound to our name (not one of the program's). */
static bool on_our_name(int fd)
{
	struct sockaddr_un got;
	socklen_t gl = sizeof(got);

	return getsockname(fd, (struct sockaddr *)&got, &gl) == 0 && gl == srv_addrlen &&
	       !memcmp(&got, &srv_addr, gl);
}

/*
 * The process changed its ids since the socket was made (a worker's setuid()
 * and setgid(), seteuid(), ...).  glibc and musl change every thread's ids,
 * ours too, by a signal that no mask blocks: it interrupts our poll(), and
 * we make a new socket, so that kkctl sees the process's new owner.  Root and
 * that owner reach it; the old owner no longer does.  (A program that calls
 * the setuid system call itself changes one thread only: ours keeps the old
 * ids, and so does our socket.)
 */
static bool ids_changed(void)
{
	return geteuid() != srv_euid || getegid() != srv_egid;
}

/*
 * Our listening socket, made again when the program took its number or the
 * process changed its ids.  0, or -errno: the thread serves no more.
 */
static int renew_socket(void)
{
	int err;

	if (kk_fd_ours(&lfd) && ids_changed())
		kk_fd_release(&lfd);	/* frees our name for the new socket */
	if (kk_fd_ours(&lfd))
		return 0;
	lfd.fd = -1;		/* the program's number now: forget, never close */
	err = listen_new();
	if (err && err != -EADDRINUSE)
		kk_warn_once(warned_renew, "control endpoint: cannot make a new "
			     "socket (%s); serving none", strerror(-err));
	return err;
}

/* What one poll() waits on: the clients, then maybe the listening socket. */
struct pollset {
	struct pollfd pfd[CTL_CLIENTS + 2];
	struct control_client *who[CTL_CLIENTS + 2];	/* NULL: the listening socket, the timer's fd */
	int n;
	int timeout;		/* ms, -1: none */
	int watch;		/* pfd[watch] is the timer's descriptor; -1: none */
	bool listening;		/* pfd[n - 1] is the listening socket */
};

static void pollset_add(struct pollset *ps, int fd, short events, struct control_client *c)
{
	ps->pfd[ps->n].fd = fd;
	ps->pfd[ps->n].events = events;
	ps->pfd[ps->n].revents = 0;
	ps->who[ps->n++] = c;
}

static void pollset_wake_by(struct pollset *ps, uint64_t now, uint64_t when)
{
	int left = (int)(when - now);

	if (ps->timeout < 0 || left < ps->timeout)
		ps->timeout = left;
}

/*
 * A facility's deadline and descriptor (kk_control_set_timer(): the
 * session's lease, and the pidfd of its holder).  Read each turn; while the
 * deadline is 0 the poll() has no timeout of its own, and while the
 * descriptor is -1 it is not polled.
 */
static const uint64_t *timer_due;	/* atomic pointer, set once */
static const int *timer_watch;		/* atomic pointer, set once */
static void (*timer_fire)(void);	/* atomic */

/* The deadline, 0 when none. */
static uint64_t timer_when(void)
{
	const uint64_t *due = __atomic_load_n(&timer_due, __ATOMIC_ACQUIRE);

	return due ? __atomic_load_n(due, __ATOMIC_ACQUIRE) : 0;
}

/* The watched descriptor, -1 when none. */
static int timer_fd(void)
{
	const int *w = __atomic_load_n(&timer_watch, __ATOMIC_ACQUIRE);

	return w ? __atomic_load_n(w, __ATOMIC_ACQUIRE) : -1;
}

void kk_control_set_timer(const uint64_t *due, const int *watch, void (*fire)(void))
{
	__atomic_store_n(&timer_fire, fire, __ATOMIC_RELAXED);
	__atomic_store_n(&timer_watch, watch, __ATOMIC_RELEASE);
	__atomic_store_n(&timer_due, due, __ATOMIC_RELEASE);
}

/* A request is on its way in: a client accepted whose request is not whole
 * yet (lfd_lock held). */
static bool requests_pending(void)
{
	for (int i = 0; i < CTL_CLIENTS; i++)
		if (clients[i].used && !clients[i].answered)
			return true;
	return false;
}

/*
 * When the deadline fires: once it has passed and no request is on its way
 * in, for a renewal that waited in the backlog while we did not run (the
 * process stopped, the cores busy) must count; but not later than
 * KK_CONTROL_TIMEOUT_MS after it, whatever comes (lfd_lock held).
 */
static uint64_t timer_fires_at(uint64_t now)
{
	uint64_t when = timer_when();

	if (when && when <= now && requests_pending())
		return when + KK_CONTROL_TIMEOUT_MS > now ? when + KK_CONTROL_TIMEOUT_MS : now;
	return when;
}

/* After this turn's I/O (lfd_lock held; a connection accepted this turn is
 * a request on its way in): fire the deadline, or the watched descriptor
 * that poll() reported, without our lock. */
static void timer_run(const struct pollset *ps)
{
	void (*fire)(void) = __atomic_load_n(&timer_fire, __ATOMIC_RELAXED);
	uint64_t now = now_ms(), when = timer_fires_at(now);

	if (!fire || !((when && now >= when) || (ps->watch >= 0 && ps->pfd[ps->watch].revents)))
		return;
	pthread_mutex_unlock(&lfd_lock);
	fire();
	pthread_mutex_lock(&lfd_lock);
}

/*
 * Fill @ps for this turn: every open client (one whose whole request's time
 * is up is closed instead), and the listening socket while a client slot is
 * free and accepting is not paused (see accept_failed()); the timeout is the
 * nearest deadline (a client's, the pause's, the timer's), or none.
 */
static void pollset_fill(struct pollset *ps, int lfd_num, uint64_t pause_until)
{
	uint64_t now = now_ms(), when;
	int used = 0;

	ps->n = 0;
	ps->timeout = -1;
	ps->listening = false;
	for (int i = 0; i < CTL_CLIENTS; i++) {
		struct control_client *c = &clients[i];

		if (!c->used)
			continue;
		if (now >= c->deadline) {
			client_close(c);
			continue;
		}
		used++;
		pollset_wake_by(ps, now, c->deadline);
		pollset_add(ps, c->fd.fd, POLLIN | (c->answered && !c->shut ? POLLOUT : 0), c);
	}
	if ((when = timer_fires_at(now)))	/* 0 with no session: no timeout of its own */
		pollset_wake_by(ps, now, when > now ? when : now);
	ps->watch = -1;
	if (timer_fd() >= 0) {	/* (before the listening socket, which is last) */
		ps->watch = ps->n;
		pollset_add(ps, timer_fd(), POLLIN, NULL);
	}
	if (used < CTL_CLIENTS && now >= pause_until) {
		pollset_add(ps, lfd_num, POLLIN, NULL);
		ps->listening = true;
	} else if (now < pause_until) {
		pollset_wake_by(ps, now, pause_until);
	}
}

/* accept4() failed with @err: true to go on, false when the thread must stop. */
static bool accept_failed(int err, uint64_t *pause_until)
{
	if (err == EINTR || err == ECONNABORTED || err == EAGAIN)
		return true;
	if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
		/* Out of descriptors or memory: the connection stays queued; try again later. */
		kk_warn_once(warned_nofile, "control endpoint: cannot accept (%s); "
			     "retrying every 100 ms", strerror(err));
		*pause_until = now_ms() + 100;
		return true;
	}
	/* Stopped, refused after a panic (EINVAL on our own socket),
	 * or the number is not ours any more (the loop rechecks). */
	return !(err == EINVAL && !__atomic_load_n(&srv_stop, __ATOMIC_ACQUIRE) &&
		 kk_fd_ours(&lfd));
}

/* Take the connection poll() saw on @lfd_num: true to go on, false to stop serving. */
static bool accept_one(int lfd_num, uint64_t *pause_until)
{
	int fd = accept4(lfd_num, NULL, NULL, SOCK_CLOEXEC);
	struct kk_buf why = { 0 };
	struct ucred cr;

	if (fd < 0)
		return accept_failed(errno, pause_until);
	if (!on_our_name(fd) || __atomic_load_n(&srv_stop, __ATOMIC_ACQUIRE)) {
		close(fd);	/* accept4 just made it: ours */
		return true;
	}
	if (!peer_creds(fd, &cr) || peer_check(&cr, &why)) {
		refuse_stranger(fd, &why);
		return true;
	}
	client_new(fd, &cr);
	return true;
}

/*
 * The thread.  It waits in poll(), never in accept(): a blocked accept4()
 * holds the lowest free descriptor number reserved in the kernel, so a
 * program that closed fd 2 and puts its log there with dup2() would get
 * EBUSY.  poll() reserves nothing, and accept4() runs only on a connection
 * that is there (the socket is non-blocking), for the few microseconds the
 * call takes.  The program may close any of our numbers at any time
 * (closefrom, close_range, dup2):
 *  - while we wait in poll(): poll holds a reference, so the socket lives
 *    until an event; when poll returns the socket goes, and a connection
 *    queued on it is reset (kkctl retries a request that got no reply byte:
 *    it was never served); renew_socket() at the top of the loop makes a new one;
 *  - otherwise: closing the number destroys the socket and frees the name;
 *    renew_socket() at the top of the loop makes a new one.
 * Left: the program closing the number and opening a listening socket of its
 * own there between our check and accept().  Then we may take one of its
 * connections; on_our_name() notices and we close that connection unread.
 * A client's number is checked the same way before each use.
 */
static void *serve(void *arg)
{
	uint64_t pause_until = 0;

	(void)arg;
	on_srv_thread = true;
	pthread_mutex_lock(&lfd_lock);
	while (!__atomic_load_n(&srv_stop, __ATOMIC_ACQUIRE) && !renew_socket()) {
		struct pollset ps;
		int num = lfd.fd, ready;

		pollset_fill(&ps, num, pause_until);
		pthread_mutex_unlock(&lfd_lock);
		ready = poll(ps.pfd, (nfds_t)ps.n, ps.timeout);
		pthread_mutex_lock(&lfd_lock);
		if (ready > 0)		/* (else a deadline, or EINTR) */
			for (int i = 0; i < ps.n; i++)
				if (ps.who[i] && ps.who[i]->used && ps.pfd[i].revents)
					client_io(ps.who[i]);
		if (ready > 0 && ps.listening && ps.pfd[ps.n - 1].revents &&
		    !accept_one(num, &pause_until))
			break;
		/* Last: a renewal served above counts before the lease is judged. */
		timer_run(&ps);
	}
	clients_close_all();
	pthread_mutex_unlock(&lfd_lock);
	__atomic_store_n(&srv_serving, 0, __ATOMIC_RELEASE);
	return NULL;
}

/*
 * Wake the thread out of accept() (lfd_lock held, srv_stop set).  shutdown()
 * on our own listening socket makes accept() fail and refuses new clients.
 * If the number is not ours any more, the thread may still wait on the old
 * socket through accept's reference: connect to it by name.  If neither
 * reaches it, it is not in accept() on our socket and sees srv_stop next.
 */
static void wake_locked(void)
{
	struct sockaddr_un sa;
	socklen_t sl;
	int s;

	if (kk_fd_ours(&lfd)) {
		shutdown(lfd.fd, SHUT_RD);
		return;
	}
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return;
	sa = srv_addr;
	sl = srv_addrlen;
	if (sl)
		connect(s, (struct sockaddr *)&sa, sl);
	close(s);
}

/* Join a thread that exited or was told to; release the socket if still ours. */
static void reap_locked(void)
{
	if (!srv_running)
		return;
	kk_thread_join(&srv_thread);
	srv_running = false;
	pthread_mutex_lock(&lfd_lock);
	kk_fd_release(&lfd);
	pthread_mutex_unlock(&lfd_lock);
	__atomic_store_n(&srv_stop, 0, __ATOMIC_RELAXED);
}

/*
 * @rules_known: a fork child's start keeps the rules its parent applies.  It
 * is in the namespace they were read in (while our thread ran, the parent
 * could neither unshare(CLONE_NEWUSER) nor setns() to a user namespace), and
 * it saves fork() two /proc reads.
 */
static int start_locked(bool rules_known)
{
	int ret;

	if (srv_running && __atomic_load_n(&srv_serving, __ATOMIC_ACQUIRE))
		return 0;
	if (on_srv_thread)
		return -EDEADLK;	/* from a handler: the thread is on its way out */
	reap_locked();			/* a thread that gave up by itself */
	if (kk_threads_stopped())
		return -EAGAIN;
	if (!rules_known)
		rules_load();
	pthread_mutex_lock(&lfd_lock);
	ret = listen_new();
	pthread_mutex_unlock(&lfd_lock);
	if (ret)
		return ret;
	__atomic_store_n(&srv_stop, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&srv_serving, 1, __ATOMIC_RELEASE);
	ret = kk_thread_create(&srv_thread, "kk-control", serve, NULL);
	if (ret) {
		__atomic_store_n(&srv_serving, 0, __ATOMIC_RELAXED);
		pthread_mutex_lock(&lfd_lock);
		kk_fd_release(&lfd);
		pthread_mutex_unlock(&lfd_lock);
		return ret;
	}
	srv_running = true;
	return 0;
}

static void stop_locked(void)
{
	if (!srv_running)
		return;
	pthread_mutex_lock(&lfd_lock);
	__atomic_store_n(&srv_stop, 1, __ATOMIC_RELEASE);
	wake_locked();
	pthread_mutex_unlock(&lfd_lock);
	if (on_srv_thread)
		return;			/* from a handler: it exits after this request */
	reap_locked();
}

KK_EXPORT int kk_control_start(void)
{
	int ret;

	register_hooks();
	pthread_mutex_lock(&srv_lock);
	ret = start_locked(false);
	if (!ret) {
		__atomic_store_n(&srv_wanted, 1, __ATOMIC_RELEASE);
		__atomic_store_n(&srv_off, 0, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&srv_lock);
	return ret;
}

KK_EXPORT void kk_control_stop(void)
{
	pthread_mutex_lock(&srv_lock);
	__atomic_store_n(&srv_wanted, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&srv_off, 1, __ATOMIC_RELEASE);
	stop_locked();
	pthread_mutex_unlock(&srv_lock);
}

void kk_control_autostart(void)
{
	if (__atomic_load_n(&srv_wanted, __ATOMIC_ACQUIRE) || on_srv_thread ||
	    __atomic_load_n(&srv_off, __ATOMIC_ACQUIRE) || control_mode() == CTL_NEVER)
		return;
	/* Pending first, held second: an _end() in between starts it (twice is once). */
	__atomic_store_n(&reg_pending, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&reg_held, __ATOMIC_SEQ_CST))
		return;
	__atomic_store_n(&reg_pending, 0, __ATOMIC_RELAXED);
	register_hooks();
	pthread_mutex_lock(&srv_lock);
	if (!__atomic_load_n(&srv_wanted, __ATOMIC_RELAXED)) {
		/* Wanted even if it cannot start now: kk_threads_start() retries. */
		__atomic_store_n(&srv_wanted, 1, __ATOMIC_RELEASE);
		start_locked(false);
	}
	pthread_mutex_unlock(&srv_lock);
}

/* From the headers' constructors (jump_label.h, dynamic_debug.h): no syscall. */
KK_EXPORT KK_LOAD_TEXT void kk_object_register_begin(void)
{
	__atomic_store_n(&reg_held, 1, __ATOMIC_SEQ_CST);
}

KK_EXPORT KK_LOAD_TEXT void kk_object_register_end(void)
{
	__atomic_store_n(&reg_held, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&reg_pending, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&reg_pending, 0, __ATOMIC_SEQ_CST))
		kk_control_autostart();
}

void kk_control_timer_kick(void)
{
	struct sockaddr_un sa;
	socklen_t sl;
	int s;

	if (on_srv_thread || !__atomic_load_n(&srv_serving, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&kick_lock);
	sa = kick_addr;
	sl = kick_addrlen;
	pthread_mutex_unlock(&kick_lock);
	if (!sl)
		return;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return;
	connect(s, (struct sockaddr *)&sa, sl);	/* poll() sees it; we close at once */
	close(s);
}

void kk_control_refuse(void)
{
	struct kk_fd f = lfd;		/* a racy copy is fine: kk_fd_ours() decides */

	if (kk_fd_ours(&f))
		shutdown(f.fd, SHUT_RD);
}

KK_EXPORT const char *kk_control_socket_path(void)
{
	return srv_running && __atomic_load_n(&srv_serving, __ATOMIC_ACQUIRE) ? srv_name : NULL;
}

/* kk_threads_stop() / kk_threads_start(). */
static void svc_stop(void)
{
	pthread_mutex_lock(&srv_lock);
	stop_locked();
	pthread_mutex_unlock(&srv_lock);
}

static void svc_start(void)
{
	pthread_mutex_lock(&srv_lock);
	if (__atomic_load_n(&srv_wanted, __ATOMIC_ACQUIRE))
		start_locked(false);
	pthread_mutex_unlock(&srv_lock);
}

static struct kk_service control_service = {
	.name = "control", .stop = svc_stop, .start = svc_start,
};

/* fork(): the child has no server thread; it gets an endpoint of its own if
 * the parent had one.  It touches no descriptor but its own copy of ours. */
static void atfork_prepare(void)
{
	pthread_mutex_lock(&srv_lock);
	pthread_mutex_lock(&lfd_lock);
	pthread_rwlock_wrlock(&files_lock);
	pthread_mutex_lock(&kick_lock);
}

static void atfork_parent(void)
{
	pthread_mutex_unlock(&kick_lock);
	pthread_rwlock_unlock(&files_lock);
	pthread_mutex_unlock(&lfd_lock);
	pthread_mutex_unlock(&srv_lock);
}

static void atfork_child(void)
{
	bool had = srv_running && __atomic_load_n(&srv_serving, __ATOMIC_ACQUIRE);

	/* Not an unlock: glibc tells a writer's unlock from a reader's by the
	 * kernel thread id, which is new in the child. */
	pthread_rwlock_init(&files_lock, NULL);
	pthread_mutex_unlock(&kick_lock);
	pthread_mutex_unlock(&lfd_lock);
	kk_fd_release_inherited(&lfd);	/* closed only if the number still is our socket */
	for (int i = 0; i < CTL_CLIENTS; i++)	/* requests the parent is serving */
		if (clients[i].used)
			client_close(&clients[i]);
	srv_running = false;
	on_srv_thread = false;
	__atomic_store_n(&srv_serving, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&srv_stop, 0, __ATOMIC_RELAXED);
	if (had)
		start_locked(true);
	pthread_mutex_unlock(&srv_lock);
}

static const struct kk_fork_ops control_fork_ops = {
	KK_INIT_CONTROL, atfork_prepare, atfork_parent, atfork_child
};

/*
 * Registration only: no socket, no thread, no syscall (so no pthread_once(),
 * whose wake-up is one).  The constructor calls it, or before that an object
 * that registers sites (a static link runs the program's constructors
 * first): either way at load, in the one thread the constructors run in.
 */
KK_LOAD_TEXT static void register_hooks(void)
{
	if (__atomic_exchange_n(&hooks_done, 1, __ATOMIC_ACQ_REL))
		return;
	kk_fork_register(&control_fork_ops);
	kk_service_register(&control_service);
}

KK_INIT(200) static void control_init(void)
{
	register_hooks();
	if (control_mode() == CTL_ALWAYS)
		kk_control_start();
}
