// SPDX-License-Identifier: MIT
/*
 * The first change of site pages that still hold their file's bytes breaks
 * copy-on-write.  Each page that another thread keeps running is mapped back
 * between the library's bulk unmap and its write, and its copy then costs a
 * TLB flush of every CPU running the process (216 IPIs for dynamic debug's
 * 16154 sites with a thread running them).  The plan therefore looks, once it
 * has listed the threads, at how many of the unmapped pages came back: more
 * than a page swap would flush (two per run) and the batch goes by page swap;
 * cold pages keep the live protocol, whose writes then fault in private
 * copies with no flush at all.
 *
 * "Another thread runs the pages" is made certain, not hoped for: the plan's
 * hook, between the survey and the choice, reads every page, as a thread
 * running them would.  Each case runs in a child of its own: a Criterion
 * process has a helper thread that blocks every signal, for which the plan
 * always swaps, and handlers whose masks block SIGTRAP, for which it swaps
 * too; the child has default dispositions and one idle thread besides itself.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

#if defined(KK_NO_JUMP_LABEL) || !(defined(__x86_64__) || defined(__aarch64__))
Test(text_poke_cow, no_text_is_written_in_the_fallback_build)
{
	cr_skip_test("no text is written: sites are load+test+branch");
}
#else
#include "text_poke.h"
#include "text_sync.h"

DEFINE_STATIC_KEY_FALSE(ck);

#define NPAGES 8

/* One site per page: NPAGES pages in one run, none of them written yet in
 * this process (each test runs in a fresh fork of the runner). */
#define SITE_FN(i)                                                              \
	__attribute__((noinline, aligned(4096), section(".text.kkcow"))) int cow_site##i(void) \
	{                                                                       \
		return static_branch_unlikely(&ck) ? i + 1 : 0;                 \
	}
SITE_FN(0) SITE_FN(1) SITE_FN(2) SITE_FN(3) SITE_FN(4) SITE_FN(5) SITE_FN(6) SITE_FN(7)

static int (*const sites[NPAGES])(void) = {
	cow_site0, cow_site1, cow_site2, cow_site3, cow_site4, cow_site5, cow_site6, cow_site7,
};

/* What a thread running every site does to the pages: maps them back. */
static void touch_sites(int stage)
{
	if (stage != KK_PLAN_SURVEYED)
		return;
	for (int i = 0; i < NPAGES; i++)
		(void)*(volatile const uint8_t *)(uintptr_t)sites[i];
}

static int idle_pipe[2], ready_pipe[2];

static void *idle(void *arg)
{
	char c;

	(void)arg;
	(void)!write(ready_pipe[1], "r", 1);
	(void)!read(idle_pipe[0], &c, 1);
	return NULL;
}

/* Whether some thread of the process blocks SIGTRAP now (a thread that
 * glibc is starting blocks every signal: the library's endpoint thread, which
 * the child starts after fork(), for one).  The plan swaps while one does. */
static bool a_thread_blocks_sigtrap(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool blocks = false;

	if (!d)
		return false;
	while (!blocks && (e = readdir(d))) {
		char path[300], line[128];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned long long m;

			if (sscanf(line, "SigBlk: %llx", &m) == 1)
				blocks = m >> (SIGTRAP - 1) & 1;
		}
		fclose(f);
	}
	closedir(d);
	return blocks;
}

/* In a child: the first enable, with the pages @hot or not.  Exit status:
 * 0 swapped, 1 live, 2 and up a failure. */
static int first_enable(bool hot)
{
	struct kk_text_stats a, b;
	sigset_t none;
	pthread_t t;
	int ret = 0;
	char c;

	unsetenv("KK_TEXT_SYNC");
	unsetenv("KK_TEXT_POKE");
	/* Criterion's handlers block SIGTRAP (sigfillset): the plan swaps for those. */
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	for (int i = 0; i < NPAGES; i++)	/* mapped, as in a running program */
		if (sites[i]())
			return 2;
	if (pipe(idle_pipe) || pipe(ready_pipe) || pthread_create(&t, NULL, idle, NULL) ||
	    read(ready_pipe[0], &c, 1) != 1)
		return 3;
	for (int i = 0; a_thread_blocks_sigtrap(); i++)	/* until its threads have started */
		if (i == 100000)
			return 6;
		else
			sched_yield();
	if (hot)
		kk_sync_plan_hook = touch_sites;
	kk_text_get_stats(&a);
	if (static_branch_enable(&ck))
		ret = 4;
	kk_text_get_stats(&b);
	kk_sync_plan_hook = NULL;
	for (int i = 0; i < NPAGES && !ret; i++)
		if (sites[i]() != i + 1)
			ret = 5;
	(void)!write(idle_pipe[1], "x", 1);
	pthread_join(t, NULL);
	if (ret)
		return ret;
	return b.swapped > a.swapped ? 0 : 1;
}

static int in_child(bool hot)
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(first_enable(hot));
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "the child died: status %#x", st);
	cr_assert_lt(WEXITSTATUS(st), 2, "the child failed at step %d", WEXITSTATUS(st));
	return WEXITSTATUS(st);
}

/* Whether this kernel lets a process unmap its own pages with
 * process_madvise(MADV_DONTNEED) (Linux 6.13): the library's bulk unmap,
 * without which no page can be seen coming back. */
static bool self_madvise_dontneed(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec iov = { p, (size_t)pg };
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	bool ok = p != MAP_FAILED && fd >= 0 &&
		  syscall(SYS_process_madvise, fd, &iov, 1, MADV_DONTNEED, 0) == pg;

	if (fd >= 0)
		close(fd);
	if (p != MAP_FAILED)
		munmap(p, (size_t)pg);
	return ok;
}

Test(text_poke_cow, pages_that_threads_run_go_by_page_swap, .timeout = 60)
{
	if (!self_madvise_dontneed())
		cr_skip_test("this kernel refuses process_madvise(MADV_DONTNEED) on the process "
			     "itself (before Linux 6.13): no page is unmapped, none comes back");
	cr_assert_eq(in_child(true), 0, "the first change of pages mapped back by a running "
		     "thread went by the live protocol: a TLB flush for each page");
}

Test(text_poke_cow, cold_pages_keep_the_live_protocol, .timeout = 60)
{
	cr_assert_eq(in_child(false), 1, "the first change of cold pages went by page swap");
}
#endif
