// SPDX-License-Identifier: MIT
/*
 * The library's threads (issue 9): none before it is needed, one worker for
 * every facility, kk_threads_stop() leaves the program alone with its threads
 * (and the facilities keep working in the caller), kk_threads_start() resumes
 * pending work, and a per-thread seccomp filter set while stopped covers the
 * threads started again.
 *
 * Each case runs test/progs/threads_prog in a fresh process with
 * KK_CONTROL=0: thread counts are taken from /proc/self/task, where the test
 * runner's own threads must not show up, and the control endpoint's thread
 * belongs to another facility.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kktest.h"

extern char **environ;

struct run {
	int status;
	char out[16384];
};

/* Run threads_prog @mode with KK_CONTROL=0; bounded to 30 s. */
static void run_prog(const char *mode, struct run *r)
{
	const char *prog = kkt_build_path("test/progs/threads_prog");
	char *argv[] = { (char *)"threads_prog", (char *)mode, NULL };
	posix_spawn_file_actions_t fa;
	size_t len = 0;
	int p[2], waited = 0;
	pid_t pid;

	memset(r, 0, sizeof(*r));
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	setenv("KK_CONTROL", "0", 1);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], 1);
	posix_spawn_file_actions_adddup2(&fa, p[1], 2);
	cr_assert_eq(posix_spawn(&pid, prog, &fa, NULL, argv, environ), 0, "spawn %s", prog);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	for (;;) {
		struct pollfd pf = { p[0], POLLIN, 0 };
		ssize_t n;

		if (poll(&pf, 1, 30000) <= 0) {
			kill(pid, SIGKILL);
			break;
		}
		n = read(p[0], r->out + len, sizeof(r->out) - 1 - len);
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(p[0]);
	waited = waitpid(pid, &r->status, 0) == pid;
	cr_assert(waited);
}

static void expect_ok(const char *mode)
{
	struct run r;

	run_prog(mode, &r);
	if (WIFEXITED(r.status) && WEXITSTATUS(r.status) == 77)
		cr_skip_test("%s", r.out);
	cr_assert(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %#x:\n%s", r.status,
		  r.out);
}

Test(threads_stop, no_thread_before_it_is_needed_and_one_worker_for_all)
{
	expect_ok("lazy");
}

Test(threads_stop, stop_leaves_one_thread_and_start_resumes_pending_work)
{
	expect_ok("stop");
}

Test(threads_stop, threads_started_again_inherit_a_per_thread_seccomp_filter)
{
	expect_ok("seccomp");
}
