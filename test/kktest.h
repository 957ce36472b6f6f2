/* SPDX-License-Identifier: MIT */
/* Small helpers shared by kernelkit's test programs. */
#ifndef KK_TEST_H
#define KK_TEST_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * This architecture's jump-label site instructions, for tests that build or
 * inspect sites by hand: KKT_SITE_LEN bytes, a NOP or a jump to a target.
 * KKT_SYNCS_PER_BATCH: the syncs one batch costs (x86: int3, tails, heads;
 * aarch64: words, then the rewrite for binary translators).
 */
#include <stdint.h>
#if defined(__x86_64__)
#define KKT_SITE_LEN 5
#define KKT_SYNCS_PER_BATCH 3
static const uint8_t kkt_nop[KKT_SITE_LEN] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
/* @out: the jump from the site at @site to @target. */
static inline void kkt_jump(uint8_t *out, uintptr_t site, uintptr_t target)
{
	int32_t rel = (int32_t)(target - (site + 5));

	out[0] = 0xe9;
	memcpy(out + 1, &rel, 4);
}
#elif defined(__aarch64__)
#define KKT_SITE_LEN 4
#define KKT_SYNCS_PER_BATCH 2
static const uint8_t kkt_nop[KKT_SITE_LEN] = { 0x1f, 0x20, 0x03, 0xd5 };
static inline void kkt_jump(uint8_t *out, uintptr_t site, uintptr_t target)
{
	uint32_t b = 0x14000000u | ((uint32_t)((intptr_t)(target - site) >> 2) & 0x03ffffffu);

	for (int i = 0; i < 4; i++)
		out[i] = (uint8_t)(b >> (8 * i));
}
#endif
#ifdef KKT_SITE_LEN
static inline void kkt_put_jump(uint8_t *site, const uint8_t *target)
{
	kkt_jump(site, (uintptr_t)site, (uintptr_t)target);
}

static inline void kkt_put_nop(uint8_t *site)
{
	memcpy(site, kkt_nop, KKT_SITE_LEN);
}

static inline int kkt_is_nop(const uint8_t *site)
{
	return !memcmp(site, kkt_nop, KKT_SITE_LEN);
}

static inline int kkt_is_jump_to(const uint8_t *site, const uint8_t *target)
{
	uint8_t j[KKT_SITE_LEN];

	kkt_jump(j, (uintptr_t)site, (uintptr_t)target);
	return !memcmp(site, j, KKT_SITE_LEN);
}
#endif

/* Directory of the build being tested (set by scripts/run-tests.sh), or "build". */
static inline const char *kkt_build_dir(void)
{
	const char *b = getenv("KK_BUILD");
	return b && *b ? b : "build";
}

/* Path of a file in the build directory, in a static buffer. */
static inline const char *kkt_build_path(const char *rel)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", kkt_build_dir(), rel);
	return buf;
}

/* Threads of the calling process (entries of /proc/self/task), or -1. */
static inline int kkt_nr_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Wait until every other thread of the process sleeps (state S: the
 * library's threads wait in poll() or on a futex), polling every 1 ms, 10 s
 * at most.  0, or -1. */
#include <unistd.h>
static inline int kkt_others_asleep(void)
{
	for (int tries = 0; tries < 10000; tries++) {
		char path[300], st[256];
		struct dirent *d;
		DIR *dir = opendir("/proc/self/task");
		int busy = 0;

		if (!dir)
			return -1;
		while ((d = readdir(dir))) {
			FILE *f;
			char *p;

			if (d->d_name[0] == '.' || atoi(d->d_name) == (int)gettid())
				continue;
			snprintf(path, sizeof(path), "/proc/self/task/%s/stat", d->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			p = fgets(st, sizeof(st), f) ? strrchr(st, ')') : NULL;
			fclose(f);
			busy |= !p || p[1] != ' ' || p[2] != 'S';
		}
		closedir(dir);
		if (!busy)
			return 0;
		usleep(1000);
	}
	return -1;
}

/*
 * For a fake endpoint (control_squat, control_refuse): is the peer on
 * socket @fd of this test, that is of our process group?  Each test runs
 * under its own timeout(1), which makes a process group of it, and a
 * script without job control keeps its jobs, subshells and commands in
 * it.  Root's kkctl ls, run by another test beside this one, connects to
 * every endpoint name on the host: a fake endpoint that took it for its
 * test's client exited before the test's kkctl came (tally run 35 of issue
 * 27).  1 when it cannot be told (no pid in our namespace, no /proc).
 */
#include <sys/socket.h>
static inline int kkt_peer_is_ours(int fd)
{
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	char path[64], st[512], *p;
	FILE *f;
	size_t n;
	int pgrp;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crl) || cr.pid <= 0)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)cr.pid);
	if (!(f = fopen(path, "r")))
		return 1;
	n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = 0;
	/* "pid (comm) state ppid pgrp": comm may hold spaces and parens */
	if (!(p = strrchr(st, ')')) || sscanf(p + 1, " %*c %*d %d", &pgrp) != 1)
		return 1;
	return pgrp == getpgrp();
}

/* Accept on @l until a client of this test comes; the others are closed
 * unread.  The socket, or -1. */
static inline int kkt_accept_ours(int l)
{
	for (;;) {
		int c = accept(l, NULL, NULL);

		if (c < 0 || kkt_peer_is_ours(c))
			return c;
		close(c);
	}
}

/* Pin the calling thread (and the threads it starts) to the CPU it runs on:
 * the creator of a thread then usually runs on as soon as the new thread
 * wakes it, which widens the window before the new thread's own first line.
 * 0 or -1. */
#include <sched.h>
static inline int kkt_pin_to_one_cpu(void)
{
	cpu_set_t one;
	int cpu = sched_getcpu();

	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	return sched_setaffinity(0, sizeof(one), &one);
}

/*
 * Criterion keeps a helper thread that blocks every signal in each test
 * process.  Left to itself (KK_TEXT_SYNC=auto) the library assumes such a
 * thread may run a site and writes every batch by page swaps.  A test of the
 * live protocol (x86's int3) forces it instead, which leaves threads deaf to
 * every signal alone: membarrier where SYNC_CORE works, else the signal
 * fallback.
 */
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
static inline void kkt_live_protocol(void)
{
	long cmds = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	setenv("KK_TEXT_SYNC", cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) ?
	       "membarrier" : "signal", 1);
}

#ifdef KERNELKIT_JUMP_LABEL_H
/*
 * Flip number @f of a stress program: @key on for even @f, off for odd,
 * then @sites() must return @per_on times the key's value.  0, or 1 with
 * one line on stderr (a failed flip, or sites that disagree).
 */
static inline int kkt_flip_checked(struct static_key *key, int f, int (*sites)(void), int per_on)
{
	int on = !(f & 1), ret = on ? static_key_enable(key) : static_key_disable(key);

	if (ret) {
		fprintf(stderr, "flip %d: %d: %s\n", f, ret, kk_jump_label_strerror());
		return 1;
	}
	if (sites() != per_on * on) {
		fprintf(stderr, "flip %d: the sites run %d, the key is %d\n", f, sites(), on);
		return 1;
	}
	return 0;
}
#endif

#endif
