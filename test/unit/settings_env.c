// SPDX-License-Identifier: MIT
/*
 * The facilities' load-time settings go through the one grammar: each
 * accepted spelling works, and an unknown value prints exactly one line
 * ("kernelkit: ignoring KK_X=...: ...") and leaves the default.  Runs
 * test/progs/kk_env_state, which prints the state the settings control.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kktest.h"

struct result {
	int status;
	char out[4096];
	char err[8192];
};

static void slurp(int fd, char *buf, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap - 1 && (n = read(fd, buf + got, cap - 1 - got)) > 0)
		got += (size_t)n;
	buf[got] = '\0';
	close(fd);
}

/* Run kk_env_state [arg] with the NAME=VALUE settings of @env (NULL-terminated). */
static struct result run(const char *arg, const char *const *env)
{
	static struct result r;
	int out[2], err[2];
	pid_t pid;

	memset(&r, 0, sizeof(r));
	cr_assert_eq(pipe(out), 0);
	cr_assert_eq(pipe(err), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		const char *prog = kkt_build_path("test/progs/kk_env_state");

		dup2(out[1], 1);
		dup2(err[1], 2);
		close(out[0]);
		close(err[0]);
		/* only the settings under test */
		for (char **e = environ; *e;) {
			if (!strncmp(*e, "KK_", 3) && strncmp(*e, "KK_BUILD=", 9)) {
				char name[256];
				size_t n = strcspn(*e, "=");

				snprintf(name, sizeof(name), "%.*s", (int)n, *e);
				unsetenv(name);
			} else {
				e++;
			}
		}
		setenv("KK_CONTROL", "0", 1);
		for (; env && *env; env++)
			putenv((char *)*env);
		execl(prog, prog, arg, (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	slurp(out[0], r.out, sizeof(r.out));
	slurp(err[0], r.err, sizeof(r.err));
	waitpid(pid, &r.status, 0);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "exit %d\n%s", r.status,
		  r.err);
	return r;
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

static void assert_state(const struct result *r, const char *line)
{
	char want[256];

	snprintf(want, sizeof(want), "\n%s\n", line);
	cr_assert(strstr(r->out, want), "no \"%s\" in:\n%s", line, r->out);
}

/* exactly one warning line, naming the variable and its value */
static void assert_one_warning(const struct result *r, const char *setting)
{
	char want[256];

	snprintf(want, sizeof(want), "kernelkit: ignoring %s: ", setting);
	cr_assert_eq(lines(r->err), 1, "stderr:\n%s", r->err);
	cr_assert(!strncmp(r->err, want, strlen(want)), "stderr:\n%s", r->err);
}

Test(settings_env, debug_objects_accepts_every_boolean_spelling)
{
	static const char *const on[] = { "1", "y", "Yes", "ON", "true" };
	static const char *const off[] = { "0", "N", "no", "Off", "FALSE" };
	char buf[64];

	for (size_t i = 0; i < 5; i++) {
		const char *env[] = { buf, NULL };
		struct result r;

		snprintf(buf, sizeof(buf), "KK_DEBUG_OBJECTS=%s", on[i]);
		r = run(NULL, env);
		assert_state(&r, "debug_objects=1");
		cr_assert_str_empty(r.err);
		snprintf(buf, sizeof(buf), "KK_DEBUG_OBJECTS=%s", off[i]);
		r = run(NULL, env);
		assert_state(&r, "debug_objects=0");
		cr_assert_str_empty(r.err);
	}
}

Test(settings_env, unknown_boolean_warns_once_and_keeps_the_default)
{
	const char *env[] = { "KK_DEBUG_OBJECTS=maybe", NULL };
	struct result r = run(NULL, env);

	assert_state(&r, "debug_objects=0");
	assert_one_warning(&r, "KK_DEBUG_OBJECTS=maybe");
	cr_assert(strstr(r.err, "not a boolean"), "%s", r.err);

	/* "2" and "yes please" meant "on" to the old parser */
	env[0] = "KK_DEBUG_OBJECTS=yes please";
	r = run(NULL, env);
	assert_state(&r, "debug_objects=0");
	assert_one_warning(&r, "KK_DEBUG_OBJECTS=yes please");
}

Test(settings_env, unknown_policy_and_tracker_limit_warn_once)
{
	const char *env[] = { "KK_DEBUG_OBJECTS_POLICY=fastest", NULL };
	struct result r = run(NULL, env);

	assert_state(&r, "odebug_policy=ewma");
	assert_one_warning(&r, "KK_DEBUG_OBJECTS_POLICY=fastest");

	env[0] = "KK_DEBUG_OBJECTS_POLICY=base";
	r = run(NULL, env);
	assert_state(&r, "odebug_policy=base");
	cr_assert_str_empty(r.err);

	env[0] = "KK_DEBUG_OBJECTS_MAX_TRACKERS=lots";
	r = run(NULL, env);
	assert_one_warning(&r, "KK_DEBUG_OBJECTS_MAX_TRACKERS=lots");
}

Test(settings_env, exit_report_setting)
{
	const char *env[] = { "KK_DEBUG_OBJECTS=1", NULL, NULL };
	struct result r = run("active", env);

	cr_assert(strstr(r.err, "ODEBUG: 1 active object at exit"), "%s", r.err);
	env[1] = "KK_DEBUG_OBJECTS_EXIT_REPORT=off";
	r = run("active", env);
	cr_assert_str_empty(r.err);
	env[1] = "KK_DEBUG_OBJECTS_EXIT_REPORT=sometimes";
	r = run("active", env);
	cr_assert(!strncmp(r.err, "kernelkit: ignoring KK_DEBUG_OBJECTS_EXIT_REPORT=sometimes: ",
			   60), "%s", r.err);
	cr_assert(strstr(r.err, "ODEBUG: 1 active object at exit"), "the default (on): %s", r.err);
}

Test(settings_env, dynamic_debug_verbose_is_a_boolean)
{
	const char *env[] = { "KK_DYNDBG_VERBOSE=2", NULL };
	struct result r = run(NULL, env);

	assert_one_warning(&r, "KK_DYNDBG_VERBOSE=2");
	env[0] = "KK_DYNDBG=+p";
	r = run(NULL, env);
	assert_state(&r, "dyndbg=1");
	cr_assert_str_empty(r.err);
}

/* With the preload library both constructors read KK_DEBUG_OBJECTS: one warning, not two. */
Test(settings_env, preload_warns_once_and_keeps_its_default)
{
	char pre[4200];
	const char *env[] = { "KK_DEBUG_OBJECTS=maybe", pre, NULL };
	const char *label = getenv("KK_TEST_LABEL");
	struct result r;

	if (label && strstr(label, "asan"))
		cr_skip_test("the sanitizer owns malloc: no preload library");
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", kkt_build_path("libkernelkit-odebug.so"));
	if (access(pre + 11, R_OK))
		cr_skip_test("not built: %s", pre + 11);
	r = run(NULL, env);
	assert_state(&r, "debug_objects=1");	/* preloading switches tracking on */
	assert_one_warning(&r, "KK_DEBUG_OBJECTS=maybe");
}
