/* SPDX-License-Identifier: MIT */
/*
 * kkctl's private header: what its files share.  Not installed; nothing of
 * the library's is linked in (kkctl must not start an endpoint of its own),
 * only src/control_path.c's socket-name rules.
 *
 *   tools/kkctl.c        the entry point: the command and option tables that
 *                        drive parsing, dispatch and --help
 *   tools/kkctl/proc.c     what /proc says about a process
 *   tools/kkctl/ns.c       entering a target's user, network and UTS namespaces
 *   tools/kkctl/connect.c  reaching a pid's endpoint, its owner verified
 *   tools/kkctl/request.c  one request and its reply, within the bounds
 *   tools/kkctl/select.c   -p, -n, --tree, -M, --all: the targets
 *   tools/kkctl/serve.c    serving the targets --jobs at a time, in order,
 *                          each as soon as it is selected
 *   tools/kkctl/output.c   text and --json, nothing a process sent raw
 *   tools/kkctl/bounds.c   --timeout, --max-reply, --jobs and their $KKCTL_*
 *   tools/kkctl/remote.c   -H: the same command on other hosts, over ssh
 *   tools/kkctl/ddctl.c    dynamic_debug/control writes: pieces, what matched
 *   tools/kkctl/trace.c    --json read dynamic_debug/trace: one object a record
 *   tools/kkctl/record*.c  kkctl record: sessions, merge, format writers
 *                          (record.h, record_int.h)
 */
#ifndef KKCTL_H
#define KKCTL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

extern const char kkctl_prog[];	/* "kkctl": the prefix of every message */
extern bool kkctl_json;		/* --json */

/* ---- bounds.c: what one target may cost us (--timeout, --max-reply, --jobs) */

extern struct kkctl_bounds {
	double timeout_s;	/* connection to the reply's last byte */
	size_t max_reply;	/* bytes, status line included */
	unsigned jobs;		/* targets served at once */
} kkctl_bounds;

enum { KKCTL_OPT_MAX_REPLY = 256, KKCTL_OPT_JOBS, KKCTL_OPT_USER_UNIT, KKCTL_OPT_STRICT };	/* long options without a short one */

int kkctl_bound_option(int key, const char *value);
int kkctl_bounds_from_env(void);
int kkctl_bounds_forward(void);

/* ---- proc.c: a process, as /proc describes it ------------------------------ */

struct target {
	pid_t pid;
	uid_t uid;
	char name[64];		/* comm */
	char argv0[64];		/* base name of argv[0] */
	bool selected;		/* by -n, --tree or --all (not only -p) */
	unsigned long long start;	/* its start time (/proc/PID/stat field 22; 0: gone) */
	bool watched;		/* pidfd is open on it (kkctl_target_watch()) */
	int pidfd;
	bool reached;		/* answered once (-f: it is followed) */
	bool gone;		/* found gone: -f drops it */
	/* In a container (another network or pid namespace than ours): */
	bool contained;
	pid_t inpid;		/* its pid there */
	unsigned long netns;	/* its network namespace's inode */
	char host[72];		/* its UTS namespace's host name, if not ours */
	char cgroup[PATH_MAX];	/* its cgroup's path, whole: a Kubernetes one is 190 bytes and more */
};

/*
 * Where a process lives, seen from us.  Its endpoint is named after its pid
 * in its own pid namespace (the last field of NSpid in /proc/PID/status) and
 * bound in its network namespace: a container's process (docker, podman, a
 * Kubernetes pod: `unshare -n -p -f`) serves @kernelkit/1 where we cannot see
 * it.  /proc/PID/net/unix lists the sockets of PID's network namespace, and a
 * child of ours that enters it (setns) can connect (kkctl_connect_in()).
 */
struct where {
	pid_t inpid;		/* its pid in its own pid namespace */
	unsigned long netns;	/* /proc/PID/ns/net's inode; 0: we may not look */
	bool other_net;		/* its network namespace is not ours */
	bool other_pid;		/* its pid namespace is not ours (inpid != pid) */
	int net_err;		/* why /proc/PID/ns/net could not be looked at, or 0 */
	bool have_uids;		/* its status was read: */
	long uids[4];		/* its real, effective, saved and fs uids */
};

long kkctl_proc_uids(pid_t pid, long all[4]);
long kkctl_proc_uid(pid_t pid);
bool kkctl_proc_exists(pid_t pid);
unsigned long long kkctl_proc_start(pid_t pid);
void kkctl_target_watch(struct target *t);
void kkctl_target_unwatch(struct target *t);
bool kkctl_target_alive(const struct target *t);
unsigned long kkctl_our_netns(void);
int kkctl_proc_where(pid_t pid, struct where *w);
int kkctl_proc_where_ids(pid_t pid, struct where *w, bool want_uids);
void kkctl_proc_cgroup(pid_t pid, char *buf, size_t bl);
void kkctl_proc_comm(struct target *t);
void kkctl_proc_argv0(struct target *t);
void kkctl_proc_names(struct target *t);
int kkctl_proc_stat(pid_t pid, pid_t *ppid, long *threads, unsigned long long *start);
bool kkctl_has_control_thread(pid_t pid);
int kkctl_scan_endpoints(pid_t in, void (*each)(pid_t pid, const char *name, void *arg),
			 void *arg);

/* ---- ns.c: entering a target's namespaces ---------------------------------- */

/*
 * Our user namespace, for reading what SO_PEERCRED reports: a uid it does not
 * map shows as the overflow uid, which is then anyone at all.  Only the
 * initial namespace maps every uid; there the overflow uid is a real one
 * (nobody), and a process running as it may be root's to control.
 */
extern struct kkctl_userns {
	uid_t overflow;		/* /proc/sys/kernel/overflowuid */
	bool all_mapped;	/* /proc/self/uid_map is "0 0 4294967295" */
} kkctl_userns;

/* The namespaces a child enters (-1: stay in ours). */
struct nsfds {
	int net, user, uts;
};

void kkctl_userns_load(void);
int kkctl_ns_of(pid_t pid, const char *ns);
int kkctl_connect_in(struct nsfds *ns, pid_t pid, const struct sockaddr_un *sa, socklen_t sl,
		     uint64_t deadline, char *note, size_t nl);
void kkctl_proc_hostname(pid_t pid, char *buf, size_t bl);

/* ---- connect.c: a pid's endpoint, verified before anything is sent ---------- */

struct result;
int kkctl_connect_addr(const struct sockaddr_un *sa, socklen_t sl);
int kkctl_connect_pid(const struct target *t, uint64_t deadline, struct result *res,
		      bool *again);

/* ---- request.c: one request to one process, within its bounds --------------- */

struct result {
	int ok;
	bool named;		/* err is about the target: "process PID (NAME): err" */
	bool gone;		/* the process exited (or never was): see kkctl_settle_gone() */
	bool sent;		/* ... after it was sent the request, before its reply */
	char *body;		/* the reply body (ok) or the process's message */
	size_t len;
	char err[512];		/* our own one-line error */
	char note[192];		/* why we could not enter its user namespace */
	char via[128];		/* the name we used after passing a foreign socket */
	int trace_clock;	/* --json read dynamic_debug/trace: 1 mono, 2 realtime; 0 not */
};

int kkctl_wait_fd(int fd, short events, uint64_t deadline);
int kkctl_reach_pid(const struct target *t, uint64_t deadline, int *tries, struct result *res);
void kkctl_request(const struct target *t, const char *verb, const char *file,
		   const char *body, size_t blen, struct result *res);
void kkctl_request_by(const struct target *t, const char *verb, const char *file,
		      const char *body, size_t blen, uint64_t deadline, struct result *res);
bool kkctl_settle_gone(const struct target *t, struct result *res);

/* ---- select.c: the targets ------------------------------------------------- */

struct tlist {
	struct target *v;
	size_t n, cap;
};

/* What the command line selects.  Arrays of argc entries: enough for every
 * option to be one of them. */
struct kkctl_sel {
	struct tlist targets;	/* -p, then those the selectors matched */
	char **names;		/* -n */
	int nn;
	pid_t *trees;		/* --tree */
	int nt;
	char **machines;	/* -M */
	int nm;
	pid_t *mpids;		/* -p, read as pids inside -M's containers */
	int nmp;
	struct unit_sel {	/* -u, --user-unit */
		const char *name;
		bool user;	/* a unit of the caller's user manager (user@UID.service) */
	} *units;
	int nu;
	bool all;		/* --all */
};

int kkctl_tlist_add(struct tlist *l, const struct target *t);
void kkctl_tlist_free(struct tlist *l);
int kkctl_load_procs(void);
void kkctl_free_procs(void);
long kkctl_select_procs(struct tlist *l, const struct kkctl_sel *s);
int kkctl_select(struct kkctl_sel *s);
int kkctl_select_serve(struct kkctl_sel *s, const char *verb, const char *file,
		       const char *body, size_t blen, bool *failed);
long kkctl_select_again(const struct kkctl_sel *s, struct tlist *l);

/* ---- serve.c, output.c ------------------------------------------------------ */

bool kkctl_serve_all(struct tlist *l, const char *verb, const char *file, const char *body,
		     size_t blen);
int kkctl_serve_begin(struct tlist *l, size_t more, const char *verb, const char *file,
		      const char *body, size_t blen, bool go);
int kkctl_serve_add(struct tlist *l, const struct target *t);
void kkctl_serve_poll(void);
bool kkctl_serve_end(bool abort);

void kkctl_put_escaped(FILE *f, const char *s, size_t n, const char *keep);
void kkctl_put_json(FILE *f, const char *s, size_t n);
void kkctl_report(const struct target *t, const struct result *r, bool many);
void kkctl_report_ls_header(void);
void kkctl_report_ls(const struct target *t, bool ok, const struct result *r);

/* ---- ddctl.c: dynamic_debug/control writes ---------------------------------- */

extern bool kkctl_strict;	/* --strict */
int kkctl_dd_prepare(const char *verb, const char *file, const char *text, size_t len);
void kkctl_dd_request(const struct target *t, const char *verb, const char *file,
		      const char *body, size_t blen, struct result *res);
void kkctl_dd_count(const struct result *r);
bool kkctl_dd_finish(void);

/* ---- trace.c: --json read dynamic_debug/trace -------------------------------- */

int kkctl_trace_clock(const struct target *t, const char *verb, const char *file);
void kkctl_report_trace(const struct target *t, const struct result *r);
void kkctl_put_json_head(const struct target *t, bool ok);

/* ---- record.c: kkctl record ------------------------------------------------- */

int kkctl_record_main(struct kkctl_sel *sel, const char **hosts, int nh, int argc, char **argv);

/* ---- remote.c: -H ------------------------------------------------------------ */

int kkctl_remote_arg(const char *a, const char *b);
int kkctl_parse_host(const char *h, char *dest, size_t dl, char *port, size_t pl);
int kkctl_run_hosts(const char **hosts, int nh, const char *in, size_t inlen);
void kkctl_remote_drop(int n);
pid_t kkctl_ssh_open(const char *host, int *in, int *out, int *err);

#endif
