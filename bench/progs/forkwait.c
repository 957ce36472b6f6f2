// SPDX-License-Identifier: MIT
/*
 * kk-bench guest's fork figure: N times fork() and waitpid() of a child that
 * _exit(0)s at once; prints the median ns of one such pair and the number of
 * threads the process had (/proc/self/task) before the first fork.
 *   forkwait-kk|forkwait-plain N
 *
 * Built twice (mk/guest.mk): linked with kernelkit, with one pr_debug site,
 * so that the control endpoint starts at load as in any program with sites
 * (and, in each child, inside fork(): the child gets an endpoint of its
 * own); and -DFORKWAIT_PLAIN, without kernelkit.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef FORKWAIT_PLAIN
#define pr_debug(...) do { } while (0)
#else
#include <kernelkit/dynamic_debug.h>
#endif

static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

static int threads(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, nthreads = threads(), st;
	long long *t;

	if (n < 1 || !(t = calloc((size_t)n, sizeof(*t)))) {
		fprintf(stderr, "usage: %s N\n", argv[0]);
		return 2;
	}
	for (int i = 0; i < n; i++) {
		long long t0 = now_ns();
		pid_t pid = fork();

		if (pid == 0)
			_exit(0);
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
		t[i] = now_ns() - t0;
		pr_debug("fork %d: %lld ns\n", i, t[i]);
	}
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("%lld %d\n", n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2, nthreads);
	return 0;
}
