// SPDX-License-Identifier: MIT
/*
 * State follows exec: the queries applied live to this process (and the
 * KK_DYNDBG / KK_DYNDBG_INHERIT it started with) are handed to every image it
 * execs, as ONE environment entry, KK_DYNDBG_INHERIT=<queries, one a line>,
 * added to a COPY of the envp of that one exec call.  The program's environ
 * is never written (no setenv race with its other threads), and nothing has
 * to be found by the new image but its own environment (no file, no
 * descriptor: a sandboxed child reads it as it reads argv).  The new image's
 * kernelkit applies the entry at start-up after KK_DYNDBG (see core.c).
 *
 * The state: the query texts in the order they were applied, compacted (an
 * identical query applied again replaces the earlier one: every query sets,
 * clears or keeps each flag bit of the sites it matches, and what it matches
 * does not depend on the flags, so A,B,A has the effect of B,A).  Recorded
 * under ddebug_lock by core.c, rendered into a new string when it changes and
 * published with one atomic store.  A string an exec may still read (a
 * thread between loading the pointer and copying it, before its system
 * call) is freed only when no exec is in flight (the store/load pairs are
 * seq_cst: a writer that sees no exec in flight knows any later exec loads
 * the new string).  No exec is in flight during its system call, so a vfork
 * child whose exec succeeds leaves no count in its parent's memory.
 *
 * The exec family is interposed: execve, execv, execvp, execvpe, execl,
 * execle, execlp and fexecve are defined here and end in the execve/execveat
 * system call, so they work alike in a dynamic and a static program; the
 * posix_spawn pair is in inherit_spawn.c (shared library only).  execve,
 * execl, execle, execv and fexecve are async-signal-safe, as POSIX requires:
 * no malloc, no lock (the envp copy is on the stack, or mmap'ed when the
 * environment or the state is large: see struct exec_area for how a vfork
 * child's area is unmapped).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/internal.h"
#include "dynamic_debug/query.h"

#define INH_NAME	"KK_DYNDBG_INHERIT"
#define INH_EQ		INH_NAME "="
#define INH_EQ_LEN	(sizeof(INH_EQ) - 1)
#define INH_MAX		(32 * 1024)	/* bytes of queries (the kernel allows 128 KiB per string) */
#define ENV_ON_STACK	256		/* envp entries copied on the stack, else mmap */
#define ENTRY_ON_STACK	2048		/* an entry shorter than this is copied to the stack */

extern char **environ;

/* Under ddebug_lock (core.c). */
static char **state;
static size_t nstate;
static char **retired;
static size_t nretired;

static char *_Atomic inh_entry;		/* "KK_DYNDBG_INHERIT=..." or NULL (no state) */
static atomic_ulong inh_inflight;	/* execs between loading inh_entry and returning */
static atomic_int inh_on = 1;
static int inh_env_off;			/* started with KK_DYNDBG_INHERIT=0: pass it on */

static const char inh_off_entry[] = INH_EQ "0";

/* ---- the memory of one exec (async-signal-safe) ------------------------------------ */

/*
 * The copy of an envp of more than ENV_ON_STACK entries, or of an entry of
 * ENTRY_ON_STACK bytes or more, is in an area mmap'ed for that one exec (the
 * stack of a thread may be small).  A failed exec unmaps it; a successful
 * one replaces the memory it is in.  Except in a vfork child: it runs in its
 * parent's memory, its exec replaces the child's memory, not the parent's,
 * and none of its code runs after a successful exec.  So a vfork child hands
 * the area to the kernel: @owner becomes the child's clear_child_tid
 * (set_tid_address(), the word glibc's pthread_join() waits on), which the
 * kernel zeroes when the child leaves our memory, by exec or exit, after it
 * copied the strings.  Until then the area is on left_behind; the next exec
 * or spawn of any thread unmaps the areas whose owner is 0.  A loop of vfork
 * and execve keeps one area mapped, whatever the number of spawns.
 */
struct exec_area {
	_Atomic int owner;		/* 32 bits, as the kernel writes it; 0: free to unmap */
	size_t len;			/* of the mapping */
	struct exec_area *next;		/* on left_behind */
	char *env[];			/* the envp copy, then the entry copy */
};

static struct exec_area *_Atomic left_behind;
static _Atomic pid_t inh_pid;		/* this process (a vfork child has another pid) */

static struct exec_area *area_map(size_t nenv, size_t elen)
{
	size_t len = sizeof(struct exec_area) + nenv * sizeof(char *) + elen + 1;
	struct exec_area *a = mmap(NULL, len, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (a == MAP_FAILED)
		return NULL;
	a->len = len;
	return a;
}

static void area_unmap(struct exec_area *a)
{
	int e = errno;

	munmap(a, a->len);
	errno = e;
}

static void push_left_behind(struct exec_area *a)
{
	a->next = atomic_load(&left_behind);
	while (!atomic_compare_exchange_weak(&left_behind, &a->next, a))
		;
}

/* Unmap the areas of vfork children that left our memory. */
static void reap_left_behind(void)
{
	struct exec_area *a, *next;

	if (!atomic_load(&left_behind))
		return;
	for (a = atomic_exchange(&left_behind, NULL); a; a = next) {
		next = a->next;
		if (atomic_load(&a->owner))
			push_left_behind(a);	/* its child is still in exec */
		else
			area_unmap(a);
	}
}

/*
 * A fork child's own pid is recorded by inherit_fork_child(); a process made
 * without the atfork handlers (syscall(SYS_fork), _Fork()) is taken for a
 * vfork child, which is harmless: if the exec fails its clear_child_tid is
 * set to NULL, and only a pthread_join() of that one thread would read it.
 */
static bool in_vfork_child(void)
{
	pid_t p = atomic_load(&inh_pid);

	return p && getpid() != p;
}

/* In a vfork child, before the exec: the kernel zeroes @a->owner when we leave. */
static bool area_leave(struct exec_area *a)
{
	atomic_store(&a->owner, 1);
	if (syscall(SYS_set_tid_address, (int *)&a->owner) < 0) {
		atomic_store(&a->owner, 0);
		return false;
	}
	push_left_behind(a);
	return true;
}

/* In a vfork child whose exec failed: take @a back, then it may go. */
static void area_return(struct exec_area *a)
{
	int e = errno;

	syscall(SYS_set_tid_address, NULL);	/* a vfork child has none */
	atomic_store(&a->owner, 0);		/* the last touch: any thread may unmap it now */
	reap_left_behind();
	errno = e;
}

/* ---- the state -------------------------------------------------------------------- */

static void free_retired_locked(void)
{
	if (atomic_load(&inh_inflight))
		return;
	for (size_t i = 0; i < nretired; i++)
		free(retired[i]);
	nretired = 0;
}

/* Who we are, for in_vfork_child(): needed only once there is something to
 * pass on, and taken then, not at start-up (one system call less there). */
static void note_pid(void)
{
	if (!atomic_load(&inh_pid))
		atomic_store(&inh_pid, getpid());
}

static void publish_locked(char *s)
{
	char *old = atomic_exchange(&inh_entry, s);

	note_pid();
	if (old) {
		char **nr = realloc(retired, (nretired + 1) * sizeof(*nr));

		if (!nr) {		/* keep it forever rather than free it under an exec */
			free_retired_locked();
			return;
		}
		retired = nr;
		retired[nretired++] = old;
	}
	free_retired_locked();
}

static void render_locked(void)
{
	size_t len = 0;
	char *s, *p;

	for (size_t i = 0; i < nstate; i++)
		len += strlen(state[i]) + 1;
	if (!len) {
		publish_locked(NULL);
		return;
	}
	if (len > INH_MAX) {
		kk_warn_once(warned_big, "dynamic-debug state of %zu bytes is over the %d-byte "
			     "limit of " INH_NAME ": images exec'd from now on start from "
			     "their own defaults", len, INH_MAX);
		publish_locked(NULL);
		return;
	}
	s = malloc(INH_EQ_LEN + len);
	if (!s) {
		kk_warn_once(warned_oom, "out of memory: images exec'd from now on may not "
			     "inherit the latest dynamic-debug state");
		return;		/* the previous state stays published */
	}
	memcpy(s, INH_EQ, INH_EQ_LEN);
	p = s + INH_EQ_LEN;
	for (size_t i = 0; i < nstate; i++) {
		size_t n = strlen(state[i]);

		memcpy(p, state[i], n);
		p += n;
		*p++ = '\n';
	}
	p[-1] = '\0';
	publish_locked(s);
}

/* Append @text (@n bytes, prefixed "module @mod " when @mod), dropping an equal earlier one. */
static int record_one_locked(const char *mod, const char *text)
{
	size_t ml = mod ? strlen(mod) + 8 : 0, tl = strlen(text);
	char *s = malloc(ml + tl + 1), **ns;

	if (!s)
		return -ENOMEM;
	if (mod) {
		memcpy(s, "module ", 7);
		memcpy(s + 7, mod, ml - 8);
		s[ml - 1] = ' ';
	}
	memcpy(s + ml, text, tl + 1);
	for (size_t i = 0; i < nstate; i++) {
		if (strcmp(state[i], s))
			continue;
		free(state[i]);
		memmove(&state[i], &state[i + 1], (nstate - i - 1) * sizeof(*state));
		nstate--;
		break;
	}
	ns = realloc(state, (nstate + 1) * sizeof(*ns));
	if (!ns) {
		free(s);
		return -ENOMEM;
	}
	state = ns;
	state[nstate++] = s;
	return 0;
}

void kk_dd_inherit_record_locked(const struct ddebug_block *b, const char *modname)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct ddebug_query *q = &b->q[i];
		/* the module the caller implied travels with the query */
		const char *mod = (modname && !q->exact && q->module == modname) ? modname : NULL;

		if (record_one_locked(mod, q->text))
			kk_warn_once(warned_rec, "out of memory: the dynamic-debug state "
				     "exec'd images inherit is incomplete");
	}
	render_locked();
}

const char *kk_dd_inherit_env(void)
{
	const char *e = kk_getenv(INH_NAME);
	bool on;

	if (!e)
		return NULL;
	if (!kk_parse_bool(e, &on)) {
		if (!on) {
			inh_env_off = 1;
			atomic_store(&inh_on, 0);
			note_pid();
		}
		return NULL;
	}
	return e;
}

KK_EXPORT int kk_dyndbg_set_inherit(int on)
{
	return atomic_exchange(&inh_on, on ? 1 : 0);
}

/* ---- the control file -------------------------------------------------------------- */

static int inherit_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%d\n", atomic_load(&inh_on)) < 0 ? -ENOMEM : 0;
}

static int inherit_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	char v[16];
	bool on;

	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len < sizeof(v)) {
		memcpy(v, buf, len);
		v[len] = '\0';
		if (!kk_parse_bool(v, &on)) {
			kk_dyndbg_set_inherit(on);
			return 0;
		}
	}
	kk_buf_printf(out, "expected 0 or 1\n");
	return -EINVAL;
}

static const struct kk_control_file_ops inherit_fops = {
	.show = inherit_show,
	.write = inherit_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(inherit_file, "dynamic_debug/inherit", &inherit_fops);

/*
 * A thread of the parent may have been inside an exec: none is in the child.
 * The areas left behind wait for vfork children of the parent, which share
 * the parent's memory, not the child's: the child's copies are free.
 */
static void inherit_fork_child(void)
{
	struct exec_area *a, *next;

	atomic_store(&inh_inflight, 0);
	atomic_store(&inh_pid, getpid());
	for (a = atomic_exchange(&left_behind, NULL); a; a = next) {
		next = a->next;
		area_unmap(a);
	}
}

static const struct kk_fork_ops inherit_fork_ops = {
	KK_INIT_DYNDBG, NULL, NULL, inherit_fork_child
};

void kk_dd_inherit_init(void)
{
	kk_fork_register(&inherit_fork_ops);
	kk_control_add_lib_file(&inherit_file);
}

/* ---- building the envp of one exec (async-signal-safe) ---------------------------- */

static bool is_inh(const char *e)
{
	return !strncmp(e, INH_EQ, INH_EQ_LEN);
}

/*
 * What this exec's image gets: NULL (no entry) or the entry to put in place
 * of any KK_DYNDBG_INHERIT entry of @envp.  *@keep: pass @envp as it is.
 * Call with an exec in flight (inh_inflight).
 */
static const char *entry_for(char *const envp[], size_t *n, bool *keep)
{
	const char *entry;
	bool has = false;
	size_t i;

	for (i = 0; envp && envp[i]; i++) {
		if (!is_inh(envp[i]))
			continue;
		has = true;
		if (!strcmp(envp[i], inh_off_entry)) {	/* this exec opts out */
			*keep = true;
			return NULL;
		}
	}
	*n = i;
	if (atomic_load(&inh_on))
		entry = atomic_load(&inh_entry);
	else
		entry = inh_env_off ? inh_off_entry : NULL;
	*keep = !entry && !has;
	return entry;
}

/* @envp without its KK_DYNDBG_INHERIT entries, plus @entry; @out has room for n + 2. */
static void fill(char **out, char *const envp[], const char *entry)
{
	size_t k = 0;

	for (size_t i = 0; envp && envp[i]; i++)
		if (!is_inh(envp[i]))
			out[k++] = envp[i];
	if (entry)
		out[k++] = (char *)entry;
	out[k] = NULL;
}

/*
 * What an exec or a spawn does with its envp: @env is the copy with the
 * state, in @a (NULL: on the stack), or NULL: pass @envp as it is.  The
 * function owns @a.
 */
typedef int with_env_fn(struct exec_area *a, char *const envp[], char **env, void *arg);

/*
 * Call @fn with @envp carrying the state.  The entry is copied (to the stack
 * or the area) and the published string released before @fn runs, so
 * nothing of the state is in use during the exec: a vfork child that execs
 * leaves no exec "in flight" in its parent.  The areas of vfork children
 * that have left are unmapped first.
 */
static int with_state(char *const envp[], with_env_fn *fn, void *arg)
{
	struct exec_area *a = NULL;
	const char *entry;
	size_t n = 0, elen;
	bool keep, small;

	reap_left_behind();
	atomic_fetch_add(&inh_inflight, 1);
	entry = entry_for(envp, &n, &keep);
	elen = entry ? strlen(entry) : 0;
	small = n + 2 <= ENV_ON_STACK && elen < ENTRY_ON_STACK;
	if (keep || (!small && !(a = area_map(n + 2, elen)))) {
		atomic_fetch_sub(&inh_inflight, 1);
		if (!keep)
			kk_warn_once(warned_map, "out of memory: an image was exec'd without "
				     "the dynamic-debug state");
		return fn(NULL, envp, NULL, arg);
	}
	{
		char ebuf[small ? elen + 1 : 1];
		char *stack_env[small ? n + 2 : 1];
		char **env = small ? stack_env : a->env;
		char *e = small ? ebuf : (char *)(a->env + n + 2);

		if (entry)
			entry = memcpy(e, entry, elen + 1);
		atomic_fetch_sub(&inh_inflight, 1);
		fill(env, envp, entry);
		return fn(a, envp, env, arg);
	}
}

/* ---- posix_spawn (inherit_spawn.c) ------------------------------------------------- */

struct spawn_call {
	int (*call)(char *const env[], void *arg);
	void *arg;
};

/* In the parent (libc's child runs libc's own execve): the area is ours to unmap. */
static int spawn_copy(struct exec_area *a, char *const envp[], char **env, void *arg)
{
	const struct spawn_call *c = arg;
	int r = c->call(env ? env : envp, c->arg);

	if (a)
		area_unmap(a);
	return r;
}

int kk_dd_inherit_spawn(char *const envp[], int (*call)(char *const env[], void *arg), void *arg)
{
	struct spawn_call c = { call, arg };

	return with_state(envp, spawn_copy, &c);
}

/* ---- the exec family --------------------------------------------------------------- */

struct exec_call {
	int dirfd;			/* AT_FDCWD: execve(), else execveat() */
	const char *path;
	char *const *argv;
	int flags;
};

static int sys_exec(const struct exec_call *x, char *const envp[])
{
	return (int)(x->dirfd == AT_FDCWD ? syscall(SYS_execve, x->path, x->argv, envp) :
		     syscall(SYS_execveat, x->dirfd, x->path, x->argv, envp, x->flags));
}

/* The system call with the copy: -1 and errno, as execve(). */
static int exec_copy(struct exec_area *a, char *const envp[], char **env, void *arg)
{
	const struct exec_call *x = arg;
	bool left = a && in_vfork_child();
	int r;

	if (!env)
		return sys_exec(x, envp);
	if (left && !area_leave(a)) {
		kk_warn_once(warned_tid, "set_tid_address() refused: images exec'd from a vfork "
			     "child with a large environment go without the dynamic-debug state");
		area_unmap(a);
		return sys_exec(x, envp);
	}
	r = sys_exec(x, env);
	if (left)
		area_return(a);
	else if (a)
		area_unmap(a);
	return r;
}

static int exec_with_state(int dirfd, const char *path, char *const argv[], char *const envp[],
			   int flags)
{
	struct exec_call x = { dirfd, path, argv, flags };

	return with_state(envp, exec_copy, &x);
}

KK_INTERPOSE(execve)
int kk_interpose_execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_with_state(AT_FDCWD, path, argv, envp, 0);
}

KK_INTERPOSE(execv)
int kk_interpose_execv(const char *path, char *const argv[])
{
	return kk_interpose_execve(path, argv, environ);
}

KK_INTERPOSE(fexecve)
int kk_interpose_fexecve(int fd, char *const argv[], char *const envp[])
{
	char path[32] = "/proc/self/fd/";
	char digits[12];
	int n = 0, e, len = 14;
	unsigned int u;

	if (fd < 0) {
		errno = EINVAL;
		return -1;
	}
	exec_with_state(fd, "", argv, envp, AT_EMPTY_PATH);
	if (errno != ENOSYS)
		return -1;
	/* as glibc: kernels without execveat() go through /proc */
	e = errno;
	u = (unsigned int)fd;
	do
		digits[n++] = (char)('0' + u % 10);
	while ((u /= 10));
	while (n)
		path[len++] = digits[--n];
	path[len] = '\0';
	kk_interpose_execve(path, argv, envp);
	if (errno == ENOENT)
		errno = e == ENOSYS ? EBADF : e;
	return -1;
}

/* A file that is not an executable format: run it with /bin/sh, as glibc does. */
static void exec_script(const char *path, char *const argv[], char *const envp[])
{
	size_t argc = 0;

	while (argv[argc])
		argc++;
	{
		char *nargv[argc + 3];

		nargv[0] = (char *)"/bin/sh";
		nargv[1] = (char *)path;
		for (size_t i = 1; i <= argc; i++)
			nargv[i + 1] = argv[i];
		if (!argc)
			nargv[2] = NULL;
		kk_interpose_execve(nargv[0], nargv, envp);
	}
}

KK_INTERPOSE(execvpe)
int kk_interpose_execvpe(const char *file, char *const argv[], char *const envp[])
{
	const char *path, *p, *z;
	size_t flen;
	bool eacces = false;

	if (!*file) {
		errno = ENOENT;
		return -1;
	}
	if (strchr(file, '/')) {
		kk_interpose_execve(file, argv, envp);
		if (errno == ENOEXEC)
			exec_script(file, argv, envp);
		return -1;
	}
	flen = strlen(file);
	if (flen > NAME_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	path = getenv("PATH");
	if (!path)
		path = "/bin:/usr/bin";
	for (p = path;; p = z + 1) {
		char buf[PATH_MAX];
		size_t l;

		z = strchrnul(p, ':');
		l = (size_t)(z - p);
		if (l + 1 + flen + 1 <= sizeof(buf)) {
			memcpy(buf, p, l);
			if (l)
				buf[l++] = '/';
			memcpy(buf + l, file, flen + 1);
			kk_interpose_execve(buf, argv, envp);
			switch (errno) {
			case EACCES:
				eacces = true;
				/* fall through */
			case ENOENT:
			case ENOTDIR:
			case ESTALE:
			case ENODEV:
			case ETIMEDOUT:
				break;
			case ENOEXEC:
				exec_script(buf, argv, envp);
				return -1;
			default:
				return -1;
			}
		}
		if (!*z)
			break;
	}
	errno = eacces ? EACCES : ENOENT;
	return -1;
}

KK_INTERPOSE(execvp)
int kk_interpose_execvp(const char *file, char *const argv[])
{
	return kk_interpose_execvpe(file, argv, environ);
}

static size_t count_args(const char *arg0, va_list ap)
{
	size_t n = 0;

	if (!arg0)
		return 0;
	while (va_arg(ap, char *))
		n++;
	return n + 1;
}

KK_INTERPOSE(execl)
int kk_interpose_execl(const char *path, const char *arg, ...)
{
	va_list ap, aq;
	size_t argc;

	va_start(ap, arg);
	va_copy(aq, ap);
	argc = count_args(arg, aq);
	va_end(aq);
	{
		char *argv[argc + 1];

		if (argc)
			argv[0] = (char *)arg;
		for (size_t i = 1; i < argc; i++)
			argv[i] = va_arg(ap, char *);
		argv[argc] = NULL;
		va_end(ap);
		return kk_interpose_execve(path, argv, environ);
	}
}

KK_INTERPOSE(execlp)
int kk_interpose_execlp(const char *file, const char *arg, ...)
{
	va_list ap, aq;
	size_t argc;

	va_start(ap, arg);
	va_copy(aq, ap);
	argc = count_args(arg, aq);
	va_end(aq);
	{
		char *argv[argc + 1];

		if (argc)
			argv[0] = (char *)arg;
		for (size_t i = 1; i < argc; i++)
			argv[i] = va_arg(ap, char *);
		argv[argc] = NULL;
		va_end(ap);
		return kk_interpose_execvpe(file, argv, environ);
	}
}

KK_INTERPOSE(execle)
int kk_interpose_execle(const char *path, const char *arg, ...)
{
	va_list ap, aq;
	size_t argc;

	va_start(ap, arg);
	va_copy(aq, ap);
	argc = count_args(arg, aq);
	va_end(aq);
	{
		char *argv[argc + 1];
		char *const *envp;

		if (argc)
			argv[0] = (char *)arg;
		for (size_t i = 1; i < argc; i++)
			argv[i] = va_arg(ap, char *);
		if (argc)
			(void)va_arg(ap, char *);	/* the NULL */
		argv[argc] = NULL;
		envp = va_arg(ap, char *const *);
		va_end(ap);
		return kk_interpose_execve(path, argv, envp);
	}
}
