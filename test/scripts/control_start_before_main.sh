#!/bin/sh
# SPDX-License-Identifier: MIT
# The endpoint's thread is past its start, glibc's and ours, before main()
# runs.  A program that installs a seccomp filter for all its threads
# (SECCOMP_FILTER_FLAG_TSYNC) at once, as OpenSSH's pre-auth sandbox does, must
# not find a library thread still starting: glibc's start of a thread
# registers rseq, and such a filter kills it there (a start that returned
# before its thread ran was killed so under load: audit, syscall=334).
# The thread is made slow to start by a preloaded pthread_create(), whose
# trampoline sleeps before the library's thread function; main() then lists
# the threads' names and needs "kk-control" among them.
set -u
[ "${KK_TEST_LABEL:-default}" = asan+ubsan ] && { echo "skip: ASan refuses a preload ahead of its runtime"; exit 77; }
SRC=${KK_SRC:?}
KK_CPROG_NAME=before-main
. "$SRC/test/cprog-lib.sh"

cat > "$tmp/slow.c" <<'C'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
struct tramp { void *(*fn)(void *); void *arg; };
static void *tramp(void *p)
{
	struct tramp t = *(struct tramp *)p;
	struct timespec ts = { 0, 300 * 1000 * 1000 };

	free(p);
	nanosleep(&ts, NULL);
	return t.fn(t.arg);
}
int pthread_create(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) =
		(int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *))
			dlsym(RTLD_NEXT, "pthread_create");
	struct tramp *t = malloc(sizeof(*t));

	if (!t)
		return 11;
	t->fn = fn;
	t->arg = arg;
	return real(th, a, tramp, t);
}
C
cat > "$tmp/prog.c" <<'C'
#include <stdio.h>
#include <kernelkit/dynamic_debug.h>
#include <tasks.h>

void hello(void) { pr_debug("hello\n"); }

int main(void)
{
	int found = task_named("kk-control") != 0;

	hello();
	printf("kk-control at main: %d\n", found);
	return 0;
}
C
"$CC" -shared -fPIC -O2 -o "$tmp/slow.so" "$tmp/slow.c" -ldl || fail "building the preload"
# shellcheck disable=SC2086
"$CC" $CFLAGS -o "$tmp/prog" "$tmp/prog.c" -L"$B" -lkernelkit -Wl,-rpath,"$B" ||
	fail "building the program"
out=$(KK_CONTROL=1 "$tmp/prog") || fail "the program failed: $out"
[ "$out" = "kk-control at main: 1" ] || fail "no kk-control thread at main() even unslowed: $out"
out=$(LD_PRELOAD=$tmp/slow.so KK_CONTROL=1 "$tmp/prog") || fail "the program failed: $out"
[ "$out" = "kk-control at main: 1" ] ||
	fail "main() ran while the endpoint's thread was still starting: $out"
echo "the endpoint's thread had started before main(), also when slow to start: ok"
