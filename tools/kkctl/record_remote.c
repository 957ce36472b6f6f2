// SPDX-License-Identifier: MIT
/*
 * kkctl record -H: a session on other hosts, merged here.
 *
 * Each host runs `kkctl TARGETS record --format jsonl -o - --stdin-stop
 * [--threads ...] QUERY...` over remote.c's ssh (in a process group of its
 * own: Ctrl-C is ours, and we pass it on by closing its standard input, on
 * which the remote kkctl ends every session, writes what is left and
 * exits).  Its lines are merged by their wall-clock time (each host's come
 * in order already: its kkctl merged them), labelled with the host as -H
 * gave it.  --duration and --count are counted here.  A host whose kkctl
 * fails (a bad query there, no process matched there) ends the recording
 * everywhere: each host's sessions are ended by its own kkctl.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kkctl.h"
#include "record_int.h"

enum { MAX_LINE = 16 << 20 };	/* a longer line is no record of ours */

struct rhost {
	struct kkr_src src;
	const char *host;
	pid_t pid;
	int in, out, err;
	pthread_t th;
	bool thread, warned;
	struct kkr_pinfo **pv;	/* its processes, as records named them */
	size_t np;
	char *buf;		/* stdout, up to a whole line */
	size_t len, cap;
	char ebuf[4096];	/* stderr, up to a whole line */
	size_t elen;
	int status;
};

static struct {
	struct rhost *v;
	int n;
} rh;

/* The process @l names on host @h (made at its first record).  NULL: out
 * of memory. */
static struct kkr_pinfo *host_proc(struct rhost *h, const struct kkr_line *l)
{
	struct kkr_pinfo *p, **v;

	for (size_t i = 0; i < h->np; i++)
		if (h->pv[i]->proc.pid == (int)l->pid)
			return h->pv[i];
	if (!(p = calloc(1, sizeof(*p))) || !(v = realloc(h->pv, (h->np + 1) * sizeof(*v)))) {
		free(p);
		return NULL;
	}
	h->pv = v;
	h->pv[h->np++] = p;
	snprintf(p->host, sizeof(p->host), "%s", h->host);
	snprintf(p->name, sizeof(p->name), "%s", l->process);
	p->proc = (struct kkr_proc){ .host = p->host, .pid = (int)l->pid, .vpid = (int)l->vpid,
				     .name = p->name };
	return p;
}

/* One line of the host's kkctl: a record, pushed. */
static void host_line(struct rhost *h, char *s, size_t n)
{
	struct kkr_line l = { 0 };
	struct kkr_pinfo *p;
	struct kkr_rec *r = NULL;
	const char *why = "not a line of kkctl record --format jsonl";

	if (kkr_parse_line(s, n, &l, &why) || !l.relabelled) {
		if (!h->warned)
			fprintf(stderr, "%s: host %s: a malformed record line (%s): skipped\n",
				kkctl_prog, h->host, why);
		h->warned = true;
		__atomic_fetch_add(&kkr.malformed, 1, __ATOMIC_RELAXED);
	} else if ((l.kind == KKR_EXITED || kkr_thread_wanted((int)l.tid, l.comm)) &&
		   (p = host_proc(h, &l)) && (r = kkr_rec_new(&l, p))) {
		kkr_push(&h->src, &r, 1, l.ts);
	}
	kkr_line_free(&l);
}

/* What came on the host's stdout: its whole lines taken. */
static void host_out(struct rhost *h)
{
	char *nl, *s;
	ssize_t r;

	if (h->len + 65536 > h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 131072;
		char *b = cap <= MAX_LINE * 2 ? realloc(h->buf, cap) : NULL;

		if (!b) {	/* no line of ours is that long: drop it */
			h->len = 0;
			return;
		}
		h->buf = b;
		h->cap = cap;
	}
	r = read(h->out, h->buf + h->len, h->cap - h->len);
	if (r < 0 && errno == EINTR)
		return;
	if (r <= 0) {
		close(h->out);
		h->out = -1;
		return;
	}
	h->len += (size_t)r;
	for (s = h->buf; (nl = memchr(s, '\n', h->len - (size_t)(s - h->buf))); s = nl + 1)
		if (nl > s)
			host_line(h, s, (size_t)(nl - s));
	h->len -= (size_t)(s - h->buf);
	memmove(h->buf, s, h->len);
}

static void err_line(struct rhost *h, const char *s, size_t n)
{
	flockfile(stderr);
	kkctl_put_escaped(stderr, h->host, strlen(h->host), "");
	fputs(": ", stderr);
	kkctl_put_escaped(stderr, s, n, "\t");
	fputc('\n', stderr);
	funlockfile(stderr);
}

/* What came on its stderr: each line after "HOST: ". */
static void host_err(struct rhost *h)
{
	ssize_t r = read(h->err, h->ebuf + h->elen, sizeof(h->ebuf) - h->elen);
	char *nl, *s = h->ebuf;

	if (r < 0 && errno == EINTR)
		return;
	if (r <= 0) {
		if (h->elen)
			err_line(h, h->ebuf, h->elen);
		h->elen = 0;
		close(h->err);
		h->err = -1;
		return;
	}
	h->elen += (size_t)r;
	while ((nl = memchr(s, '\n', h->elen - (size_t)(s - h->ebuf)))) {
		err_line(h, s, (size_t)(nl - s));
		s = nl + 1;
	}
	h->elen -= (size_t)(s - h->ebuf);
	memmove(h->ebuf, s, h->elen);
	if (h->elen == sizeof(h->ebuf)) {
		err_line(h, h->ebuf, h->elen);
		h->elen = 0;
	}
}

/* Tell @h's kkctl to end: its standard input closes (once: the main
 * thread and @h's own may both). */
static void host_stop(struct rhost *h)
{
	int fd = __atomic_exchange_n(&h->in, -1, __ATOMIC_ACQ_REL);

	if (fd >= 0)
		close(fd);
}

/*
 * A host's thread: its kkctl's lines taken as they come.  It looks for a
 * signal itself, every STOP_LOOK_MS until it saw one: the main thread,
 * which stops the hosts at the end, may be stuck in a write to an output
 * nobody reads, and the hosts' sites must go back all the same.  While the
 * merge is full (kkr_room()) it leaves the lines in the pipe, looking again
 * every STOP_LOOK_MS: the host's kkctl then blocks on its output, and its
 * readers pause in turn, so a writer behind holds kkctl's memory here as it
 * does for local targets (before, every line was taken: an output that
 * did not move grew the merge without end).
 */
enum { STOP_LOOK_MS = 100 };

static void *host_thread(void *arg)
{
	struct rhost *h = arg;

	while (h->out >= 0 || h->err >= 0) {
		bool room = kkr_room(), looking = __atomic_load_n(&h->in, __ATOMIC_ACQUIRE) >= 0;
		struct pollfd pf[2] = { { room ? h->out : -1, POLLIN, 0 }, { h->err, POLLIN, 0 } };

		if (looking && kkr_signalled())
			host_stop(h);
		if (poll(pf, 2, looking || !room ? STOP_LOOK_MS : -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			host_out(h);
		if (pf[1].revents)
			host_err(h);
	}
	while (waitpid(h->pid, &h->status, 0) < 0 && errno == EINTR)
		;
	if (h->status) {
		fprintf(stderr, "%s: host %s: %s\n", kkctl_prog, h->host,
			WIFEXITED(h->status) && WEXITSTATUS(h->status) == 255 ? "ssh failed" :
			"its kkctl record failed");
		__atomic_store_n(&kkr.host_failed, true, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&kkr.lock);
	h->src.live = false;
	pthread_cond_broadcast(&kkr.cond);
	pthread_mutex_unlock(&kkr.lock);
	return NULL;
}

/* The remote kkctl's arguments: the targets given (kept by remote.c), then
 * record's own for a stream. */
static int remote_args(const struct kkr_opts *o)
{
	static const char *const head[] = { "record", "--format", "jsonl", "-o", "-",
					    "--stdin-stop" };
	int err = 0;

	kkctl_remote_drop(o->cmd_argc);
	for (size_t i = 0; i < sizeof(head) / sizeof(head[0]); i++)
		err |= kkctl_remote_arg(head[i], NULL);
	for (size_t i = 0; i < o->nthreads; i++)
		err |= kkctl_remote_arg("--threads", o->threads[i].text);
	err |= kkctl_remote_arg("--", NULL);
	for (int i = 0; i < o->nq; i++)
		err |= kkctl_remote_arg(o->queries[i], NULL);
	return err;
}

/* Start every host's kkctl.  -1 after one line (those started are
 * stopped by kkr_remote_stop()). */
static int start_hosts(const struct kkr_opts *o)
{
	sigset_t all, old;

	if (!(rh.v = calloc((size_t)o->nh, sizeof(*rh.v))) ||
	    !(kkr.srcs = calloc((size_t)o->nh, sizeof(*kkr.srcs))) || remote_args(o)) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		return -1;
	}
	sigfillset(&all);
	for (int i = 0; i < o->nh; i++) {
		struct rhost *h = &rh.v[i];

		h->host = o->hosts[i];
		h->pid = kkctl_ssh_open(h->host, &h->in, &h->out, &h->err);
		if (h->pid < 0)
			return -1;
		rh.n++;
		h->src.live = true;
		kkr.srcs[kkr.nsrc++] = &h->src;
		pthread_sigmask(SIG_BLOCK, &all, &old);
		h->thread = !pthread_create(&h->th, NULL, host_thread, h);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!h->thread) {
			fprintf(stderr, "%s: host %s: cannot start a thread\n", kkctl_prog, h->host);
			return -1;
		}
	}
	return 0;
}

/* Tell every host's kkctl to end: its standard input closes. */
void kkr_remote_stop(void)
{
	for (int i = 0; i < rh.n; i++)
		host_stop(&rh.v[i]);
}

void kkr_remote_join(void)
{
	for (int i = 0; i < rh.n; i++)
		if (rh.v[i].thread) {
			pthread_join(rh.v[i].th, NULL);
			rh.v[i].thread = false;
		}
}

size_t kkr_remote_procs(void)
{
	size_t n = 0;

	for (int i = 0; i < rh.n; i++)
		for (size_t j = 0; j < rh.v[i].np; j++)
			n += rh.v[i].pv[j]->events > 0;
	return n;
}

static void free_hosts(void)
{
	for (int i = 0; i < rh.n; i++) {
		for (size_t j = 0; j < rh.v[i].np; j++)
			free(rh.v[i].pv[j]);
		free(rh.v[i].pv);
		free(rh.v[i].buf);
	}
	free(rh.v);
	free(kkr.srcs);
}

/* Record on every host of -H, merged here.  The exit status. */
int kkr_record_hosts(struct kkr_opts *o, struct kkr_writer *w)
{
	int ret = -1;

	if (!start_hosts(o))
		ret = kkr_record_loop(w);
	ret |= kkr.host_failed;
	ret |= kkr_finish(w, !ret);
	/* (no record came: an empty trace, unless a host failed) */
	if (!kkr.opened && !ret && !kkr.host_failed)
		ret = kkr_writer_open(w);
	if (kkr.opened)
		ret |= w->ops->close(w);
	kkr_summary(!strcmp(o->path, "-") ? "standard output" : o->path);
	for (int i = 0; i < rh.n; i++)
		ret |= rh.v[i].status != 0;
	free_hosts();
	return ret ? 1 : 0;
}
