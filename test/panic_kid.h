/* SPDX-License-Identifier: MIT */
/*
 * Helpers for the panic tests: run a function in a forked child whose
 * stdout and stderr go to a pipe, read that output with bounded waits, and
 * collect the exit status.  Every wait here has a deadline; a child that
 * outlives it is killed and the test fails.
 */
#ifndef KK_PANIC_KID_H
#define KK_PANIC_KID_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Under AddressSanitizer an unhandled SIGSEGV is reported by ASan (exit 1), not fatal. */
#if defined(__SANITIZE_ADDRESS__)
#define KID_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KID_ASAN 1
#endif
#endif

struct kid {
	pid_t pid;
	int fd;			/* read end of the child's output, -1 at EOF */
	char out[128 * 1024];
	size_t len;
	int status;
	int reaped;
};

static inline uint64_t kid_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static inline void kid_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* Start fn(arg) in a child; it exits 0 if fn returns.  No core files. */
static inline void kid_start(struct kid *k, void (*fn)(void *), void *arg)
{
	int p[2];

	memset(k, 0, sizeof(*k));
	if (pipe(p)) {
		perror("pipe");
		exit(1);
	}
	fflush(NULL);
	k->pid = fork();
	if (k->pid < 0) {
		perror("fork");
		exit(1);
	}
	if (k->pid == 0) {
		struct rlimit rl = { 0, 0 };

		/* A test runner that dies (timeout, ^C) must not leave a busy
		 * child spinning behind it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() == 1)
			_exit(99);
		setrlimit(RLIMIT_CORE, &rl);
		close(p[0]);
		dup2(p[1], 1);
		dup2(p[1], 2);
		close(p[1]);
		setvbuf(stdout, NULL, _IONBF, 0);
		fn(arg);
		_exit(0);
	}
	close(p[1]);
	k->fd = p[0];
}

/* Read what is available until deadline_ms (absolute, kid_now_ms) or EOF. */
static inline void kid_read_until(struct kid *k, uint64_t deadline_ms, const char *needle)
{
	while (k->fd >= 0) {
		uint64_t now = kid_now_ms();
		struct pollfd p = { k->fd, POLLIN, 0 };
		ssize_t n;
		int r;

		if (needle && strstr(k->out, needle))
			return;
		if (now >= deadline_ms)
			return;
		r = poll(&p, 1, (int)(deadline_ms - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		if (k->len + 1 >= sizeof(k->out)) {
			char junk[4096];

			n = read(k->fd, junk, sizeof(junk));
		} else {
			n = read(k->fd, k->out + k->len, sizeof(k->out) - 1 - k->len);
			if (n > 0) {
				k->len += (size_t)n;
				k->out[k->len] = '\0';
			}
		}
		if (n <= 0) {
			close(k->fd);
			k->fd = -1;
		}
	}
}

/* Wait up to timeout_ms for needle in the output: 1 if seen. */
static inline int kid_wait_for(struct kid *k, const char *needle, unsigned timeout_ms)
{
	kid_read_until(k, kid_now_ms() + timeout_ms, needle);
	return strstr(k->out, needle) != NULL;
}

/* Is the child still running (not exited)? */
static inline int kid_alive(struct kid *k)
{
	if (k->reaped)
		return 0;
	if (waitpid(k->pid, &k->status, WNOHANG) == k->pid) {
		k->reaped = 1;
		return 0;
	}
	return 1;
}

/* Wait up to timeout_ms for the child to exit; kill it after.  0 if it exited by itself. */
static inline int kid_finish(struct kid *k, unsigned timeout_ms)
{
	uint64_t deadline = kid_now_ms() + timeout_ms;
	int killed = 0;

	while (!k->reaped) {
		kid_read_until(k, kid_now_ms() + 20, NULL);
		if (waitpid(k->pid, &k->status, WNOHANG) == k->pid) {
			k->reaped = 1;
			break;
		}
		if (kid_now_ms() >= deadline) {
			kill(k->pid, SIGKILL);
			waitpid(k->pid, &k->status, 0);
			k->reaped = 1;
			killed = 1;
		}
	}
	kid_read_until(k, kid_now_ms() + 1000, NULL);	/* the rest, up to EOF */
	if (k->fd >= 0) {
		close(k->fd);
		k->fd = -1;
	}
	return killed ? -1 : 0;
}

/* Did the child die of an unhandled SIGSEGV (or ASan's report of one)? */
static inline int kid_died_of_segv(const struct kid *k)
{
#ifdef KID_ASAN
	if (WIFEXITED(k->status) && WEXITSTATUS(k->status) != 0 &&
	    strstr(k->out, "ERROR: AddressSanitizer: "))
		return 1;
#endif
	return WIFSIGNALED(k->status) && WTERMSIG(k->status) == SIGSEGV;
}

static inline int kid_exit_code(const struct kid *k)
{
	return WIFEXITED(k->status) ? WEXITSTATUS(k->status) : -1;
}

static inline int kid_term_sig(const struct kid *k)
{
	return WIFSIGNALED(k->status) ? WTERMSIG(k->status) : 0;
}

/* Number of times needle occurs in the output. */
static inline int kid_count(const struct kid *k, const char *needle)
{
	int n = 0;

	for (const char *p = k->out; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Sum of CPU ns (schedstat) and context switches over every thread of pid. */
static inline int kid_cpu(pid_t pid, unsigned long long *cpu_ns, unsigned long long *ctxsw)
{
	char path[320], line[256];
	struct dirent *de;
	int found = 0;
	DIR *d;

	*cpu_ns = 0;
	if (ctxsw)
		*ctxsw = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		unsigned long long v;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/schedstat", (int)pid, de->d_name);
		f = fopen(path, "r");
		if (f) {
			if (fscanf(f, "%llu", &v) == 1) {
				*cpu_ns += v;
				found++;
			}
			fclose(f);
		}
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", (int)pid, de->d_name);
		f = ctxsw ? fopen(path, "r") : NULL;
		while (f && fgets(line, sizeof(line), f))
			if (sscanf(line, "voluntary_ctxt_switches: %llu", &v) == 1 ||
			    sscanf(line, "nonvoluntary_ctxt_switches: %llu", &v) == 1)
				*ctxsw += v;
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	return found ? 0 : -1;
}

#endif
