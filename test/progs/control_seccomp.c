// SPDX-License-Identifier: MIT
/*
 * exit(0) inside a seccomp sandbox like OpenSSH's pre-auth one.
 *   control_seccomp tsync     filter all threads (SECCOMP_FILTER_FLAG_TSYNC) while
 *                         the control endpoint's thread runs
 *   control_seccomp thread    filter only the calling thread, as sshd does; the
 *                         endpoint's thread stays outside
 *   control_seccomp stopped   kk_threads_stop() first, then filter the only thread
 * Before the filter the program uses the library the way a server would: its
 * own static-key and pr_debug sites, a key flip, a +p through the control
 * file, the endpoint running (unless KK_CONTROL=0), debug objects (run it with
 * KK_DEBUG_OBJECTS=1).  Inside: one more pr_debug, then exit(0).  The test
 * passes when the exit status is 0, not SIGSYS.
 *
 * The filter follows openssh-portable's sandbox-seccomp-filter.c
 * (preauth_insns): the same setrlimit()s, fstat/stat/open/openat/newfstatat
 * and shm* fail with EACCES, an allow-list of read, write, mmap/mprotect
 * without PROT_EXEC, futex, exit_group and a few more; everything else kills
 * (KILL_PROCESS here, so that a library thread dying kills the process
 * visibly).  Messages after the filter go to stdout/stderr, which must be
 * pipes (RLIMIT_FSIZE is 0, as in sshd).
 */
#include <dirent.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/kernelkit.h>

#include "kktest.h"

#if defined(__x86_64__)
#define ARCH_NR AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_NR AUDIT_ARCH_AARCH64
#endif

DEFINE_STATIC_KEY_FALSE(sandbox_key);

static int flips;

void sandbox_hello(int n)
{
	pr_debug("sandbox hello %d\n", n);
	if (static_branch_unlikely(&sandbox_key))
		flips++;
}

struct thing {
	int x;
};
static const struct debug_obj_descr thing_descr = { .name = "sandbox_thing" };
static struct thing t;

#define DENY(sc, err) \
	BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, (sc), 0, 1), \
	BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ERRNO | (err))
#define ALLOW(sc) \
	BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, (sc), 0, 1), \
	BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ALLOW)
/* Allow if argument @arg (low word; the prot flags) has no bit outside @mask. */
#define ALLOW_ARG_MASK(sc, arg, mask) \
	BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, (sc), 0, 5), \
	BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, args[(arg)])), \
	BPF_STMT(BPF_ALU + BPF_AND + BPF_K, ~(uint32_t)(mask)), \
	BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, 0, 0, 1), \
	BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ALLOW), \
	BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, nr))

#ifdef ARCH_NR
static const struct sock_filter preauth[] = {
	BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, arch)),
	BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, ARCH_NR, 1, 0),
	BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_KILL_PROCESS),
	BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, nr)),
	/* non-fatal denials */
#ifdef __NR_lstat
	DENY(__NR_lstat, EACCES),
#endif
	DENY(__NR_fstat, EACCES),
#ifdef __NR_open
	DENY(__NR_open, EACCES),
#endif
	DENY(__NR_openat, EACCES),
	DENY(__NR_newfstatat, EACCES),
#ifdef __NR_stat
	DENY(__NR_stat, EACCES),
#endif
	DENY(__NR_shmget, EACCES),
	DENY(__NR_shmat, EACCES),
	DENY(__NR_shmdt, EACCES),
	/* permitted */
	ALLOW(__NR_brk),
	ALLOW(__NR_clock_gettime),
	ALLOW(__NR_close),
	ALLOW(__NR_exit),
	ALLOW(__NR_exit_group),
	ALLOW(__NR_futex),
	ALLOW(__NR_geteuid),
	ALLOW(__NR_getpgid),
	ALLOW(__NR_getpid),
	ALLOW(__NR_getrandom),
	ALLOW(__NR_gettimeofday),
	ALLOW(__NR_getuid),
	ALLOW(__NR_madvise),
	ALLOW_ARG_MASK(__NR_mmap, 2, PROT_READ | PROT_WRITE | PROT_NONE),
	ALLOW_ARG_MASK(__NR_mprotect, 2, PROT_READ | PROT_WRITE | PROT_NONE),
	ALLOW(__NR_mremap),
	ALLOW(__NR_munmap),
	ALLOW(__NR_nanosleep),
	ALLOW(__NR_clock_nanosleep),
#ifdef __NR_poll
	ALLOW(__NR_poll),
#endif
	ALLOW(__NR_pselect6),
	ALLOW(__NR_read),
	ALLOW(__NR_rt_sigprocmask),
#ifdef __NR_select
	ALLOW(__NR_select),
#endif
	ALLOW(__NR_shutdown),
#ifdef __NR_time
	ALLOW(__NR_time),
#endif
	ALLOW(__NR_write),
	BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_KILL_PROCESS),
};
#endif

/*
 * Wait until the endpoint's thread is idle in poll() (it starts at load,
 * and may not be there yet): under a TSYNC filter its next syscall would be
 * refused.  An idle endpoint makes no syscall until a client connects
 * (or a signal glibc uses internally, such as setuid()'s, interrupts it).
 * Polls /proc/self/task/TID/syscall; 0 when idle or when there is no endpoint.
 */
static int wait_endpoint_idle(void)
{
	char path[300], buf[64];
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int tid = 0;

	while (d && (de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", de->d_name);
		f = fopen(path, "re");
		if (f && fgets(buf, sizeof(buf), f) && !strcmp(buf, "kk-control\n"))
			tid = atoi(de->d_name);
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	if (!tid)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", tid);
	for (int i = 0; i < 5000; i++) {
		struct timespec ms = { 0, 1000 * 1000 };
		FILE *f = fopen(path, "re");
		long nr = -1;

		if (f && fscanf(f, "%ld", &nr) != 1)
			nr = -1;
		if (f)
			fclose(f);
		/* The endpoint waits in poll() (ppoll() where there is no
		 * poll system call): never in accept4(), which would hold the
		 * lowest free descriptor number reserved. */
#ifdef __NR_poll
		if (nr == __NR_poll)
			return 0;
#endif
		if (nr == __NR_ppoll)
			return 0;
		nanosleep(&ms, NULL);
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	struct rlimit zero = { 0, 0 };
	char *reply = NULL;
	int ret;

#ifndef ARCH_NR
	(void)mode; (void)zero; (void)reply; (void)ret;
	puts("skip: no seccomp arch for this machine");
	return 77;
#else
	struct sock_fprog prog = {
		.len = sizeof(preauth) / sizeof(preauth[0]),
		.filter = (struct sock_filter *)preauth,
	};
	unsigned int flags;

	if (strcmp(mode, "tsync") && strcmp(mode, "thread") && strcmp(mode, "stopped")) {
		fprintf(stderr, "usage: control_seccomp tsync|thread|stopped\n");
		return 2;
	}
	flags = !strcmp(mode, "tsync") ? SECCOMP_FILTER_FLAG_TSYNC : 0;

	/* Use the library as a server would, before sandboxing. */
	if (static_branch_enable(&sandbox_key))
		return 3;
	ret = kk_control_write("dynamic_debug/control", "func sandbox_hello +p", 21, &reply);
	free(reply);
	if (ret)
		return 4;
	sandbox_hello(1);
	debug_object_init(&t, &thing_descr);
	debug_object_activate(&t, &thing_descr);
	debug_object_deactivate(&t, &thing_descr);
	debug_object_destroy(&t, &thing_descr);
	debug_object_free(&t, &thing_descr);
	printf("mode=%s endpoint=%s debug_objects=%d flips=%d\n", mode,
	       kk_control_socket_path() ? kk_control_socket_path() : "none",
	       (int)kk_debug_objects_enabled(), flips);
	if (!strcmp(mode, "stopped")) {
		kk_threads_stop();
		printf("threads after kk_threads_stop(): %d\n", kkt_nr_tasks());
	}
	if (wait_endpoint_idle())
		return 8;
	fflush(stdout);
	fflush(stderr);

	/* The sandbox, in ssh_sandbox_child()'s order. */
	if (setrlimit(RLIMIT_FSIZE, &zero) || setrlimit(RLIMIT_NOFILE, &zero) ||
	    setrlimit(RLIMIT_NPROC, &zero))
		return 5;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return 6;
	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog)) {
		perror("seccomp");
		return 7;
	}

	sandbox_hello(2);
	fflush(stderr);
	exit(0);
#endif
}
