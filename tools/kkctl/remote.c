// SPDX-License-Identifier: MIT
/*
 * kkctl: -H: the same command on other hosts, over ssh.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kkctl.h"

/*
 * kkctl -H [user@]host[:port] ... runs `ssh [-p port] [user@]host kkctl ...`
 * (the systemctl -H convention): the remote host needs kkctl and sshd, nothing
 * of ours.  Its arguments are rebuilt from what we parsed (no -H) and each is
 * single-quoted for the remote shell.  $KKCTL_SSH replaces "ssh -T -x -a"
 * (split at blanks: "ssh -i KEY -o BatchMode=yes"), $KKCTL_REMOTE the remote
 * command "kkctl" (inserted as it is: "sudo kkctl", "/opt/kk/bin/kkctl").
 * Hosts run in parallel, at most MAX_SSH at once; their output is printed in
 * the order of the -H options, each host's after a "==> HOST <==" line when
 * there are several, its error lines prefixed "HOST: ", and with --json a
 * "host" field first in each object.  Exit status 1 if any host failed.
 */
enum { MAX_SSH = 32 };

static struct {
	const char **argv;	/* the remote kkctl's arguments */
	int n;
} remote;

/* Append @a (and @b, if given) to the remote kkctl's arguments.  -1: out of
 * memory. */
int kkctl_remote_arg(const char *a, const char *b)
{
	static int cap;

	if (remote.n + 2 > cap) {
		int nc = cap ? 2 * cap : 32;
		const char **v = realloc(remote.argv, (size_t)nc * sizeof(*v));

		if (!v)
			return -1;
		remote.argv = v;
		cap = nc;
	}
	remote.argv[remote.n++] = a;
	if (b)
		remote.argv[remote.n++] = b;
	return 0;
}

/* One host's ssh: its pipes and what came on them. */
struct sshjob {
	const char *host;	/* as given */
	pid_t pid;
	int out, err, in;	/* pipes, -1 once closed */
	size_t in_off;
	char *obuf, *ebuf;	/* what came */
	size_t olen, ocap, elen, ecap;
	int status;
	bool started, done;
	bool own_group;		/* in a process group of its own (kkctl record -H:
				 * Ctrl-C is ours to pass on, by closing its stdin) */
};

/* Append @n bytes of @p to the NUL-terminated *@buf.  -1: out of memory. */
static int buf_add(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > *cap) {
		size_t nc = *cap ? *cap : 4096;
		char *nb;

		while (nc < *len + n + 1)
			nc *= 2;
		if (!(nb = realloc(*buf, nc)))
			return -1;
		*buf = nb;
		*cap = nc;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

/* @s quoted for a POSIX shell, appended to @cmd. */
static int shell_quote(char **cmd, size_t *len, size_t *cap, const char *s)
{
	if (buf_add(cmd, len, cap, " '", 2))
		return -1;
	for (; *s; s++)
		if (*s == '\'' ? buf_add(cmd, len, cap, "'\\''", 4) : buf_add(cmd, len, cap, s, 1))
			return -1;
	return buf_add(cmd, len, cap, "'", 1);
}

/* Split "[user@]host[:port]" ("[v6addr]:port" too) into @dest and @port.
 * -1 if it is no host: empty, or a user or host that begins with '-' (an
 * ssh option, "[-oProxyCommand=...]" too: checked after the brackets are
 * stripped; ssh also gets "--" before it). */
int kkctl_parse_host(const char *h, char *dest, size_t dl, char *port, size_t pl)
{
	const char *at = strrchr(h, '@'), *hp = at ? at + 1 : h, *colon;
	size_t ul = at ? (size_t)(at - h + 1) : 0;

	port[0] = '\0';
	if (*h == '-' || !*hp || strlen(h) >= dl)
		return -1;
	if (*hp == '[') {		/* [::1]:2222 */
		const char *close = strchr(hp, ']');

		if (!close || close == hp + 1 || (close[1] && close[1] != ':'))
			return -1;
		snprintf(dest, dl, "%.*s%.*s", (int)ul, h, (int)(close - hp - 1), hp + 1);
		colon = close[1] ? close + 1 : NULL;
	} else {
		colon = strchr(hp, ':');
		if (colon && strchr(colon + 1, ':'))	/* a bare IPv6 address */
			colon = NULL;
		snprintf(dest, dl, "%.*s", (int)(colon ? (size_t)(colon - h) : strlen(h)), h);
	}
	if (colon) {
		if (!colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
		    strlen(colon + 1) >= pl || atoi(colon + 1) < 1 || atoi(colon + 1) > 65535)
			return -1;
		snprintf(port, pl, "%s", colon + 1);
	}
	return dest[0] == '-' || dest[ul] == '-' || !dest[ul] ? -1 : 0;
}

/* Close *@fd if open, and mark it closed. */
static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Start @j: ssh with its three pipes.  -1 after saying why. */
static int ssh_start(struct sshjob *j, const char *cmd)
{
	static const char *dflt = "ssh -T -x -a";
	const char *ssh = getenv("KKCTL_SSH");
	char dest[512], port[8], *words, *w, *save = NULL;
	const char *argv[64];
	int in[2], out[2], err[2], n = 0;

	if (!ssh || !*ssh)
		ssh = dflt;
	kkctl_parse_host(j->host, dest, sizeof(dest), port, sizeof(port));	/* (checked) */
	if (!(words = strdup(ssh)))
		return -1;
	for (w = strtok_r(words, " \t", &save); w && n < 56; w = strtok_r(NULL, " \t", &save))
		argv[n++] = w;
	if (port[0]) {
		argv[n++] = "-p";
		argv[n++] = port;
	}
	argv[n++] = "--";	/* the host is never an option */
	argv[n++] = dest;
	argv[n++] = cmd;
	argv[n] = NULL;
	j->started = true;
	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		fprintf(stderr, "%s: %s: pipe: %s\n", kkctl_prog, j->host, strerror(errno));
		free(words);
		j->done = true;
		j->status = -1;
		return -1;
	}
	j->pid = fork();
	if (j->pid == 0) {
		signal(SIGPIPE, SIG_DFL);	/* ours is ignored, for our pipes */
		if (j->own_group)
			setpgid(0, 0);
		if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0)
			_exit(127);
		execvp(argv[0], (char **)argv);
		fprintf(stderr, "%s: cannot run %s: %s\n", kkctl_prog, argv[0], strerror(errno));
		_exit(255);	/* as ssh does when it cannot connect: not the remote's */
	}
	free(words);
	close(in[0]);
	close(out[1]);
	close(err[1]);
	j->in = in[1];
	j->out = out[0];
	j->err = err[0];
	if (j->pid < 0) {
		fprintf(stderr, "%s: %s: fork: %s\n", kkctl_prog, j->host, strerror(errno));
		close_fd(&j->in);
		close_fd(&j->out);
		close_fd(&j->err);
		j->done = true;
		j->status = -1;
		return -1;
	}
	fcntl(j->in, F_SETFL, O_NONBLOCK);
	return 0;
}

/* Say why @j failed, on stderr, and (@json_too) as a JSON object, so that a
 * consumer of the objects sees it. */
static void ssh_failure(const struct sshjob *j, bool json_too)
{
	char what[64];

	if (j->status == -1)
		snprintf(what, sizeof(what), "could not run ssh");
	else if (WIFEXITED(j->status))
		snprintf(what, sizeof(what), "%s exited with status %d",
			 WEXITSTATUS(j->status) == 255 ? "ssh" : "the remote kkctl",
			 WEXITSTATUS(j->status));
	else
		snprintf(what, sizeof(what), "ssh killed by signal %d", WTERMSIG(j->status));
	fprintf(stderr, "%s: host ", kkctl_prog);
	kkctl_put_escaped(stderr, j->host, strlen(j->host), "");
	fprintf(stderr, ": %s\n", what);
	if (json_too) {
		fputs("{\"host\":", stdout);
		kkctl_put_json(stdout, j->host, strlen(j->host));
		fputs(",\"ok\":false,\"error\":", stdout);
		kkctl_put_json(stdout, what, strlen(what));
		fputs("}\n", stdout);
	}
}

/* Print @j's output: its stdout (with --json, "host" first in each object),
 * then its stderr (each line after "HOST: " if @many).  True if it
 * failed. */
static bool ssh_print(const struct sshjob *j, bool many)
{
	bool any = false;
	const char *p, *e;

	if (!kkctl_json && many) {
		fputs("==> ", stdout);
		kkctl_put_escaped(stdout, j->host, strlen(j->host), "");
		fputs(" <==\n", stdout);
	}
	for (p = j->obuf; p && *p; p = e + (*e == '\n')) {
		e = p + strcspn(p, "\n");
		if (kkctl_json && *p == '{') {	/* {"host":"h",...} */
			fputs("{\"host\":", stdout);
			kkctl_put_json(stdout, j->host, strlen(j->host));
			if (p[1] != '}')
				putc(',', stdout);
			kkctl_put_escaped(stdout, p + 1, (size_t)(e - p - 1), "\t");
			any = true;
		} else {
			kkctl_put_escaped(stdout, p, (size_t)(e - p), "\t");
		}
		putc('\n', stdout);
	}
	fflush(stdout);
	for (p = j->ebuf; p && *p; p = e + (*e == '\n')) {
		e = p + strcspn(p, "\n");
		if (many) {
			kkctl_put_escaped(stderr, j->host, strlen(j->host), "");
			fputs(": ", stderr);
		}
		kkctl_put_escaped(stderr, p, (size_t)(e - p), "\t");
		putc('\n', stderr);
	}
	if (j->status != 0)
		ssh_failure(j, kkctl_json && !any);
	return j->status != 0;
}

/* The remote command line: $KKCTL_REMOTE (or "kkctl") and the arguments,
 * each quoted.  NULL: out of memory. */
static char *remote_command(void)
{
	const char *rk = getenv("KKCTL_REMOTE");
	char *cmd = NULL;
	size_t len = 0, cap = 0;

	if (!rk || !*rk)
		rk = "kkctl";
	if (buf_add(&cmd, &len, &cap, rk, strlen(rk)))
		goto nomem;
	for (int i = 0; i < remote.n; i++)
		if (shell_quote(&cmd, &len, &cap, remote.argv[i]))
			goto nomem;
	return cmd;
nomem:
	free(cmd);
	return NULL;
}

/* The hosts' jobs, run at most MAX_SSH at once and printed in order. */
struct runner {
	struct sshjob *jobs;
	int nh;
	struct pollfd *pf;	/* three per job: its stdin, stdout and stderr */
	const char *cmd;	/* the remote command line */
	const char *in;		/* what each host's kkctl reads (write without TEXT) */
	size_t inlen;
	int running, next, printed;
	bool failed;
};

/* Start jobs in -H order while fewer than MAX_SSH run. */
static void start_jobs(struct runner *r)
{
	while (r->running < MAX_SSH && r->next < r->nh) {
		struct sshjob *j = &r->jobs[r->next++];

		if (!ssh_start(j, r->cmd)) {
			r->running++;
			if (!r->inlen)
				close_fd(&j->in);
		}
	}
}

/* The pipes to wait on, into r->pf; a job whose stdout and stderr are both
 * closed is reaped instead.  How many. */
static int poll_set(struct runner *r)
{
	int np = 0;

	for (int i = 0; i < r->nh; i++) {
		struct sshjob *j = &r->jobs[i];

		if (!j->started || j->done)
			continue;
		if (j->in >= 0)
			r->pf[np++] = (struct pollfd){ j->in, POLLOUT, 0 };
		if (j->out >= 0)
			r->pf[np++] = (struct pollfd){ j->out, POLLIN, 0 };
		if (j->err >= 0)
			r->pf[np++] = (struct pollfd){ j->err, POLLIN, 0 };
		if (j->out < 0 && j->err < 0) {
			close_fd(&j->in);
			while (waitpid(j->pid, &j->status, 0) < 0 && errno == EINTR)
				;
			j->done = true;
			r->running--;
		}
	}
	return np;
}

/* Write what @j's stdin can take of @in; close it when all is written or
 * the host stopped reading. */
static void feed(struct sshjob *j, const char *in, size_t inlen)
{
	ssize_t r = write(j->in, in + j->in_off, inlen - j->in_off);

	if (r > 0)
		j->in_off += (size_t)r;
	if ((r < 0 && errno != EAGAIN) || j->in_off == inlen)
		close_fd(&j->in);
}

/* Read what came on @j's stdout (@out) or stderr; close it at EOF. */
static void drain(struct sshjob *j, bool out)
{
	int *fd = out ? &j->out : &j->err;
	char buf[65536];
	ssize_t r = read(*fd, buf, sizeof(buf));

	if (r > 0 && (out ? buf_add(&j->obuf, &j->olen, &j->ocap, buf, (size_t)r) :
			    buf_add(&j->ebuf, &j->elen, &j->ecap, buf, (size_t)r)))
		r = 0;	/* out of memory: what came */
	if (r == 0 || (r < 0 && errno != EINTR))
		close_fd(fd);
}

/* Serve the pipe @p is ready on, whichever job's it is. */
static void pump(struct runner *r, const struct pollfd *p)
{
	for (int i = 0; i < r->nh; i++) {
		struct sshjob *j = &r->jobs[i];

		if (p->fd == j->in && j->in >= 0) {
			feed(j, r->in, r->inlen);
			return;
		}
		if (p->fd == j->out || p->fd == j->err) {
			drain(j, p->fd == j->out);
			return;
		}
	}
}

/* Run the jobs until every host's output is printed. */
static void run_jobs(struct runner *r)
{
	while (r->printed < r->nh) {
		int np;

		start_jobs(r);
		np = poll_set(r);
		while (r->printed < r->nh && r->jobs[r->printed].done)
			r->failed |= ssh_print(&r->jobs[r->printed++], r->nh > 1);
		if (!np)
			continue;
		if (poll(r->pf, (nfds_t)np, -1) < 0 && errno != EINTR)
			break;
		for (int k = 0; k < np; k++)
			if (r->pf[k].revents)
				pump(r, &r->pf[k]);
	}
}

/* Run the remote command on every host, each fed @in.  The exit status. */
int kkctl_run_hosts(const char **hosts, int nh, const char *in, size_t inlen)
{
	struct runner r = { .nh = nh, .in = in, .inlen = inlen };
	char *cmd;

	r.jobs = calloc((size_t)nh, sizeof(*r.jobs));
	r.pf = calloc((size_t)nh * 3, sizeof(*r.pf));
	if (!r.jobs || !r.pf || !(cmd = remote_command())) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return 1;
	}
	r.cmd = cmd;
	signal(SIGPIPE, SIG_IGN);	/* a host that stops reading its stdin */
	for (int i = 0; i < nh; i++) {
		r.jobs[i].host = hosts[i];
		r.jobs[i].in = r.jobs[i].out = r.jobs[i].err = -1;
	}
	run_jobs(&r);
	for (int i = 0; i < nh; i++) {
		free(r.jobs[i].obuf);
		free(r.jobs[i].ebuf);
	}
	free(r.jobs);
	free(r.pf);
	free(cmd);
	free(remote.argv);
	if (fflush(stdout))
		return 1;
	return r.failed ? 1 : 0;
}

/* Forget the last @n arguments given for the remote kkctl (kkctl record
 * gives its own instead). */
void kkctl_remote_drop(int n)
{
	remote.n = n < remote.n ? remote.n - n : 0;
}

/*
 * Start `ssh HOST kkctl ARGS` (the arguments given so far) for a caller
 * that reads its output as it comes (kkctl record -H): its pid, and the
 * pipes to its stdin (non-blocking), from its stdout and from its stderr.
 * -1 after saying why.
 */
pid_t kkctl_ssh_open(const char *host, int *in, int *out, int *err)
{
	struct sshjob j = { .host = host, .in = -1, .out = -1, .err = -1, .own_group = true };
	char *cmd = remote_command();

	if (!cmd) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (ssh_start(&j, cmd)) {
		free(cmd);
		return -1;
	}
	free(cmd);
	*in = j.in;
	*out = j.out;
	*err = j.err;
	return j.pid;
}
