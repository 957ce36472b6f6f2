// SPDX-License-Identifier: MIT
/*
 * Run PROG where pidfd_open() is refused, as a sandbox's seccomp filter
 * (or a kernel before 5.3, ENOSYS) refuses it, for
 * test/scripts/dynamic_debug_session_nopidfd.sh:
 *   dynamic_debug_nopidfd EPERM|ENOSYS PROG ARG...
 * installs a filter that fails pidfd_open() with that errno and allows
 * every other call, then execs PROG: the filter is in place before the
 * library is loaded, so the endpoint's thread (which opens a session
 * holder's pidfd) runs under it from its start.  Exit 77 where this
 * architecture has no filter here, 1 when the filter is refused.
 */
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH_NR AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define ARCH_NR AUDIT_ARCH_AARCH64
#endif

int main(int argc, char **argv)
{
#if defined(ARCH_NR) && defined(SYS_pidfd_open)
	int err = argc > 2 && !strcmp(argv[1], "EPERM") ? EPERM :
		  argc > 2 && !strcmp(argv[1], "ENOSYS") ? ENOSYS : 0;
	struct sock_filter insns[] = {
		BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, ARCH_NR, 1, 0),
		BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD + BPF_W + BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP + BPF_JEQ + BPF_K, SYS_pidfd_open, 0, 1),
		BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ERRNO | (unsigned)err),
		BPF_STMT(BPF_RET + BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(insns) / sizeof(insns[0]), .filter = insns };

	if (!err) {
		fprintf(stderr, "usage: dynamic_debug_nopidfd EPERM|ENOSYS PROG ARG...\n");
		return 2;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog)) {
		perror("dynamic_debug_nopidfd: seccomp");
		return 1;
	}
	execv(argv[2], argv + 2);
	perror("dynamic_debug_nopidfd: exec");
	return 1;
#else
	(void)argc;
	(void)argv;
	printf("no seccomp filter for pidfd_open on this architecture\n");
	return 77;
#endif
}
