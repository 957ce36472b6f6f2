// SPDX-License-Identifier: MIT
/*
 * kkctl: the targets: -p, and the processes -n, --tree, -M and --all match.
 *
 * -n, --tree and --all match processes that serve an endpoint, whether or not
 * we may use it: /proc/net/unix lists a name for the pid (its own or one
 * squatted on it), or the process has the endpoint's thread (its socket may be
 * gone for a moment while it is re-created).  Each one matched is tried and
 * reported, reached or not: none is left out because we could not reach it.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kkctl.h"

/* Add @t to @l unless its pid is there already (1).  -1: out of memory. */
int kkctl_tlist_add(struct tlist *l, const struct target *t)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == t->pid)
			return 1;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct target *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *t;
	return 0;
}

void kkctl_tlist_free(struct tlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		kkctl_target_unwatch(&l->v[i]);
	free(l->v);
	*l = (struct tlist){ 0 };
}


/* Fill @t's container fields from @w (and its host name if @host: that
 * takes a fork). */
static void target_where(struct target *t, const struct where *w, bool host)
{
	if (!w->other_net && !w->other_pid)
		return;
	t->contained = true;
	t->inpid = w->inpid;
	t->netns = w->netns;
	kkctl_proc_cgroup(t->pid, t->cgroup, sizeof(t->cgroup));
	if (host)
		kkctl_proc_hostname(t->pid, t->host, sizeof(t->host));
}

/* Every live process, from /proc: what the selection read of it, each file
 * once (issue 41: with 100 busy processes beside it, every read waits for a
 * core), its parent, and whether it serves. */
static struct {
	struct proc {
		pid_t pid, ppid;
		unsigned long long start;	/* as kkctl_proc_start() says */
		struct where w;	/* w.have_uids: its status was read too */
		bool serves;	/* an endpoint name in its /proc/PID/net/unix, or the thread */
		bool in_tree;	/* in one of the --tree trees */
	} *v;
	size_t n, cap;
} procs;

/*
 * Fill in @t, known by its pid: its comm and container (its host name too
 * if @host: that takes a fork), into @w where it lives, and its uids if
 * @uids (--all matches by them, --json shows them; else its status is not
 * read here: the endpoint owner's check reads it after connecting).  The
 * pidfd is opened first and the start time read after it: what follows is
 * this process's.  @p, if not NULL, is what the selection read of it
 * before: used when its start time is still the same.  -n reads its
 * argv[0] only if the comm does not match (name_matches()).
 */
static void target_load(struct target *t, bool host, bool uids, struct proc *p,
			struct where *w)
{
	kkctl_target_watch(t);			/* first: the process it is */
	t->start = kkctl_proc_start(t->pid);	/* then: what follows is this process's */
	if (p && p->start == t->start && t->start) {
		*w = p->w;
		if (uids && !w->have_uids) {
			w->have_uids = true;
			kkctl_proc_uids(t->pid, w->uids);
			p->w = *w;
		}
	} else if (kkctl_proc_where_ids(t->pid, w, uids)) {
		*w = (struct where){ .inpid = t->pid, .uids = { -1, -1, -1, -1 } };
	}
	t->uid = (uid_t)w->uids[1];
	kkctl_proc_comm(t);
	target_where(t, w, host);
}

struct pids {
	pid_t *v;
	size_t n, cap;
	bool nomem;
};

static void add_endpoint_pid(pid_t pid, const char *name, void *arg)
{
	struct pids *l = arg;

	(void)name;
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 64;
		pid_t *v = realloc(l->v, cap * sizeof(*v));

		if (!v) {
			l->nomem = true;
			return;
		}
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = pid;
}

static int cmp_pid_t(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}


static int cmp_proc(const void *a, const void *b)
{
	return cmp_pid_t(&((const struct proc *)a)->pid, &((const struct proc *)b)->pid);
}

static struct proc *find_proc(pid_t pid)
{
	struct proc key = { .pid = pid };

	return procs.n ? bsearch(&key, procs.v, procs.n, sizeof(key), cmp_proc) : NULL;
}

/* The endpoint names of one network namespace, by the pid they name. */
struct netns_eps {
	unsigned long netns;
	struct pids eps;
};

/* The endpoint names of every network namespace seen so far. */
struct netns_set {
	struct netns_eps *v;
	size_t n;
};

/* Add every live process in /proc to procs, in pid order.  -1: out of
 * memory. */
static int read_procs(DIR *d)
{
	struct dirent *e;

	while ((e = readdir(d))) {
		struct proc p = { 0 };
		long pid, threads;
		char *end;

		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0 || pid > 0x7fffffff)
			continue;
		p.pid = (pid_t)pid;
		if (kkctl_proc_stat(p.pid, &p.ppid, &threads, &p.start) ||
		    kkctl_proc_where(p.pid, &p.w))
			continue;	/* gone */
		if (!p.w.other_net)
			p.w.netns = kkctl_our_netns();
		/* The thread is looked for only when there is no name: a
		 * single-threaded process has none. */
		p.serves = threads > 1;		/* for now: may have the thread */
		if (procs.n == procs.cap) {
			size_t cap = procs.cap ? 2 * procs.cap : 256;
			struct proc *v = realloc(procs.v, cap * sizeof(*v));

			if (!v)
				return -1;
			procs.v = v;
			procs.cap = cap;
		}
		procs.v[procs.n++] = p;
	}
	if (procs.n)
		qsort(procs.v, procs.n, sizeof(*procs.v), cmp_proc);
	return 0;
}

/* The endpoint names of @p's network namespace, in pid order: read from @p's
 * /proc/PID/net/unix the first time the namespace is seen.  NULL after
 * saying why. */
static struct netns_eps *endpoints_of(struct netns_set *s, const struct proc *p)
{
	struct netns_eps *t, *v;

	for (size_t j = 0; j < s->n; j++)	/* (0: one we may not look at) */
		if (s->v[j].netns == p->w.netns && p->w.netns)
			return &s->v[j];
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		goto nomem;
	s->v = v;
	t = &s->v[s->n++];
	memset(t, 0, sizeof(*t));
	t->netns = p->w.netns;
	/* A container's namespace we cannot read (it went away with its last
	 * process) just has no names. */
	if (kkctl_scan_endpoints(p->w.other_net ? p->pid : 0, add_endpoint_pid, &t->eps) &&
	    !p->w.other_net)
		return NULL;	/* (it said why) */
	if (t->eps.nomem)
		goto nomem;
	if (t->eps.n)
		qsort(t->eps.v, t->eps.n, sizeof(*t->eps.v), cmp_pid_t);
	return t;
nomem:
	fprintf(stderr, "%s: out of memory\n", kkctl_prog);
	return NULL;
}

/* Fill procs.  Each distinct network namespace's sockets are read once, from
 * one of its processes' /proc/PID/net/unix; a process serves if its own
 * namespace has a name for its pid there.  -1 after saying why. */
int kkctl_load_procs(void)
{
	struct netns_set ns = { NULL, 0 };
	DIR *d = opendir("/proc");
	int ret = 0;

	if (!d) {
		fprintf(stderr, "%s: /proc: %s\n", kkctl_prog, strerror(errno));
		return -1;
	}
	if (read_procs(d)) {
		fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		ret = -1;
	}
	for (size_t i = 0; !ret && i < procs.n; i++) {
		struct proc *p = &procs.v[i];
		struct netns_eps *t = endpoints_of(&ns, p);
		bool named;

		if (!t) {
			ret = -1;
			break;
		}
		named = t->eps.n && bsearch(&p->w.inpid, t->eps.v, t->eps.n, sizeof(*t->eps.v),
					    cmp_pid_t);
		p->serves = named || (p->serves && kkctl_has_control_thread(p->pid));
	}
	closedir(d);
	for (size_t j = 0; j < ns.n; j++)
		free(ns.v[j].eps.v);
	free(ns.v);
	return ret;
}

void kkctl_free_procs(void)
{
	free(procs.v);
	memset(&procs, 0, sizeof(procs));
}

/* Mark @root and its descendants (by parent links: a process that was
 * reparented, a daemon that double-forked, has left the tree).  False if
 * there is no process @root. */
static bool mark_tree(pid_t root)
{
	struct proc *r = find_proc(root);
	bool more = true;

	if (!r)
		return false;
	r->in_tree = true;
	while (more) {		/* until no process joins: depth passes at most */
		more = false;
		for (size_t i = 0; i < procs.n; i++) {
			struct proc *p = &procs.v[i], *parent;

			if (p->in_tree || p->ppid <= 0 || !(parent = find_proc(p->ppid)) ||
			    !parent->in_tree)
				continue;
			p->in_tree = more = true;
		}
	}
	return true;
}

/*
 * What --all (and ls) matches: a process that runs as you (its real or
 * effective uid is yours) or, for root, anybody's -- but never one whose uid
 * your user namespace does not map: it shows as the overflow uid, could be
 * anyone, and check_peer() (connect.c) refuses it.  So a user's --all on a
 * shared host stays within that user's processes.
 */
static bool yours(const long ids[4])
{
	uid_t me = geteuid();

	for (int i = 0; i < 2; i++) {
		if (ids[i] < 0 || ((uid_t)ids[i] == kkctl_userns.overflow && !kkctl_userns.all_mapped))
			continue;
		if (me == 0 || (uid_t)ids[i] == me)
			return true;
	}
	return false;
}

/* Has @t one of the names of -n (its comm or its argv[0]'s base name)?  Its
 * argv[0] is read only if no comm matches. */
static bool name_matches(struct target *t, char **names, int nn)
{
	for (int i = 0; i < nn; i++)
		if (!strcmp(t->name, names[i]))
			return true;
	kkctl_proc_argv0(t);
	for (int i = 0; i < nn; i++)
		if (!strcmp(t->argv0, names[i]))
			return true;
	return false;
}


/* A container id: 12 hex digits or more (a short or a full id). */
static bool is_id(const char *name, size_t n)
{
	return n >= 12 && strspn(name, "0123456789abcdef") == n;
}

/*
 * Is @t in the container @name?  Its host name, if its UTS namespace is not
 * ours (docker and podman set the container's id or --hostname, Kubernetes
 * the pod's name; `unshare -u` and hostname(1) do it by hand), or a component
 * of its cgroup path: the whole component (a systemd unit, a pod's slice) or
 * the id in "<engine>-<id>.scope" (docker-<id>.scope, libpod-<id>.scope,
 * cri-containerd-<id>.scope: systemd's cgroup manager), or in
 * "<engine>-<id>" when the id looks like one (podman's cgroupfs manager:
 * /libpod_parent/libpod-<id>).
 */
static bool in_machine(const struct target *t, const char *name)
{
	const char *c = t->cgroup;
	size_t n = strlen(name);

	if (!t->contained)
		return false;
	if (t->host[0] && !strcmp(t->host, name))
		return true;
	while (*c) {
		size_t len = strcspn(c, "/");
		const char *dash;

		if (len == n && !memcmp(c, name, n))
			return true;
		dash = memrchr(c, '-', len);
		if (len > 6 && !memcmp(c + len - 6, ".scope", 6) && dash &&
		    (size_t)(c + len - 6 - dash - 1) == n && !memcmp(dash + 1, name, n))
			return true;
		/* cgroupfs managers name it "<engine>-<id>" (podman: libpod-<id>) */
		if (dash && is_id(name, n) && (size_t)(c + len - dash - 1) == n &&
		    !memcmp(dash + 1, name, n))
			return true;
		c += len + (c[len] == '/');
	}
	return false;
}

/*
 * systemd units.  A unit's processes are in its cgroup: a path component
 * named after it (/system.slice/nginx.service, and below it with
 * Delegate=), a user manager's under /user.slice/user-UID.slice/
 * user@UID.service/.  As systemctl does, a name with no unit type gets
 * ".service".  A system unit is one not below any user@*.service.
 */
static const char *const unit_types[] = {
	".service", ".socket", ".device", ".mount", ".automount", ".swap", ".target",
	".path", ".timer", ".slice", ".scope",
};

static bool has_unit_type(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < sizeof(unit_types) / sizeof(unit_types[0]); i++) {
		size_t l = strlen(unit_types[i]);

		if (n > l && !strcmp(name + n - l, unit_types[i]))
			return true;
	}
	return false;
}

/* Is the component [c, c+len) the unit @u names? */
static bool is_unit(const char *c, size_t len, const char *u)
{
	size_t n = strlen(u);

	if (has_unit_type(u))
		return len == n && !memcmp(c, u, n);
	return len == n + 8 && !memcmp(c, u, n) && !memcmp(c + n, ".service", 8);
}

/* Is @cgroup (a process's: kkctl_proc_cgroup()) in the unit @u? */
static bool in_unit(const char *cgroup, const struct unit_sel *u)
{
	char mine[40];
	bool below_user = false;	/* below a user@UID.service */

	snprintf(mine, sizeof(mine), "user@%u.service", (unsigned int)getuid());
	for (const char *c = cgroup; *c;) {
		size_t len = strcspn(c, "/");

		if (len && u->user == below_user && is_unit(c, len, u->name))
			return true;
		if (len > 13 && !memcmp(c, "user@", 5) && !memcmp(c + len - 8, ".service", 8)) {
			if (!u->user || (len == strlen(mine) && !memcmp(c, mine, len)))
				below_user = true;
			else
				return false;	/* another user's manager */
		}
		c += len + (c[len] == '/');
	}
	return false;
}

static bool unit_matches(pid_t pid, const struct kkctl_sel *s)
{
	char cg[PATH_MAX];	/* a cut path could name a unit it is not in */

	kkctl_proc_cgroup(pid, cg, sizeof(cg));
	for (int i = 0; i < s->nu; i++)
		if (in_unit(cg, &s->units[i]))
			return true;
	return false;
}

/* Is @t in one of -M's containers (and, with -p, one of those pids there)? */
static bool machine_matches(const struct target *t, const struct kkctl_sel *s)
{
	bool pid = !s->nmp;

	for (int i = 0; i < s->nmp && !pid; i++)
		pid = t->inpid == s->mpids[i];
	for (int i = 0; pid && i < s->nm; i++)
		if (in_machine(t, s->machines[i]))
			return true;
	return false;
}

/* Is @p, described by @t and @w, matched by @s? */
static bool matches(const struct kkctl_sel *s, const struct proc *p, struct target *t,
		    const struct where *w)
{
	bool narrowed = s->nn || s->nt || s->nm || s->nu;

	return (narrowed && (!s->nn || name_matches(t, s->names, s->nn)) &&
		(!s->nt || p->in_tree) && (!s->nm || machine_matches(t, s)) &&
		(!s->nu || unit_matches(p->pid, s))) ||
	       (s->all && !s->nm && yours(w->uids));
}

/* Could @s match @p, by what the scan of /proc already knows?  A process
 * that does not serve, or is outside every --tree when only the trees could
 * match it, is not read any further. */
static bool may_match(const struct kkctl_sel *s, const struct proc *p)
{
	bool narrowed = s->nn || s->nt || s->nm || s->nu;

	return p->serves && ((narrowed && (!s->nt || p->in_tree)) || (s->all && !s->nm));
}

/*
 * Add to @l, in pid order, every process that serves and is matched: by
 * --all (yours()), or by the names, trees and containers (-M, with -p the
 * pids inside them), which narrow each other (with both -n and --tree, a
 * process must have one of the names and be in one of the trees).  Each is
 * added through kkctl_serve_add(): when @l is being served, it is served
 * from then on, while the rest are selected.  How many matched, or -1 (out
 * of memory).
 */
long kkctl_select_procs(struct tlist *l, const struct kkctl_sel *s)
{
	long matched = 0;

	for (size_t i = 0; i < procs.n; i++) {
		struct proc *p = &procs.v[i];
		struct target t = { .pid = p->pid, .selected = true };
		struct where w;

		kkctl_serve_poll();	/* print what is done meanwhile */
		if (!may_match(s, p))
			continue;
		target_load(&t, s->nm || kkctl_json, s->all || kkctl_json, p, &w);
		if (!matches(s, p, &t, &w)) {
			kkctl_target_unwatch(&t);
			continue;
		}
		switch (kkctl_serve_add(l, &t)) {
		case -1:
			kkctl_target_unwatch(&t);
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
			return -1;
		case 1:		/* named by -p too: that one is loaded already */
			kkctl_target_unwatch(&t);
		}
		matched++;
	}
	return matched;
}

/* Say that the selectors of @s matched no process, and how they were
 * narrowed: an empty set is not quietly a success. */
static void no_match(const struct kkctl_sel *s)
{
	if (s->all)
		fprintf(stderr, "%s: no process %shas a control endpoint\n", kkctl_prog,
			geteuid() ? "of yours " : "");
	else if (s->nm)
		fprintf(stderr, "%s: no process with a control endpoint in that container%s\n",
			kkctl_prog, s->nn || s->nt || s->nmp || s->nu ? " matches" : "");
	else if (s->nu)
		fprintf(stderr, "%s: no process with a control endpoint in that unit%s\n",
			kkctl_prog, s->nn || s->nt ? " matches" : "");
	else
		fprintf(stderr, "%s: no process %s%s\n", kkctl_prog,
			s->nt ? "in that tree " : "with a control endpoint ",
			s->nn && s->nt ? "with a control endpoint has that name" :
			s->nn ? "has that name" : "has a control endpoint");
}

/* -M's -p are pids inside its containers; else they are ours.  Has @s
 * selectors (more than -p)? */
static bool has_selectors(struct kkctl_sel *s)
{
	if (s->nm)		/* -p PID is the pid inside the container */
		s->targets.n = 0;
	else
		s->nmp = 0;
	return s->nn || s->nt || s->all || s->nm || s->nu;
}

/* Read /proc and mark the --tree trees.  0, or 1 (the exit status) after
 * saying why.  A tree that is not there is a mistake, not an empty set: it
 * is said before anything is written anywhere. */
static int scan_procs(const struct kkctl_sel *s)
{
	if (kkctl_load_procs())
		return 1;
	for (int i = 0; i < s->nt; i++)
		if (!mark_tree(s->trees[i])) {
			fprintf(stderr, "%s: --tree %d: no such process\n", kkctl_prog,
				(int)s->trees[i]);
			return 1;
		}
	return 0;
}

/* Describe the -p targets (what the scan read of them, if it did). */
static void load_named(struct kkctl_sel *s)
{
	for (size_t i = 0; i < s->targets.n; i++) {
		struct target *t = &s->targets.v[i];
		struct where w;

		if (!t->name[0])	/* a -p pid: not described yet */
			target_load(t, kkctl_json, kkctl_json, find_proc(t->pid), &w);
	}
}

/* The targets of a request: the -p pids (or, with -M, the pids inside its
 * containers) and what -n, --tree, -M and --all match, each described.  0,
 * or 1 (the exit status) after saying why. */
int kkctl_select(struct kkctl_sel *s)
{
	long matched;

	if (has_selectors(s)) {
		if (scan_procs(s) || (matched = kkctl_select_procs(&s->targets, s)) < 0)
			return 1;
		if (!matched) {
			no_match(s);
			return 1;
		}
	}
	load_named(s);
	return 0;
}

/* How many processes of the scan serve: the most the selectors can add. */
static size_t count_serving(void)
{
	size_t n = 0;

	for (size_t i = 0; i < procs.n; i++)
		n += procs.v[i].serves;
	return n;
}

/*
 * kkctl_select(), each target served (serve.c) as soon as it is selected
 * rather than after the whole scan: the -p targets first, once a selector
 * has matched a process (no match is an error, and nothing is sent), then
 * each process as it matches.  The order of the replies and the exit status
 * are kkctl_select()'s then kkctl_serve_all()'s.  0 with *@failed set as
 * kkctl_serve_all() returns, or 1 (the exit status) after saying why, with
 * nothing sent.
 */
int kkctl_select_serve(struct kkctl_sel *s, const char *verb, const char *file,
		       const char *body, size_t blen, bool *failed)
{
	bool sel = has_selectors(s);
	long matched;

	if (sel && scan_procs(s))
		return 1;
	load_named(s);
	if (kkctl_serve_begin(&s->targets, sel ? count_serving() : 0, verb, file, body, blen,
			      !sel))
		return 1;
	matched = sel ? kkctl_select_procs(&s->targets, s) : 1;
	if (matched <= 0) {
		if (!matched)
			no_match(s);
		*failed = kkctl_serve_end(true);
		return 1;
	}
	*failed = kkctl_serve_end(false);
	return 0;
}

/* -n, --tree, -M and --all once more (kkctl record picks up the processes
 * that start during its session): what they match now, into @l.  A --tree
 * root that is gone marks nothing.  How many, or -1 after saying why. */
long kkctl_select_again(const struct kkctl_sel *s, struct tlist *l)
{
	kkctl_free_procs();
	if (kkctl_load_procs())
		return -1;
	for (int i = 0; i < s->nt; i++)
		mark_tree(s->trees[i]);
	return kkctl_select_procs(l, s);
}
