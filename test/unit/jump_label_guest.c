// SPDX-License-Identifier: MIT
/*
 * Static keys as a guest in someone else's process: the program may close or
 * reuse the library's descriptor, fork, sandbox itself, and owns its signal
 * dispositions and settings.  Each test runs its body in a child process, so
 * that closing every descriptor or a seccomp filter cannot hit Criterion.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>
#include "kktest.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

DEFINE_STATIC_KEY_FALSE(gk);
/* test/lib/libjump_label_user.so uses this key (the program links with -rdynamic). */
DEFINE_STATIC_KEY_FALSE(jump_label_shared_key);

__attribute__((noinline)) static int gk_site(void)
{
	return static_branch_unlikely(&gk);
}

/* Run @fn in a child; returns its exit status (or 128 + signal). */
static int in_child(int (*fn)(void))
{
	int st;
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		fflush(NULL);
		_exit(fn());
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#ifndef KK_NO_JUMP_LABEL

/* The number of the descriptor that shows /proc/<pid>/mem, or -1. */
static int find_mem_fd(void)
{
	char want[64], link[256], path[300];
	struct dirent *d;
	DIR *dir = opendir("/proc/self/fd");
	int found = -1;

	snprintf(want, sizeof(want), "/proc/%d/mem", (int)getpid());
	while (dir && (d = readdir(dir))) {
		ssize_t n;

		snprintf(path, sizeof(path), "/proc/self/fd/%s", d->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n > 0 && (link[n] = '\0', !strcmp(link, want)) && atoi(d->d_name) != dirfd(dir))
			found = atoi(d->d_name);
	}
	if (dir)
		closedir(dir);
	return found;
}

/* The program's file on descriptor @fd: still open, same file, untouched. */
static int file_intact(int fd, const struct stat *was)
{
	struct stat st;
	char buf[16] = "";

	if (fstat(fd, &st) || st.st_ino != was->st_ino || st.st_dev != was->st_dev)
		return 0;
	if (st.st_size != 6 || pread(fd, buf, sizeof(buf), 0) != 6)
		return 0;
	return !memcmp(buf, "hello\n", 6);
}

/*
 * The program closes every descriptor (sshd's closefrom(3)) and opens a file
 * that lands on the library's old /proc/self/mem number.  Flipping a key
 * must reopen /proc/self/mem, leave the file alone, and so must a fork child.
 */
static int closefrom_body(void)
{
	char tmpl[] = "/tmp/kk-jl-fd.XXXXXX";
	struct stat was;
	int n, fd, st;
	pid_t pid;

	if (static_branch_enable(&gk) || gk_site() != 1)
		return 10;
	if ((n = find_mem_fd()) < 3)
		return 11;
	if (syscall(SYS_close_range, 3, ~0U, 0))
		return 12;
	fd = mkstemp(tmpl);
	if (fd < 0 || write(fd, "hello\n", 6) != 6)
		return 13;
	unlink(tmpl);
	if (fd != n && (dup2(fd, n) != n || close(fd)))
		return 14;
	fstat(n, &was);

	if (static_branch_disable(&gk) || gk_site() != 0)
		return 20;		/* the key works */
	if (!file_intact(n, &was))
		return 21;		/* the file was written or closed */
	pid = fork();
	if (pid == 0) {
		if (!file_intact(n, &was))
			_exit(30);	/* the atfork handler closed or wrote it */
		if (static_branch_enable(&gk) || gk_site() != 1)
			_exit(31);
		_exit(file_intact(n, &was) ? 0 : 32);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return 40;
	if (WEXITSTATUS(st))
		return WEXITSTATUS(st);
	if (gk_site() != 0 || !file_intact(n, &was))
		return 41;		/* the child's patching reached us */
	if (static_branch_enable(&gk) || gk_site() != 1 || !file_intact(n, &was))
		return 42;
	/* And dup2() over the library's new descriptor. */
	if ((fd = find_mem_fd()) < 3 || dup2(n, fd) != fd)
		return 50;
	if (static_branch_disable(&gk) || gk_site() != 0 || !file_intact(fd, &was) ||
	    !file_intact(n, &was))
		return 51;
	return 0;
}

Test(jump_label_guest, descriptors_closefrom_and_reuse_of_the_number)
{
	int st = in_child(closefrom_body);

	cr_expect_eq(st, 0, "child failed at step %d", st);
}

/* ---- signals and settings --------------------------------------------------------- */

/* Loading the library changes no signal disposition; the first patch does
 * where the protocol traps (x86_64), and never where it does not (aarch64). */
Test(jump_label_guest, signals_sigtrap_untouched_until_the_first_patch)
{
	struct sigaction sa;

	cr_assert_eq(sigaction(SIGTRAP, NULL, &sa), 0);
	cr_expect(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL,
		  "a SIGTRAP handler is installed before any key changed");
	cr_assert_eq(static_branch_enable(&gk), 0);
	cr_assert_eq(sigaction(SIGTRAP, NULL, &sa), 0);
#if defined(__x86_64__)
	cr_expect(sa.sa_flags & SA_SIGINFO, "no handler for the batch traps");
#else
	cr_expect(!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_DFL,
		  "a SIGTRAP handler is installed, but this arch's protocol has no trap");
#endif
}

static int bad_setting_body(void)
{
	int p[2];
	char buf[512] = "";
	ssize_t n;

	if (pipe(p) || dup2(p[1], 2) != 2)
		return 10;
	setenv("KK_TEXT_POKE", "bogus", 1);
	if (static_branch_enable(&gk) || gk_site() != 1)
		return 11;	/* an unknown value is ignored, not fatal */
	close(2);
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	if (n <= 0 || !strstr(buf, "KK_TEXT_POKE=bogus"))
		return 12;
	if (strchr(buf, '\n') != buf + n - 1)
		return 13;	/* one line */
	return 0;
}

Test(jump_label_guest, settings_unknown_text_poke_value_warns)
{
	int st = in_child(bad_setting_body);

	cr_expect_eq(st, 0, "child failed at step %d", st);
}

#else

Test(jump_label_guest, descriptors_fallback_build_has_no_descriptor)
{
	cr_assert_eq(static_branch_enable(&gk), 0);
	cr_expect_eq(gk_site(), 1);
	cr_expect_eq(in_child(gk_site), 1);
}

#endif /* KK_NO_JUMP_LABEL */

/* ---- a sandbox at unload --------------------------------------------------------- */

#define DENY(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), \
		 BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS)

#if defined(__x86_64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_X86_64
/* The calls arm64 never had (it has only the *at forms). */
#define DENY_LEGACY DENY(__NR_readlink), DENY(__NR_open), DENY(__NR_stat), DENY(__NR_lstat),
#elif defined(__aarch64__)
#define AUDIT_ARCH_SELF AUDIT_ARCH_AARCH64
#define DENY_LEGACY
#endif

/* Kill the process on any syscall that opens, stats or reads a link. */
static int sandbox(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_SELF, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		DENY_LEGACY
		DENY(__NR_readlinkat), DENY(__NR_openat), DENY(__NR_newfstatat), DENY(__NR_statx),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { (unsigned short)(sizeof(f) / sizeof(f[0])), f };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/*
 * Unloading an object (its destructor calls kk_jump_label_del_object) inside
 * a sandbox that kills on open/stat/readlink: the process lives on.  Then the
 * main program's own jump-label destructor, as exit() would run it (the old
 * code read /proc/self/exe there to name the program).
 */
static int sandboxed_unload_body(void)
{
	void *h = dlopen(kkt_build_path("test/lib/libjump_label_user.so"), RTLD_NOW | RTLD_LOCAL);
	struct static_key_true *(*key)(void);

	if (!h || !(key = (struct static_key_true *(*)(void))dlsym(h, "jump_label_user_key")))
		return 10;
	/* give the registry something to forget: a queued key of the object */
	if (static_branch_disable(key()) || static_branch_enable_queued(key()))
		return 11;
	if (sandbox())
		return 12;
	dlclose(h);		/* runs the object's destructor */
	__kk_jump_label_dtor();	/* this program's, from <kernelkit/jump_label.h> */
	return 0;
}

Test(jump_label_guest, sandbox_unload_makes_no_forbidden_syscall)
{
	int st = in_child(sandboxed_unload_body);

	cr_expect_eq(st, 0, "child status %d (%d = killed by SIGSYS)", st, 128 + SIGSYS);
}
