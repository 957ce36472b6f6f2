// SPDX-License-Identifier: MIT
/*
 * Calls that wait with a mask of their own: sigsuspend(), ppoll() (and
 * its fortified __ppoll_chk()), pselect(), epoll_pwait() and
 * epoll_pwait2().  A handler they run runs with that mask, and the idiom
 * waits with every signal blocked but the one it waits for: SIGTRAP among
 * them.  A site run by such a handler while a batch of the int3 protocol
 * had its traps in place was a trap with SIGTRAP blocked, and the kernel
 * killed the process (issue 37, held-out round: sigsuspend(), ppoll() and
 * pselect() loops whose SIGUSR1 handler ran a site died of SIGTRAP within
 * 20000 flips of a key).  So they are interposed, and meet the trap window
 * as a mask call does (kk_sync_wait_begin() in text_sync_sigmask.c).
 *
 * A call whose mask does not block SIGTRAP costs one test more; one whose
 * mask does costs two system calls more.  The real functions are libc's,
 * found with dlsym(RTLD_NEXT) (they stay cancellation points), so this file
 * is in the shared library only, as inherit_spawn.c: in a static program
 * they are not interposed (docs/text_patching.md lists it).  They are
 * looked up in a constructor, so that a call from a signal handler (the
 * four are async-signal-safe) never runs dlsym().  The sigwait() family, at
 * the end, is interposed for another reason: see there.
 */
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <time.h>

#include "common/internal.h"
#include "text_sync.h"

typedef int sigwait_fn(const sigset_t *, int *);
typedef int sigwaitinfo_fn(const sigset_t *, siginfo_t *);
typedef int sigtimedwait_fn(const sigset_t *, siginfo_t *, const struct timespec *);
typedef int sigsuspend_fn(const sigset_t *);
typedef int ppoll_fn(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int ppoll_chk_fn(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
			 size_t);
typedef int pselect_fn(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
typedef int epoll_pwait_fn(int, struct epoll_event *, int, int, const sigset_t *);
typedef int epoll_pwait2_fn(int, struct epoll_event *, int, const struct timespec *,
			    const sigset_t *);

enum { W_SIGSUSPEND, W_PPOLL, W_PPOLL_CHK, W_PSELECT, W_EPOLL_PWAIT, W_EPOLL_PWAIT2,
       W_SIGTIMEDWAIT, W_N };

static const char *const real_names[W_N] = {
	[W_SIGSUSPEND] = "sigsuspend",	 [W_PPOLL] = "ppoll",
	[W_PPOLL_CHK] = "__ppoll_chk",	 [W_PSELECT] = "pselect",
	[W_EPOLL_PWAIT] = "epoll_pwait", [W_EPOLL_PWAIT2] = "epoll_pwait2",
	[W_SIGTIMEDWAIT] = "sigtimedwait",
};
static void *reals[W_N];

static void *real(int w)
{
	void *f = __atomic_load_n(&reals[w], __ATOMIC_ACQUIRE);

	if (!f) {
		f = dlsym(RTLD_NEXT, real_names[w]);
		__atomic_store_n(&reals[w], f, __ATOMIC_RELEASE);
	}
	return f;
}

__attribute__((__constructor__)) static void find_reals(void)
{
	for (int w = 0; w < W_N; w++)
		real(w);
}

/* Every wrapper: the mask to pass, the call, the thread's mask back. */
#define WAIT_CALL(w, type, set, ...)						\
	do {									\
		type *f_ = (type *)real(w);					\
		struct kk_sync_wait sw_;					\
		const sigset_t *m_;						\
		int r_;								\
										\
		if (!f_) {							\
			errno = ENOSYS;						\
			return -1;						\
		}								\
		m_ = kk_sync_wait_begin((set), &sw_);				\
		r_ = f_(__VA_ARGS__);						\
		kk_sync_wait_end(&sw_);						\
		return r_;							\
	} while (0)

KK_INTERPOSE(sigsuspend)
int kk_interpose_sigsuspend(const sigset_t *set)
{
	WAIT_CALL(W_SIGSUSPEND, sigsuspend_fn, set, m_);
}

KK_INTERPOSE(ppoll)
int kk_interpose_ppoll(struct pollfd *fds, nfds_t n, const struct timespec *t, const sigset_t *set)
{
	WAIT_CALL(W_PPOLL, ppoll_fn, set, fds, n, t, m_);
}

KK_INTERPOSE(__ppoll_chk)
int kk_interpose___ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *t,
			     const sigset_t *set, size_t fdslen)
{
	WAIT_CALL(W_PPOLL_CHK, ppoll_chk_fn, set, fds, n, t, m_, fdslen);
}

KK_INTERPOSE(pselect)
int kk_interpose_pselect(int n, fd_set *r, fd_set *w, fd_set *e, const struct timespec *t,
			 const sigset_t *set)
{
	WAIT_CALL(W_PSELECT, pselect_fn, set, n, r, w, e, t, m_);
}

KK_INTERPOSE(epoll_pwait)
int kk_interpose_epoll_pwait(int ep, struct epoll_event *ev, int max, int ms, const sigset_t *set)
{
	WAIT_CALL(W_EPOLL_PWAIT, epoll_pwait_fn, set, ep, ev, max, ms, m_);
}

KK_INTERPOSE(epoll_pwait2)
int kk_interpose_epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *t,
			      const sigset_t *set)
{
	WAIT_CALL(W_EPOLL_PWAIT2, epoll_pwait2_fn, set, ep, ev, max, t, m_);
}

/* ---- waits that take a signal: never kernelkit's ------------------------------------------ */

/*
 * A thread that blocked SIGTRAP during a window is handed the block back by
 * a SIGTRAP of ours (text_sync_sigmask.c), meant for our handler.  A
 * sigwait() on a set with SIGTRAP takes it from the queue first: a sigwait()
 * daemon's signal thread, which blocks every signal as it starts and waits
 * for every one, was given a SIGTRAP it was never sent (issue 37, held-out
 * round).  So these take ours out and wait again, as glibc's keep its own
 * two signals out of them; the block is applied there.  A timeout is one
 * deadline for the whole call.  glibc's sigwait() and sigwaitinfo() call
 * its internal sigtimedwait(), so all three are interposed.
 */
static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int timed_wait(const sigset_t *set, siginfo_t *info, const struct timespec *t)
{
	sigtimedwait_fn *f = (sigtimedwait_fn *)real(W_SIGTIMEDWAIT);
	uint64_t end = 0, now;
	struct timespec left;
	siginfo_t mine;
	int sig;

	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	if (t && t->tv_sec >= 0 && t->tv_nsec >= 0 && t->tv_nsec < 1000000000)
		end = mono_ns() + (uint64_t)t->tv_sec * 1000000000u + (uint64_t)t->tv_nsec;
	for (;;) {
		sig = f(set, info ? info : &mine, t);
		if (sig != SIGTRAP || !kk_sync_waited_trap(info ? info : &mine))
			return sig;
		if (!t || !end)
			continue;
		if ((now = mono_ns()) >= end) {
			errno = EAGAIN;
			return -1;
		}
		left.tv_sec = (time_t)((end - now) / 1000000000u);
		left.tv_nsec = (long)((end - now) % 1000000000u);
		t = &left;
	}
}

KK_INTERPOSE(sigtimedwait)
int kk_interpose_sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *t)
{
	return timed_wait(set, info, t);
}

KK_INTERPOSE(sigwaitinfo)
int kk_interpose_sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	return timed_wait(set, info, NULL);
}

/* sigwait() returns the error, and retries EINTR (glibc's does). */
KK_INTERPOSE(sigwait)
int kk_interpose_sigwait(const sigset_t *set, int *sig)
{
	int e = errno, r;

	do
		r = timed_wait(set, NULL, NULL);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		r = errno;
		errno = e;
		return r;
	}
	*sig = r;
	errno = e;
	return 0;
}
