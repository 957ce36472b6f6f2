/* SPDX-License-Identifier: MIT */
/* What the library's facilities may ask of the control endpoint (not for kkctl). */
#ifndef KK_CONTROL_INTERNAL_H
#define KK_CONTROL_INTERNAL_H

#include <stdbool.h>

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

#endif
