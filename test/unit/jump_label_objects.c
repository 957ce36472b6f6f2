// SPDX-License-Identifier: MIT
/* Static keys across ELF objects: keys used from dlopen'ed objects, dlclose
 * while another thread toggles, and fork(). */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "kktest.h"

/* Exported (the test links with -rdynamic) so that the object can use it. */
DEFINE_STATIC_KEY_FALSE(jump_label_shared_key);

__attribute__((noinline)) static int local_site(void)
{
	return static_branch_unlikely(&jump_label_shared_key);
}

struct user {
	void *h;
	int (*shared)(void), (*shared_likely)(void), (*own)(void);
	struct static_key_true *(*key)(void);
};

static void user_open(struct user *u)
{
	u->h = dlopen(kkt_build_path("test/lib/libjump_label_user.so"), RTLD_NOW | RTLD_LOCAL);
	cr_assert(u->h, "dlopen: %s", dlerror());
	u->shared = (int (*)(void))dlsym(u->h, "jump_label_user_shared");
	u->shared_likely = (int (*)(void))dlsym(u->h, "jump_label_user_shared_likely");
	u->own = (int (*)(void))dlsym(u->h, "jump_label_user_own");
	u->key = (struct static_key_true *(*)(void))dlsym(u->h, "jump_label_user_key");
	cr_assert(u->shared && u->shared_likely && u->own && u->key);
}

static struct kk_jump_label_stats stats(void)
{
	struct kk_jump_label_stats st;

	kk_jump_label_get_stats(&st);
	return st;
}

Test(jump_label_objects, key_defined_here_used_there)
{
	struct user u;

	user_open(&u);
	cr_expect_eq(u.shared(), 0);
	cr_expect_eq(u.shared_likely(), 0);
	cr_assert_eq(static_branch_enable(&jump_label_shared_key), 0);
	cr_expect_eq(u.shared(), 1);
	cr_expect_eq(u.shared_likely(), 1);
	cr_expect_eq(local_site(), 1);
	cr_assert_eq(static_branch_disable(&jump_label_shared_key), 0);
	cr_expect_eq(u.shared(), 0);
	cr_expect_eq(local_site(), 0);
	dlclose(u.h);
}

Test(jump_label_objects, late_load_takes_the_current_state)
{
	struct user u;

	cr_assert_eq(static_branch_enable(&jump_label_shared_key), 0);
	user_open(&u);		/* compiled as NOP; must come up as taken */
	cr_expect_eq(u.shared(), 1);
	cr_expect_eq(u.shared_likely(), 1);
	dlclose(u.h);
}

Test(jump_label_objects, key_owned_by_the_object)
{
	struct user u;

	user_open(&u);
	cr_expect_eq(u.own(), 1);
	cr_assert_eq(static_branch_disable(u.key()), 0);
	cr_expect_eq(u.own(), 0);
	dlclose(u.h);
}

Test(jump_label_objects, dlclose_forgets_sites_and_keys)
{
	struct kk_jump_label_stats before = stats(), loaded, after;
	struct user u;
	char *txt = NULL;

	user_open(&u);
	loaded = stats();
#ifndef KK_NO_JUMP_LABEL
	cr_expect_eq(loaded.sites, before.sites + 3);
	cr_expect_eq(loaded.objects, before.objects + 1);
#else
	cr_expect_eq(loaded.sites, before.sites, "the fallback build has no sites");
#endif
	dlclose(u.h);
	after = stats();
	cr_expect_eq(after.sites, before.sites);
	cr_expect_eq(after.objects, before.objects);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_expect(!strstr(txt, "jump_label_lib_key"), "unloaded key still listed:\n%s", txt);
	free(txt);
	/* Patching after the unload must not touch the unmapped text. */
	cr_expect_eq(static_branch_enable(&jump_label_shared_key), 0, "%s", kk_jump_label_strerror());
	cr_expect_eq(local_site(), 1);
}

static atomic_int stop;
static atomic_int toggle_errors;
static atomic_int rounds;	/* the main thread's dlopen rounds begun */

/*
 * Besides toggling, read the listing: both run under the registry lock while
 * the main thread's dlopen/dlclose run constructors under the loader lock,
 * so a lock-order mistake between the two shows up here as a hang.
 */
static void *toggler(void *arg)
{
	int done = 0;

	(void)arg;
	while (!atomic_load(&stop)) {
		struct static_key_false *fresh;
		char *txt = NULL;

		/* At most two toggles per round of the main thread: a mutex is not
		 * fair, and a toggler that always takes the registry lock again
		 * at once starves the loader's registrations (seen in the arm64
		 * guest, where each batch takes long). */
		if (done >= 2 * atomic_load(&rounds)) {
			sched_yield();
			continue;
		}
		done++;
		fresh = malloc(sizeof(*fresh));

		if (static_branch_enable(&jump_label_shared_key) || static_branch_disable(&jump_label_shared_key))
			atomic_fetch_add(&toggle_errors, 1);
		/* a key the registry has never seen: creates a record */
		*fresh = (struct static_key_false)STATIC_KEY_FALSE_INIT;
		if (static_branch_enable(fresh))
			atomic_fetch_add(&toggle_errors, 1);
		if (kk_control_read("static_keys", &txt, NULL))
			atomic_fetch_add(&toggle_errors, 1);
		free(txt);
		/* (the record of a heap key is never dropped; keep it alive) */
	}
	return NULL;
}

Test(jump_label_objects, dlopen_dlclose_while_toggling, .timeout = 120)
{
	pthread_t th;

	pthread_create(&th, NULL, toggler, NULL);
	for (int i = 0; i < 200; i++) {
		struct user u;
		int v;

		atomic_fetch_add(&rounds, 1);
		user_open(&u);
		v = u.shared();
		cr_assert(v == 0 || v == 1);
		/* One call: the toggler may flip the key between two (tally
		 * run 16 compared two calls, in the arm64 guest). */
		v = u.shared_likely();
		cr_assert(v == 0 || v == 1);
		dlclose(u.h);
	}
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	cr_expect_eq(atomic_load(&toggle_errors), 0, "%s", kk_jump_label_strerror());
}

Test(jump_label_objects, fork_keeps_state_and_can_patch)
{
	int st;
	pid_t pid;

	bool parent_served = kk_control_socket_path() != NULL;

	cr_assert_eq(static_branch_enable(&jump_label_shared_key), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *sock;
		char want[32];

		if (local_site() != 1 || !static_key_enabled(&jump_label_shared_key))
			_exit(10);
		if (static_branch_disable(&jump_label_shared_key) || local_site() != 0)
			_exit(11);
		if (static_branch_enable(&jump_label_shared_key) || local_site() != 1)
			_exit(12);
		sock = kk_control_socket_path();
		snprintf(want, sizeof(want), "@kernelkit/%d", (int)getpid());
		if (parent_served ? !sock || strcmp(sock, want) : sock != NULL)
			_exit(13);	/* an endpoint of its own iff the parent had one */
		_exit(0);
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %#x", st);
	/* The child's patching did not reach the parent. */
	cr_expect_eq(local_site(), 1);
	cr_expect_eq(static_branch_disable(&jump_label_shared_key), 0);
	cr_expect_eq(local_site(), 0);
}
