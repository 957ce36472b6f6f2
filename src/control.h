/* SPDX-License-Identifier: MIT */
/* What the library's facilities may ask of the control endpoint (not for kkctl). */
#ifndef KK_CONTROL_INTERNAL_H
#define KK_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct kk_control_file_ops;

/*
 * A node of the file registry.  The library's own files ("static_keys",
 * "panic", ...) are static nodes that their facility owns, added by
 * kk_control_add_lib_file() from its constructor: no allocation at load, and
 * no endpoint (a library file says nothing about whether the program has
 * anything to control).  Files from kk_control_create_file() are allocated.
 */
struct kk_cfile {
	struct kk_cfile *next;
	const char *name;
	const struct kk_control_file_ops *ops;
	void *priv;
	bool lib;			/* a static node: never freed */
};

/* A static node for the library file @name_ served by @ops_ (priv NULL). */
#define KK_CONTROL_LIB_FILE(var, name_, ops_)					\
	static struct kk_cfile var = { NULL, name_, ops_, NULL, true }

/*
 * Add a library file (a constructor's job: each node once).  Lock-free; the
 * node is linked in, by name, when the registry is first used, where a name
 * already taken would be skipped.  Never starts the endpoint.
 */
void kk_control_add_lib_file(struct kk_cfile *f);

/*
 * There is something to control: an object with static-key or pr_debug sites
 * registered.  Starts the endpoint unless KK_CONTROL=0 (or it runs already);
 * while the library's threads are stopped, it starts at kk_threads_start().
 * Cheap after the first call.  Call it with no facility lock held.
 */
void kk_control_autostart(void);

/*
 * Refuse new connections from now on (the endpoint's thread is parked by a
 * panic and would never answer).  Lock-free and async-signal-safe: one fstat()
 * and one shutdown() on the listening socket, if it still is ours.
 */
void kk_control_refuse(void);

/*
 * One deadline and one descriptor that the endpoint's thread keeps for a
 * facility: the lease of dynamic_debug/session (src/dynamic_debug/session.c)
 * and the pidfd of its holder, for the session must end when its holder is
 * gone even if no client ever connects again.  Each turn the thread reads
 * *@due (atomic; CLOCK_MONOTONIC milliseconds, kk_now_ns() / 1000000; 0:
 * none) into its poll() timeout and polls *@watch (atomic; -1: none) for
 * POLLIN, and after the turn's requests calls @fire() with none of its locks
 * held: when *@watch was reported (readable, or closed under us: POLLNVAL),
 * or when *@due has come and no request is on its way in (one accepted and
 * not whole yet: a renewal that waited in the backlog counts), and at the
 * latest KK_CONTROL_TIMEOUT_MS after *@due.  While *@due is 0 and *@watch
 * -1 the thread waits with no timeout: no periodic wake-up.  Setting it
 * again is a no-op.
 */
void kk_control_set_timer(const uint64_t *due, const int *watch, void (*fire)(void));
/*
 * In a control file's handler: a pidfd (close-on-exec, at the lowest free
 * number: the caller moves it, kk_fd_adopt()) of the process whose request
 * it serves, its pid in *@pid, or -errno: -ESRCH with no such process (kk_control_write()) or
 * one whose pid this process's pid namespace does not see; the kernel's
 * refusal of pidfd_open() (ENOSYS, EPERM under seccomp, EMFILE).
 */
int kk_control_peer_pidfd(pid_t *pid);
/*
 * In a control file's handler: how many bytes of a reply the client's
 * socket takes at once, at most @want (its send buffer raised towards
 * @want as far as net.core.wmem_max lets it).  A reply no larger is queued
 * whole before the client reads, so the endpoint's deadline cannot cut it
 * (it closes the connection KK_CONTROL_TIMEOUT_MS after accept()): a
 * consuming read must not make a larger one.  @want when no client
 * (kk_control_write()).
 */
size_t kk_control_reply_room(size_t want);
/*
 * *due was set from a thread other than the endpoint's, which may be waiting
 * with no timeout: wake it (one connection to the endpoint, a descriptor for
 * microseconds on the calling thread).  Nothing when called on the
 * endpoint's thread, which reads *due before it waits again, or when the
 * endpoint does not run (it reads *due when it starts).  A control file's
 * handler may call it (it takes only a lock of its own, after the file
 * registry's); no facility lock may be held (fork() takes them after).
 */
void kk_control_timer_kick(void);

#endif
