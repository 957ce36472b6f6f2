#!/bin/sh
# SPDX-License-Identifier: MIT
# A library thread starts with the library's mask (every signal blocked but
# the faults and the park signal) given to pthread_create() in its
# attributes (glibc 2.32 and later): the thread that creates it never sets
# its own mask to that and back (two rt_sigprocmask() calls of each start:
# at a program's load, and in every fork child of a serving process).
# strace -f shows the creators' calls; /proc shows the thread's mask, which
# must stay what it was.
set -u
SRC=${KK_SRC:?}
command -v strace > /dev/null || { echo "skip: no strace"; exit 77; }
v=$(getconf GNU_LIBC_VERSION 2> /dev/null | sed -n 's/^glibc 2\.\([0-9]*\).*/\1/p')
[ -n "$v" ] && [ "$v" -ge 32 ] || { echo "skip: not glibc 2.32 or later (no pthread_attr_setsigmask_np)"; exit 77; }
# ASan's pthread_create() interceptor sets and restores the creator's mask itself.
[ "${KK_TEST_LABEL:-default}" = asan+ubsan ] && { echo "skip: the sanitizer's pthread_create() masks the creator"; exit 77; }
KK_CPROG_NAME=thread-mask
. "$SRC/test/cprog-lib.sh"

cat > "$tmp/prog.c" <<'C'
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <kernelkit/dynamic_debug.h>
#include <tasks.h>

void hello(void) { pr_debug("hello\n"); }

/* "ok" when the kk-control thread blocks SIGUSR1 and SIGTERM and none of the faults. */
static const char *thread_mask(void)
{
	static const int faults[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP };
	int tid = task_named("kk-control");
	char path[64], line[256];
	unsigned long long blk = 0;
	FILE *f;

	if (!tid)
		return "no kk-control thread";
	snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
	if (!(f = fopen(path, "r")))
		return "no kk-control thread";
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "SigBlk:", 7))
			blk = strtoull(line + 7, NULL, 16);
	fclose(f);
	if (!(blk >> (SIGUSR1 - 1) & 1) || !(blk >> (SIGTERM - 1) & 1))
		return "SIGUSR1 or SIGTERM not blocked";
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++)
		if (blk >> (faults[i] - 1) & 1)
			return "a fault signal blocked";
	return "ok";
}

int main(void)
{
	pid_t pid;
	int st;

	hello();
	printf("parent %s\n", thread_mask());
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		/* The child's thread may still be starting: it is named first. */
		const char *v;

		for (int i = 0; i < 200000 && strcmp(v = thread_mask(), "ok"); i++)
			sched_yield();
		printf("child %s\n", v);
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	return !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
C
# shellcheck disable=SC2086
"$CC" $CFLAGS -o "$tmp/prog" "$tmp/prog.c" -L"$B" -lkernelkit -Wl,-rpath,"$B" ||
	fail "building the program"
out=$(strace -f -qq -o "$tmp/trace" -e trace=rt_sigprocmask,clone,clone3,fork,vfork "$tmp/prog") ||
	fail "the program failed: $out"
printf '%s\n' "$out" | grep -qx 'parent ok' || fail "the parent's kk-control thread: $out"
printf '%s\n' "$out" | grep -qx 'child ok' || fail "the fork child's kk-control thread: $out"
# The creators: the program's first process and its fork child (the line
# "clone(...SIGCHLD...) = PID").  A thread's own start sets its mask too
# (glibc's start_thread()): those lines carry the thread's id, not these.
main=$(head -n 1 "$tmp/trace" | cut -d' ' -f1)
child=$(sed -n 's/^[0-9]* *clone(.*SIGCHLD.*) = \([0-9]*\)$/\1/p' "$tmp/trace" | head -n 1)
[ -n "$child" ] || fail "no fork child in the trace: $(cat "$tmp/trace")"
bad=$(grep -E "^($main|$child) +rt_sigprocmask\(SIG_SETMASK, ~\[ILL TRAP BUS FPE" "$tmp/trace")
[ -z "$bad" ] || fail "a creator set the library threads' mask on itself around the start:
$bad"
echo "library threads start with their mask from the attributes; the creators' masks untouched: ok"
