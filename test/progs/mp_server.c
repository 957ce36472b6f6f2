// SPDX-License-Identifier: MIT
/*
 * mp_server: a small TCP server in the shape of nginx (issue 24), for
 * test/scripts/mp_server*.sh and kk-bench guest.
 *
 *   mp_server [-p PORT] [-w N] [-u UID -g GID] [-l LOG] [-P PIDFILE] [-n] [-d LEVEL]
 *   mp_server -c PORT LINE...
 *
 * The master listens on 127.0.0.1:PORT (0: an ephemeral port), opens LOG and
 * dup2()s it onto fd 2, as nginx does with its error log, and forks N workers
 * (default 2) that drop to UID/GID (setgroups, setgid, setuid, then
 * prctl(PR_SET_DUMPABLE, 1), as nginx's ngx_worker_process_init) when given,
 * then accept connections and answer one
 * line per request: "GET x" -> "OK x".  handle_request() has a pr_debug site,
 * whose output goes to fd 2, the log.
 *
 * On stdout (flushed at once), for scripts and the bench:
 *   ready PID PORT GEN W1 .. Wn   generation GEN of master PID: every worker
 *                                 has dropped its ids and is about to accept
 *   retired GEN                   every worker of generation GEN has exited
 * Signals to the master:
 *   SIGHUP          reload: a new generation of workers; once it is ready, the
 *                   old workers are told to finish (SIGQUIT) and are reaped
 *   SIGUSR2         binary upgrade: PIDFILE becomes PIDFILE.oldbin, and a
 *                   fork+exec of this program, given the listening socket in
 *                   MP_LISTEN_FD (nginx's NGINX variable), becomes a new master
 *                   with workers of its own; the old one keeps serving until
 *                   told to quit
 *   SIGQUIT         graceful exit: the workers finish their connections
 *   SIGTERM, SIGINT exit: the workers are told to exit now
 * The master reaps every child and removes its pid file when it exits.
 *
 * -n: do not wait for the other threads to sleep before the dup2 (below).
 * -d LEVEL: built -DMP_PLAIN only: the debug level (pr_debug prints at 1).
 * -c: a client: send each LINE on one connection, print each reply; exit 0
 *     when every reply starts with "OK".
 *
 * Built twice: with kernelkit (test/progs, the bench's mp_server-kk), and
 * with -DMP_PLAIN (the bench's mp_server-plain), where pr_debug is the
 * runtime level check of a program without kernelkit.  The test build also
 * has -DMP_COUNT_CTL (below).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef MP_PLAIN
/* What a program without kernelkit does: a level read at run time. */
static int debug_level;
#define pr_debug(...) do { if (debug_level >= 1) fprintf(stderr, __VA_ARGS__); } while (0)
#else
#include <kernelkit/dynamic_debug.h>
#endif

#define MAX_WORKERS	32
#define MAX_GENS	8
#define MAX_CLIENTS	64
#define LINE_MAX_LEN	256

static const char *me = "mp_server";

#ifdef MP_COUNT_CTL
/*
 * For test/scripts/mp_server_quiet.sh, which checks that the library's
 * threads do not wake while the server works: a client of the endpoint
 * (anyone's kkctl ls reaches every process) wakes them for good reason.  So
 * each connection the library's thread accepts, and each of those it closes,
 * is a line "PID a FD" / "PID c FD" in the file MP_CTL_LOG names: the script
 * leaves out a process that had a client during its window.  accept4() and
 * close() are interposed here (the library calls them through its PLT); the
 * line is written before the thread can sleep again.
 */
static int ctl_log = -1;
static unsigned char ctl_conn[1024];	/* descriptors the library accepted */

static void ctl_note(char what, int fd)
{
	char b[48];
	int n = snprintf(b, sizeof(b), "%d %c %d\n", (int)getpid(), what, fd);

	if (write(ctl_log, b, (size_t)n) != n)
		_exit(3);
}

int accept4(int fd, struct sockaddr *sa, socklen_t *len, int flags)
{
	int r = (int)syscall(SYS_accept4, fd, sa, len, flags);

	if (r >= 0 && ctl_log >= 0 && syscall(SYS_gettid) != getpid()) {
		if (r < (int)sizeof(ctl_conn))
			ctl_conn[r] = 1;
		ctl_note('a', r);
	}
	return r;
}

int close(int fd)
{
	if (ctl_log >= 0 && fd >= 0 && fd < (int)sizeof(ctl_conn) && ctl_conn[fd]) {
		ctl_conn[fd] = 0;
		ctl_note('c', fd);
	}
	return (int)syscall(SYS_close, fd);
}

/* Before any client can come: the library's thread may already listen. */
static void ctl_log_open(void)
{
	const char *path = getenv("MP_CTL_LOG");

	if (path)
		ctl_log = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
}
#else
static void ctl_log_open(void)
{
}
#endif

/* One write per line, so that the processes' lines never mix in the log. */
static void logmsg(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (write(STDERR_FILENO, buf, (size_t)n) < 0) {
		/* nowhere else to say it */
	}
}

/* ---- the request path ------------------------------------------------------------ */

/* The reply to one request line (without its newline) into @reply. */
__attribute__((noinline)) static void handle_request(const char *line, char *reply, size_t len)
{
	pr_debug("worker %d: request %s\n", (int)getpid(), line);
	if (!strncmp(line, "GET ", 4))
		snprintf(reply, len, "OK %s\n", line + 4);
	else
		snprintf(reply, len, "ERR unknown request\n");
}

/* ---- the worker ------------------------------------------------------------------- */

struct client {
	int fd;
	size_t got;
	char buf[LINE_MAX_LEN];
};

/* Answer the complete lines in @c's buffer; false: close it. */
static bool client_input(struct client *c)
{
	char reply[LINE_MAX_LEN + 16];
	ssize_t n = read(c->fd, c->buf + c->got, sizeof(c->buf) - c->got);
	char *nl;

	if (n <= 0)
		return n < 0 && errno == EINTR;
	c->got += (size_t)n;
	while ((nl = memchr(c->buf, '\n', c->got))) {
		size_t used = (size_t)(nl - c->buf) + 1;

		*nl = '\0';
		if (nl > c->buf && nl[-1] == '\r')
			nl[-1] = '\0';
		handle_request(c->buf, reply, sizeof(reply));
		if (send(c->fd, reply, strlen(reply), MSG_NOSIGNAL) < 0)
			return false;
		memmove(c->buf, c->buf + used, c->got - used);
		c->got -= used;
	}
	if (c->got == sizeof(c->buf)) {
		static const char too_long[] = "ERR line too long\n";

		send(c->fd, too_long, sizeof(too_long) - 1, MSG_NOSIGNAL);
		return false;
	}
	return true;
}

static int make_signalfd(const sigset_t *set)
{
	int fd = signalfd(-1, set, SFD_CLOEXEC);

	if (fd < 0) {
		logmsg("%s %d: signalfd: %s\n", me, (int)getpid(), strerror(errno));
		exit(1);
	}
	return fd;
}

/*
 * A worker: drop to @uid/@gid (-1: keep), say it is ready on @ready_fd, then
 * serve @lfd until SIGTERM/SIGINT (now) or SIGQUIT (once its connections end).
 */
static void worker(int gen, int lfd, int ready_fd, long uid, long gid, const sigset_t *sigs)
{
	static struct client cl[MAX_CLIENTS];
	struct pollfd pfd[MAX_CLIENTS + 2];
	int sfd = make_signalfd(sigs), ncl = 0;
	bool quitting = false;

	if (uid >= 0 && (setgroups(0, NULL) || setgid((gid_t)gid) || setuid((uid_t)uid))) {
		logmsg("%s %d: worker cannot drop to uid %ld gid %ld: %s\n", me, (int)getpid(),
		       uid, gid, strerror(errno));
		_exit(2);
	}
	/* As nginx's workers do after setuid(): the kernel made us non-dumpable,
	 * so that neither a core dump, ptrace nor the control endpoint (which
	 * follows ptrace's rule) was open to our new uid; we hold nothing of
	 * root's, so let that uid in. */
	if (uid >= 0 && prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)) {
		logmsg("%s %d: prctl(PR_SET_DUMPABLE): %s\n", me, (int)getpid(), strerror(errno));
		_exit(2);
	}
	logmsg("%s %d: worker of generation %d ready (uid %d gid %d)\n", me, (int)getpid(), gen,
	       (int)getuid(), (int)getgid());
	if (write(ready_fd, "r", 1) != 1)
		_exit(2);
	close(ready_fd);
	for (;;) {
		int n = 0;

		if (quitting && !ncl)
			break;
		pfd[n].fd = sfd;
		pfd[n++].events = POLLIN;
		pfd[n].fd = quitting ? -1 : lfd;	/* negative: ignored */
		pfd[n++].events = POLLIN;
		for (int i = 0; i < ncl; i++) {
			pfd[n].fd = cl[i].fd;
			pfd[n++].events = POLLIN;
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			logmsg("%s %d: poll: %s\n", me, (int)getpid(), strerror(errno));
			_exit(1);
		}
		if (pfd[0].revents) {
			struct signalfd_siginfo si;

			if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
					break;
				if (si.ssi_signo == SIGQUIT && !quitting) {
					quitting = true;	/* no new connections */
					close(lfd);
					lfd = -1;
				}
			}
		}
		/* clients first: pfd[2..] match cl[] before an accept adds one */
		for (int i = ncl - 1; i >= 0; i--) {
			if (!pfd[2 + i].revents)
				continue;
			if (!client_input(&cl[i])) {
				close(cl[i].fd);
				cl[i] = cl[--ncl];
			}
		}
		if (!quitting && pfd[1].revents) {
			/* the socket is shared and non-blocking: another worker may win */
			int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (fd >= 0 && ncl < MAX_CLIENTS) {
				cl[ncl].fd = fd;
				cl[ncl++].got = 0;
			} else if (fd >= 0) {
				close(fd);
			}
		}
	}
	logmsg("%s %d: worker of generation %d exits\n", me, (int)getpid(), gen);
	exit(0);
}

/* ---- the master ------------------------------------------------------------------- */

struct gen {
	int id;			/* 0: a free slot */
	pid_t pid[MAX_WORKERS];
	int n, alive, nready;
	int ready_fd;		/* read end of the workers' ready pipe, or -1 */
	bool ready, retiring;
};

static struct {
	int lfd, sfd, port, nworkers, next_gen;
	long uid, gid;
	struct gen gens[MAX_GENS];
	pid_t newbin;		/* the upgraded master while it runs */
	bool quitting;
	int status;		/* the exit status once quitting */
	char *pidfile, *oldbin, *cur_pidfile;
	char exe[PATH_MAX];
	char **argv;
	sigset_t sigs, orig_mask;
} m;

static void write_pidfile(const char *path)
{
	FILE *f = fopen(path, "we");

	if (!f || fprintf(f, "%d\n", (int)getpid()) < 0 || fclose(f)) {
		logmsg("%s %d: cannot write %s: %s\n", me, (int)getpid(), path, strerror(errno));
		exit(1);
	}
}

static void close_master_fds(void)
{
	close(m.sfd);
	for (int g = 0; g < MAX_GENS; g++)
		if (m.gens[g].id && m.gens[g].ready_fd >= 0)
			close(m.gens[g].ready_fd);
}

/* Fork the workers of a new generation; 0 or -1. */
static int start_gen(void)
{
	struct gen *g = NULL;
	int p[2];

	for (int i = 0; i < MAX_GENS && !g; i++)
		if (!m.gens[i].id)
			g = &m.gens[i];
	if (!g) {
		logmsg("%s %d: too many generations still running\n", me, (int)getpid());
		return -1;
	}
	if (pipe2(p, O_CLOEXEC)) {
		logmsg("%s %d: pipe: %s\n", me, (int)getpid(), strerror(errno));
		return -1;
	}
	memset(g, 0, sizeof(*g));
	g->id = ++m.next_gen;
	g->ready_fd = -1;
	fflush(stdout);		/* nothing buffered is written twice */
	for (int i = 0; i < m.nworkers; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			logmsg("%s %d: fork: %s\n", me, (int)getpid(), strerror(errno));
			break;
		}
		if (pid == 0) {
			close(p[0]);
			close_master_fds();
			worker(g->id, m.lfd, p[1], m.uid, m.gid, &m.sigs);
		}
		g->pid[g->n++] = pid;
		g->alive++;
	}
	close(p[1]);
	if (!g->n) {
		close(p[0]);
		g->id = 0;
		return -1;
	}
	g->ready_fd = p[0];
	return 0;
}

static void signal_gen(struct gen *g, int sig)
{
	for (int i = 0; i < g->n; i++)
		if (g->pid[i] > 0)
			kill(g->pid[i], sig);
}

static void quit(int sig, int status)
{
	m.quitting = true;
	m.status = status;
	for (int i = 0; i < MAX_GENS; i++)
		if (m.gens[i].id)
			signal_gen(&m.gens[i], sig);
}

/* Every worker of @g said it is ready: announce it, retire the older ones. */
static void gen_ready(struct gen *g)
{
	g->ready = true;
	close(g->ready_fd);
	g->ready_fd = -1;
	printf("ready %d %d %d", (int)getpid(), m.port, g->id);
	for (int i = 0; i < g->n; i++)
		printf(" %d", (int)g->pid[i]);
	printf("\n");
	fflush(stdout);
	logmsg("%s %d: master: generation %d ready, %d workers\n", me, (int)getpid(), g->id, g->n);
	for (int i = 0; i < MAX_GENS; i++) {
		struct gen *o = &m.gens[i];

		if (o->id && o->id < g->id && !o->retiring) {
			o->retiring = true;
			signal_gen(o, SIGQUIT);
		}
	}
}

static void ready_input(struct gen *g)
{
	char buf[MAX_WORKERS];
	ssize_t n = read(g->ready_fd, buf, sizeof(buf));

	if (n > 0) {
		g->nready += (int)n;
		if (g->nready >= g->n)
			gen_ready(g);
		return;
	}
	if (n < 0 && errno == EINTR)
		return;
	/* every worker closed its end without saying it is ready */
	logmsg("%s %d: master: generation %d failed: %d of %d workers ready\n", me, (int)getpid(),
	       g->id, g->nready, g->n);
	close(g->ready_fd);
	g->ready_fd = -1;
	g->retiring = true;
	signal_gen(g, SIGTERM);
	if (g->id == 1 && !m.quitting)
		quit(SIGTERM, 1);
	if (!g->alive)
		g->id = 0;
}

static void upgrade(void)
{
	char fdstr[16];
	pid_t pid;

	if (m.newbin > 0) {
		logmsg("%s %d: master: an upgrade is already running (%d)\n", me, (int)getpid(),
		       (int)m.newbin);
		return;
	}
	if (m.pidfile && rename(m.pidfile, m.oldbin)) {
		logmsg("%s %d: master: rename %s: %s\n", me, (int)getpid(), m.pidfile, strerror(errno));
		return;
	}
	m.cur_pidfile = m.oldbin;
	fflush(stdout);
	pid = fork();
	if (pid < 0) {
		logmsg("%s %d: master: fork: %s\n", me, (int)getpid(), strerror(errno));
	} else if (pid == 0) {
		close_master_fds();
		snprintf(fdstr, sizeof(fdstr), "%d", m.lfd);
		if (fcntl(m.lfd, F_SETFD, 0) || setenv("MP_LISTEN_FD", fdstr, 1)) {
			logmsg("%s %d: cannot pass the listening socket: %s\n", me, (int)getpid(),
			       strerror(errno));
			_exit(127);
		}
		sigprocmask(SIG_SETMASK, &m.orig_mask, NULL);
		execv(m.exe, m.argv);
		logmsg("%s %d: execv %s: %s\n", me, (int)getpid(), m.exe, strerror(errno));
		_exit(127);
	} else {
		m.newbin = pid;
		logmsg("%s %d: master: upgrade: new master %d\n", me, (int)getpid(), (int)pid);
		return;
	}
	if (m.pidfile && !rename(m.oldbin, m.pidfile))
		m.cur_pidfile = m.pidfile;
}

static void reap(void)
{
	pid_t pid;
	int st;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid == m.newbin) {
			m.newbin = 0;
			logmsg("%s %d: master: new master %d exited (status 0x%x)\n", me, (int)getpid(),
			       (int)pid, st);
			/* the upgrade failed, or the new master quit: we are the master again */
			if (m.pidfile && !m.quitting && !rename(m.oldbin, m.pidfile))
				m.cur_pidfile = m.pidfile;
			continue;
		}
		for (int i = 0; i < MAX_GENS; i++) {
			struct gen *g = &m.gens[i];

			for (int j = 0; g->id && j < g->n; j++) {
				if (g->pid[j] != pid)
					continue;
				g->pid[j] = -1;
				if (!WIFEXITED(st) || WEXITSTATUS(st))
					logmsg("%s %d: master: worker %d exited (status 0x%x)\n", me,
					       (int)getpid(), (int)pid, st);
				if (--g->alive == 0 && g->ready_fd < 0) {
					if (g->retiring) {
						printf("retired %d\n", g->id);
						fflush(stdout);
					}
					g->id = 0;
				}
			}
		}
	}
}

static bool workers_left(void)
{
	for (int i = 0; i < MAX_GENS; i++)
		if (m.gens[i].id && m.gens[i].alive)
			return true;
	return false;
}

static int master_loop(void)
{
	for (;;) {
		struct pollfd pfd[MAX_GENS + 1];
		struct gen *who[MAX_GENS + 1];
		int n = 0;

		if (m.quitting && !workers_left())
			break;
		pfd[n].fd = m.sfd;
		pfd[n].events = POLLIN;
		who[n++] = NULL;
		for (int i = 0; i < MAX_GENS; i++) {
			if (!m.gens[i].id || m.gens[i].ready_fd < 0)
				continue;
			pfd[n].fd = m.gens[i].ready_fd;
			pfd[n].events = POLLIN;
			who[n++] = &m.gens[i];
		}
		if (poll(pfd, (nfds_t)n, -1) < 0) {
			if (errno == EINTR)
				continue;
			logmsg("%s %d: master: poll: %s\n", me, (int)getpid(), strerror(errno));
			return 1;
		}
		for (int i = 1; i < n; i++)
			if (pfd[i].revents && who[i]->ready_fd >= 0)
				ready_input(who[i]);
		if (!pfd[0].revents)
			continue;
		struct signalfd_siginfo si;

		if (read(m.sfd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap();
			break;
		case SIGHUP:
			if (m.quitting)
				break;
			logmsg("%s %d: master: reload\n", me, (int)getpid());
			start_gen();
			break;
		case SIGUSR2:
			if (!m.quitting)
				upgrade();
			break;
		case SIGQUIT:
			logmsg("%s %d: master: graceful exit\n", me, (int)getpid());
			quit(SIGQUIT, 0);
			break;
		default:	/* SIGTERM, SIGINT */
			logmsg("%s %d: master: exit\n", me, (int)getpid());
			quit(SIGTERM, 0);
			break;
		}
	}
	logmsg("%s %d: master exits\n", me, (int)getpid());
	if (m.cur_pidfile)
		unlink(m.cur_pidfile);
	return m.status;
}

/* ---- start-up ----------------------------------------------------------------------- */

/*
 * Whether every thread of this process but the caller is asleep (state S):
 * a library thread that is blocked in accept() then holds the number the
 * kernel reserved for it, so that what follows is the same on every run.
 */
static bool others_asleep(void)
{
	pid_t self = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool all = true;

	if (!d)
		return true;
	while (all && (e = readdir(d))) {
		char path[64], buf[512], *rp;
		pid_t tid = (pid_t)atoi(e->d_name);
		ssize_t n;
		int fd;

		if (tid <= 0 || tid == self)
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;	/* gone */
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		rp = strrchr(buf, ')');		/* the name may hold anything */
		all = rp && rp[1] == ' ' && rp[2] == 'S';
	}
	closedir(d);
	return all;
}

/* Wait (up to about 2 s) until every other thread is asleep. */
static void settle(void)
{
	struct timespec ms = { 0, 1000000 };

	for (int i = 0; i < 2000 && !others_asleep(); i++)
		nanosleep(&ms, NULL);
}

/* The log onto fd 2, as nginx's ngx_log_redirect_stderr(). */
static void open_log(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);

	if (fd < 0) {
		fprintf(stdout, "%s: cannot open %s: %s\n", me, path, strerror(errno));
		exit(1);
	}
	if (fd == STDERR_FILENO) {
		/* fd 2 was free: the log is there already (and must survive exec) */
		fcntl(fd, F_SETFD, 0);
		return;
	}
	if (dup2(fd, STDERR_FILENO) < 0) {
		char msg[160];
		int e = errno, n;

		n = snprintf(msg, sizeof(msg), "%s %d: dup2(STDERR_FILENO) failed (%d: %s)\n", me,
			     (int)getpid(), e, strerror(e));
		if (n > 0 && write(fd, msg, (size_t)n) < 0) {
			/* stdout below says it too */
		}
		fprintf(stdout, "%s", msg);
		exit(1);
	}
	close(fd);
}

/* The listening socket: passed by an old master in MP_LISTEN_FD, or made. */
static int get_listener(int port)
{
	const char *env = getenv("MP_LISTEN_FD");
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	int fd, one = 1;

	if (env) {
		fd = atoi(env);
		unsetenv("MP_LISTEN_FD");	/* not for our own children */
		if (fd < 3 || getsockname(fd, (struct sockaddr *)&sa, &sl) || sa.sin_family != AF_INET) {
			logmsg("%s %d: MP_LISTEN_FD=%s is no inet socket\n", me, (int)getpid(), env);
			exit(1);
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
	} else {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		memset(&sa, 0, sizeof(sa));
		sa.sin_family = AF_INET;
		sa.sin_port = htons((uint16_t)port);
		sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128) ||
		    getsockname(fd, (struct sockaddr *)&sa, &sl)) {
			logmsg("%s %d: cannot listen on 127.0.0.1:%d: %s\n", me, (int)getpid(), port,
			       strerror(errno));
			exit(1);
		}
	}
	/* shared by every worker: one that loses the race to accept() gets EAGAIN */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	m.port = ntohs(sa.sin_port);
	return fd;
}

/* ---- the client ------------------------------------------------------------------- */

static int client(int port, char **lines, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), bad = 0;
	FILE *in;

	sa.sin_port = htons((uint16_t)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: connect 127.0.0.1:%d: %s\n", me, port, strerror(errno));
		return 1;
	}
	in = fdopen(fd, "r");
	for (int i = 0; i < n; i++) {
		char reply[LINE_MAX_LEN + 16];
		size_t len = strlen(lines[i]);

		if (send(fd, lines[i], len, MSG_NOSIGNAL) != (ssize_t)len ||
		    send(fd, "\n", 1, MSG_NOSIGNAL) != 1 || !fgets(reply, sizeof(reply), in)) {
			fprintf(stderr, "%s: no reply to '%s'\n", me, lines[i]);
			return 1;
		}
		fputs(reply, stdout);
		bad |= strncmp(reply, "OK", 2) != 0;
	}
	fclose(in);
	return bad;
}

static long num_arg(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || !*s || *end || v < lo || v > hi) {
		fprintf(stderr, "%s: bad number: %s\n", me, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	const char *log = NULL;
	bool wait_threads = true;
	long port = 0;
	int c;
	ssize_t n;

	m.nworkers = 2;
	m.uid = m.gid = -1;
	m.argv = argv;
	if (argc > 2 && !strcmp(argv[1], "-c"))
		return client((int)num_arg(argv[2], 1, 65535), argv + 3, argc - 3);
	ctl_log_open();
	while ((c = getopt(argc, argv, "p:w:u:g:l:P:nd:")) != -1) {
		switch (c) {
		case 'p': port = num_arg(optarg, 0, 65535); break;
		case 'w': m.nworkers = (int)num_arg(optarg, 1, MAX_WORKERS); break;
		case 'u': m.uid = num_arg(optarg, 0, 0x7fffffff); break;
		case 'g': m.gid = num_arg(optarg, 0, 0x7fffffff); break;
		case 'l': log = optarg; break;
		case 'P': m.pidfile = optarg; break;
		case 'n': wait_threads = false; break;
#ifdef MP_PLAIN
		case 'd': debug_level = (int)num_arg(optarg, 0, 9); break;
#else
		case 'd': break;
#endif
		default:
			fprintf(stderr, "usage: %s [-p PORT] [-w N] [-u UID -g GID] [-l LOG] "
				"[-P PIDFILE] [-n] [-d LEVEL] | -c PORT LINE...\n", me);
			return 2;
		}
	}
	if (optind != argc || (m.uid < 0) != (m.gid < 0)) {
		fprintf(stderr, "%s: -u and -g go together, and nothing follows the options\n", me);
		return 2;
	}
	/* for the upgrade: the program file as it is now */
	n = readlink("/proc/self/exe", m.exe, sizeof(m.exe) - 1);
	if (n <= 0) {
		fprintf(stdout, "%s: readlink /proc/self/exe: %s\n", me, strerror(errno));
		return 1;
	}
	m.exe[n] = '\0';
	if (log) {
		if (wait_threads)
			settle();
		open_log(log);
	}
	m.lfd = get_listener((int)port);
	if (m.pidfile) {
		size_t len = strlen(m.pidfile) + sizeof(".oldbin");

		m.oldbin = malloc(len);
		if (!m.oldbin)
			return 1;
		snprintf(m.oldbin, len, "%s.oldbin", m.pidfile);
		write_pidfile(m.pidfile);
		m.cur_pidfile = m.pidfile;
	}
	sigemptyset(&m.sigs);
	sigaddset(&m.sigs, SIGCHLD);
	sigaddset(&m.sigs, SIGHUP);
	sigaddset(&m.sigs, SIGUSR2);
	sigaddset(&m.sigs, SIGQUIT);
	sigaddset(&m.sigs, SIGTERM);
	sigaddset(&m.sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &m.sigs, &m.orig_mask);
	/* as nginx: a reader of stdout or a client that went away is no reason to die */
	signal(SIGPIPE, SIG_IGN);
	m.sfd = make_signalfd(&m.sigs);
	logmsg("%s %d: master: listening on 127.0.0.1:%d, %d workers\n", me, (int)getpid(), m.port,
	       m.nworkers);
	if (start_gen())
		return 1;
	return master_loop();
}
