// SPDX-License-Identifier: MIT
/*
 * posix_spawn() and posix_spawnp() carry the dynamic-debug state too (see
 * inherit.c): the real functions are called with a copy of the envp given
 * that has the KK_DYNDBG_INHERIT entry.  A NULL envp keeps libc's meaning:
 * glibc and musl pass it to execve(), and Linux takes it for an empty list,
 * so the child gets the entry alone (never our environ: its secrets were not
 * the caller's to give).  The copy is made as for an exec, not malloc'ed
 * (memory stays flat whatever the allocator).  The real ones are found with
 * dlsym(RTLD_NEXT), so this file is in the shared library only: a static
 * program has no "next" object to find them in (its spawned images start
 * from their own defaults, plus whatever KK_DYNDBG_INHERIT its environment
 * holds).
 */
#include <dlfcn.h>
#include <errno.h>
#include <spawn.h>

#include "common/internal.h"
#include "dynamic_debug/internal.h"

typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);

static spawn_fn *next_fn(const char *name, spawn_fn **cache)
{
	spawn_fn *f = __atomic_load_n(cache, __ATOMIC_ACQUIRE);

	if (!f) {
		f = (spawn_fn *)dlsym(RTLD_NEXT, name);
		__atomic_store_n(cache, f, __ATOMIC_RELEASE);
	}
	return f;
}

struct spawn_args {
	spawn_fn *real;
	pid_t *pid;
	const char *path;
	const posix_spawn_file_actions_t *fa;
	const posix_spawnattr_t *attr;
	char *const *argv;
};

static int call_real(char *const env[], void *arg)
{
	const struct spawn_args *s = arg;

	return s->real(s->pid, s->path, s->fa, s->attr, s->argv, env);
}

static int spawn_with_state(spawn_fn *real, pid_t *pid, const char *path,
			    const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
			    char *const argv[], char *const envp[])
{
	struct spawn_args s = { real, pid, path, fa, attr, argv };

	if (!real)
		return ENOSYS;
	return kk_dd_inherit_spawn(envp, call_real, &s);
}

KK_INTERPOSE(posix_spawn)
int kk_interpose_posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn *real;

	return spawn_with_state(next_fn("posix_spawn", &real), pid, path, fa, attr, argv, envp);
}

KK_INTERPOSE(posix_spawnp)
int kk_interpose_posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static spawn_fn *real;

	return spawn_with_state(next_fn("posix_spawnp", &real), pid, file, fa, attr, argv, envp);
}
