// SPDX-License-Identifier: MIT
/*
 * The teardown paths around exit (script/exit_teardown.sh runs this; the
 * rule is in docs/jump_label.md, "Exit"): once the main program's
 * destructors ran, the process is exiting and objects are not unregistered
 * one by one; before that they are, as at any dlclose().
 *
 *   exit_teardown atexit   an atexit handler dlclose()s two objects with
 *                          sites and keys: both are unregistered (not
 *                          listed), and switching a key afterwards works
 *   exit_teardown threads  exit() from main while two threads switch keys and
 *                          queries and run sites that print (main's and a
 *                          dlopen()ed object's): exit status 0, no crash
 *   exit_teardown thread-exit  the same, exit() called by a third thread
 *   exit_teardown fork     a fork child switches, prints and returns from
 *                          main; the parent then dlclose()s and finds both
 *                          objects unregistered
 *
 * Exit 0 when every check passes; otherwise a message on stdout, exit 1.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>
#include "kktest.h"

static DEFINE_STATIC_KEY_FALSE(exit_key);
static void *mod, *plugin;
static void (*ddm_plain)(int);
static int (*plugin_site)(void);
static int ready[2];

__attribute__((noinline)) static int exit_site(int i)
{
	pr_debug("exit_teardown main %d\n", i);
	return static_branch_unlikely(&exit_key);
}

static void die(const char *what)
{
	printf("exit_teardown: %s\n", what);
	fflush(stdout);
	_exit(1);
}

static void load(void)
{
	mod = dlopen(kkt_build_path("test/lib/libdynamic_debug_mod.so"), RTLD_NOW | RTLD_LOCAL);
	plugin = dlopen(kkt_build_path("test/lib/libjump_label_plugin.so"), RTLD_NOW | RTLD_LOCAL);
	if (!mod || !plugin)
		die(dlerror());
	ddm_plain = (void (*)(int))dlsym(mod, "ddm_plain");
	plugin_site = (int (*)(void))dlsym(plugin, "jl_export_plugin_site");
	if (!ddm_plain || !plugin_site)
		die("dlsym");
}

/* Whether the file @name lists @what. */
static int listed(const char *name, const char *what)
{
	char *txt = NULL;
	int found;

	if (kk_control_read(name, &txt, NULL))
		die("kk_control_read");
	found = strstr(txt, what) != NULL;
	free(txt);
	return found;
}

/* dlclose() both objects: unregistered, and the registry still works. */
static void unload_and_check(void)
{
	if (!listed("dynamic_debug/control", "ddm plain one") || !listed("static_keys", "plugin_flag"))
		die("the objects were not listed while loaded");
	dlclose(mod);
	dlclose(plugin);
	if (listed("dynamic_debug/control", "ddm plain one"))
		die("dlclose()d object's sites still listed");
	if (listed("static_keys", "plugin_flag"))
		die("dlclose()d object's key still listed");
	if (static_branch_enable(&exit_key) || !exit_site(0))
		die("switching a key after the dlclose()");
}

static void *switcher(void *arg)
{
	(void)arg;
	for (int i = 0;; i++) {
		if (i % 2)
			static_branch_enable(&exit_key);
		else
			static_branch_disable(&exit_key);
		exit_site(i);
		ddm_plain(i);
		plugin_site();
		if (i == 0 && write(ready[1], "s", 1) != 1)
			die("write");
	}
	return NULL;
}

static void *querier(void *arg)
{
	(void)arg;
	for (int i = 0;; i++) {
		dynamic_debug_exec_queries(i % 2 ? "+pmfl" : "-p", NULL);
		ddm_plain(i);
		if (i == 0 && write(ready[1], "q", 1) != 1)
			die("write");
	}
	return NULL;
}

static void *quitter(void *arg)
{
	(void)arg;
	exit(0);
}

/* Start the two threads and wait until each has run its loop once. */
static void start_threads(void)
{
	pthread_t t;
	char c[2];

	if (pipe(ready) || pthread_create(&t, NULL, switcher, NULL) ||
	    pthread_create(&t, NULL, querier, NULL))
		die("pipe or pthread_create");
	for (size_t got = 0; got < sizeof(c);) {
		ssize_t n = read(ready[0], c + got, sizeof(c) - got);

		if (n <= 0)
			die("read");
		got += (size_t)n;
	}
}

static int fork_child_exits(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		static_branch_enable(&exit_key);
		exit_site(1);
		ddm_plain(1);
		return 0;	/* exit() from main: the child's destructors */
	}
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
		die("the fork child did not exit with 0");
	unload_and_check();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int null = open("/dev/null", O_WRONLY);

	/* the sites print to stderr: not into the test's log */
	if (null < 0 || dup2(null, 2) < 0)
		die("/dev/null");
	load();
	if (!strcmp(mode, "atexit")) {
		if (atexit(unload_and_check))
			die("atexit");
		exit(0);
	}
	if (!strcmp(mode, "threads")) {
		start_threads();
		exit(0);
	}
	if (!strcmp(mode, "thread-exit")) {
		pthread_t t;

		start_threads();
		if (pthread_create(&t, NULL, quitter, NULL))
			die("pthread_create");
		for (int i = 0;; i++) {
			dynamic_debug_exec_queries(i % 2 ? "+p" : "-p", "dynamic_debug_mod");
			exit_site(i);
		}
	}
	if (!strcmp(mode, "fork"))
		return fork_child_exits();
	die("usage: exit_teardown atexit|threads|thread-exit|fork");
}
