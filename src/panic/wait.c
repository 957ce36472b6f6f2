// SPDX-License-Identifier: MIT
/*
 * After the panic: the pluggable wait policies, the blink hook, the
 * restart, and telling the service manager.
 *
 * halt: the owner sleeps in epoll_wait(2) on a signalfd (SIGTERM, SIGINT),
 *   a timerfd armed with TFD_TIMER_ABSTIME for the next event (the next
 *   blink deadline start + k * period, or the restart deadline) and an
 *   eventfd that parked threads write when they see a tracer.  With no
 *   blink hook and panic_timeout = 0 nothing is armed: the process sleeps
 *   until a signal, with no wake-ups at all.
 * busy: the kernel's loop (100 ms of spinning between blink checks), kept to
 *   measure what the halt saves.
 * debugger: sleeps like halt until a tracer attaches.  It relies on Linux
 *   ending epoll_wait() and rt_sigtimedwait() with EINTR when the thread is
 *   stopped and resumed, even when a tracer swallows the stop signal
 *   (signal(7), "Interruption of system calls ... by stop signals"):
 *   PTRACE_ATTACH sends SIGSTOP to the thread it attaches to, and
 *   PTRACE_INTERRUPT (PTRACE_SEIZE users such as strace) traps it.  Whichever
 *   thread the debugger attaches to (the owner or any parked thread) wakes,
 *   reads TracerPid from /proc/thread-self/status, and the owner is told.
 *   A tracer that seizes without ever interrupting a thread is not seen.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "common/internal.h"
#include "panic/internal.h"

uint64_t panic_init_mask KK_LOAD_DATA;

/* ---- the policy chain -------------------------------------------------------- */

static int halt_run(struct kk_panic_policy *p, const struct kk_panic_wait *w);
static int busy_run(struct kk_panic_policy *p, const struct kk_panic_wait *w);
static int debugger_run(struct kk_panic_policy *p, const struct kk_panic_wait *w);

/* The built-in chain, highest priority first, linked at build time. */
static struct kk_panic_policy pol_busy = { "busy", 100, busy_run, NULL };
static struct kk_panic_policy pol_halt = { "halt", 200, halt_run, &pol_busy };
static struct kk_panic_policy pol_debugger = { "debugger", 300, debugger_run, &pol_halt };

static pthread_mutex_t pol_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kk_panic_policy *policy_head = &pol_debugger;
static struct kk_panic_policy *selected = &pol_halt;

static int builtin(const struct kk_panic_policy *p)
{
	return p == &pol_debugger || p == &pol_halt || p == &pol_busy;
}

static int name_ok(const char *n)
{
	size_t i;

	if (!n)
		return 0;
	for (i = 0; n[i]; i++) {
		char c = n[i];

		if (i >= 31 || !((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return i > 0;
}

static struct kk_panic_policy *find_locked(const char *name)
{
	for (struct kk_panic_policy *p = policy_head; p; p = p->next)
		if (!strcmp(p->name, name))
			return p;
	return NULL;
}

static void insert_locked(struct kk_panic_policy *p)
{
	struct kk_panic_policy **pp = &policy_head;

	while (*pp && (*pp)->priority >= p->priority)
		pp = &(*pp)->next;
	p->next = *pp;
	__atomic_store_n(pp, p, __ATOMIC_RELEASE);
}

KK_EXPORT int kk_panic_policy_register(struct kk_panic_policy *p)
{
	int rc = 0;

	panic_prepare();
	if (!p || !p->run || !name_ok(p->name))
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&pol_lock);
	for (struct kk_panic_policy *it = policy_head; it; it = it->next)
		if (it == p || !strcmp(it->name, p->name))
			rc = -EEXIST;
	if (!rc)
		insert_locked(p);
	pthread_mutex_unlock(&pol_lock);
	return rc;
}

KK_EXPORT int kk_panic_policy_unregister(struct kk_panic_policy *p)
{
	struct kk_panic_policy **pp;

	if (!p)
		return -EINVAL;
	if (builtin(p))
		return -EPERM;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&pol_lock);
	for (pp = &policy_head; *pp; pp = &(*pp)->next) {
		if (*pp == p) {
			__atomic_store_n(pp, p->next, __ATOMIC_RELEASE);
			if (__atomic_load_n(&selected, __ATOMIC_ACQUIRE) == p)
				__atomic_store_n(&selected, &pol_halt, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&pol_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&pol_lock);
	return -ENOENT;
}

int panic_policy_select(const char *name)
{
	struct kk_panic_policy *p;

	if (!name || !*name)
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&pol_lock);
	p = find_locked(name);
	if (p)
		__atomic_store_n(&selected, p, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&pol_lock);
	return p ? 0 : -ENOENT;
}

int panic_policy_exists(const char *name)
{
	int r;

	pthread_mutex_lock(&pol_lock);
	r = name && find_locked(name) != NULL;
	pthread_mutex_unlock(&pol_lock);
	return r;
}

const char *panic_policy_name(void)
{
	return __atomic_load_n(&selected, __ATOMIC_ACQUIRE)->name;
}

void panic_policy_list(char *buf, size_t n)
{
	size_t len = 0;

	buf[0] = '\0';
	pthread_mutex_lock(&pol_lock);
	for (struct kk_panic_policy *p = policy_head; p && len < n; p = p->next)
		len += panic_snprintf(buf + len, n - len, "%s%s(%d)", len ? " " : "", p->name, p->priority);
	pthread_mutex_unlock(&pol_lock);
}

/* ---- restart ------------------------------------------------------------------ */

static char *env_out[4096 + 2];
static char restart_var[48];
static char cmdline[65536];
static char *cmd_argv[1024];

static char **fallback_argv(void)
{
	ssize_t n = kk_read_proc("/proc/self/cmdline", cmdline, sizeof(cmdline));
	int argc = 0;

	if (n <= 0)
		return NULL;
	for (ssize_t i = 0; i < n && argc < 1023; argc++) {
		cmd_argv[argc] = cmdline + i;
		while (i < n && cmdline[i])
			i++;
		i++;
	}
	cmd_argv[argc] = NULL;
	return argc ? cmd_argv : NULL;
}

extern char **environ;

__attribute__((noreturn)) static void reexec(void)
{
	const char *prev = kk_getenv("KK_PANIC_RESTARTS");
	char **argv = panic_argv ? panic_argv : fallback_argv();
	long count = 0;
	int n = 0;
	struct sigaction sa;

	if (!argv) {
		panic_dprintf(KKP_FD, "kernelkit: re-exec: no argv; exiting with status %d\n",
			    KKP_LOAD(panic_set.exit_status));
		panic_exit_status_now();
	}
	if (prev)
		panic_parse_long(prev, strlen(prev), &count);
	panic_snprintf(restart_var, sizeof(restart_var), "KK_PANIC_RESTARTS=%ld", count + 1);
	for (char **e = environ; e && *e && n < 4096; e++)
		if (strncmp(*e, "KK_PANIC_RESTARTS=", 18))
			env_out[n++] = *e;
	env_out[n++] = restart_var;
	env_out[n] = NULL;
	panic_dprintf(KKP_FD, "kernelkit: restart: re-executing %s (restart %ld)\n", argv[0], count + 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigaction(SIGTRAP, &sa, NULL);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &panic_init_mask, NULL, (size_t)(_NSIG / 8));
	execve("/proc/self/exe", argv, env_out);
	{
		uint64_t all = ~0ull;

		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, (size_t)(_NSIG / 8));
	}
	panic_dprintf(KKP_FD, "kernelkit: re-exec failed (errno %d); exiting with status %d\n", errno,
		    KKP_LOAD(panic_set.exit_status));
	panic_exit_status_now();
}

void panic_restart(void)
{
	switch (KKP_LOAD(panic_set.restart)) {
	case KK_PANIC_RESTART_ABORT: {
		struct sigaction sa;
		uint64_t m = 1ull << (SIGABRT - 1);

		panic_dprintf(KKP_FD, "kernelkit: restart: abort\n");
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGABRT, &sa, NULL);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &m, NULL, (size_t)(_NSIG / 8));
		syscall(SYS_tgkill, panic_getpid(), panic_gettid(), SIGABRT);
		panic_exit_status_now();
	}
	case KK_PANIC_RESTART_REEXEC:
		reexec();
	default:
		panic_dprintf(KKP_FD, "kernelkit: restart: exit with status %d\n",
			    KKP_LOAD(panic_set.exit_status));
		panic_exit_status_now();
	}
}

/* ---- SIGTERM / SIGINT ------------------------------------------------------------ */

__attribute__((noreturn)) static void term_exit(int sig)
{
	panic_dprintf(KKP_FD, "kernelkit: %s after panic: exiting with status %d\n",
		    sig == SIGINT ? "SIGINT" : "SIGTERM", KKP_LOAD(panic_set.exit_status));
	panic_exit_status_now();
}

static void term_handler(int sig)
{
	term_exit(sig);
}

/* ---- the zero-CPU wait -------------------------------------------------------------- */

static int ep = -1, tfd = -1, sfd = -1;

static int setup_fds(void)
{
	sigset_t ts;
	struct epoll_event ev;
	int evfd;

	if (ep >= 0)
		return 0;
	sigemptyset(&ts);
	sigaddset(&ts, SIGTERM);
	sigaddset(&ts, SIGINT);
	sfd = signalfd(-1, &ts, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || tfd < 0 || evfd < 0 || ep < 0)
		goto fail;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.fd = sfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev))
		goto fail;
	ev.data.fd = tfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &ev))
		goto fail;
	ev.data.fd = evfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, evfd, &ev))
		goto fail;
	KKP_STORE(panic_debug_evfd, evfd);
	return 0;
fail:
	panic_dprintf(KKP_FD, "kernelkit: after panic: no epoll/timerfd/signalfd (errno %d); "
		    "waiting in sigtimedwait\n", errno);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	if (evfd >= 0)
		close(evfd);
	if (ep >= 0)
		close(ep);
	sfd = tfd = ep = -1;
	return -1;
}

struct tracer_find {
	pid_t tid;
	int tracer;
};

static int check_traced(pid_t tid, void *arg)
{
	struct tracer_find *f = arg;
	int t = panic_tracer_pid(tid);

	if (t > 0) {
		f->tid = tid;
		f->tracer = t;
		return 1;
	}
	return 0;
}

static int find_tracer(struct tracer_find *f)
{
	f->tid = 0;
	f->tracer = 0;
	return panic_for_each_task(check_traced, f) == 1;
}

static int blink_state;

static void call_blink(void *arg)
{
	void (*fn)(int, void *) = panic_blink_fn;

	(void)arg;
	blink_state ^= 1;
	if (fn)
		fn(blink_state, panic_blink_arg);
}

/* The blink hook, called at a fixed rate while we wait. */
struct blinker {
	uint64_t period;	/* ns; 0: no hook, or it faulted and was removed */
	uint64_t start, next;
};

static void blink_init(struct blinker *b)
{
	b->period = panic_blink_fn ? (uint64_t)KKP_LOAD(panic_set.blink_ms) * 1000000ull : 0;
	b->start = kk_now_ns();
	b->next = b->start + b->period;
}

/* Call the hook if it is due at @now: 1 if it was (the caller reads the clock again). */
static int blink_due(struct blinker *b, uint64_t now)
{
	if (!b->period || now < b->next)
		return 0;
	if (panic_guarded("the blink hook", call_blink, NULL)) {
		panic_dprintf(KKP_FD, "kernelkit: blink hook removed\n");
		panic_blink_fn = NULL;
		b->period = 0;
	} else {
		/* Fixed rate: the next multiple of the period, never a burst. */
		b->next = b->start + ((kk_now_ns() - b->start) / b->period + 1) * b->period;
	}
	return 1;
}

/* When to wake next (absolute CLOCK_MONOTONIC ns; 0: never): a blink or the deadline. */
static uint64_t next_wake(const struct kk_panic_wait *w, const struct blinker *b)
{
	uint64_t next = b->period ? b->next : 0;

	if (w->deadline_ns && (!next || w->deadline_ns < next))
		next = w->deadline_ns;
	return next;
}

/* Consume the event on @fd: a terminating signal exits; 1 for the debugger's event. */
static int drain_event(int fd)
{
	uint64_t v;

	if (fd == sfd) {
		struct signalfd_siginfo si;

		if (read(sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			term_exit((int)si.ssi_signo);
		return 0;
	}
	if (fd == tfd) {
		if (read(tfd, &v, sizeof(v)) < 0)
			v = 0;
		return 0;
	}
	if (read(KKP_LOAD(panic_debug_evfd), &v, sizeof(v)) < 0)
		v = 0;
	return 1;
}

/*
 * Wait on the epoll set (signalfd, timerfd armed for @next, debugger event).
 * 1 if interrupted (a signal or the debugger's event), 0 if not, -1 if epoll
 * failed: the caller waits with sigtimedwait() from then on.
 */
static int wait_epoll(uint64_t next)
{
	struct itimerspec its;
	struct epoll_event ev[4];
	int n, interrupted = 0;

	memset(&its, 0, sizeof(its));
	if (next)
		its.it_value = kk_ns_to_ts(next);
	timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
	n = epoll_wait(ep, ev, 4, -1);
	if (n < 0)
		return errno == EINTR ? 1 : -1;
	for (int i = 0; i < n; i++)
		interrupted |= drain_event(ev[i].data.fd);
	return interrupted;
}

/* Without the fds: SIGTERM or SIGINT exits; 1 if another signal interrupted the wait. */
static int wait_signals(uint64_t next)
{
	sigset_t ts;
	struct timespec rel, *relp = NULL;
	int sig;

	sigemptyset(&ts);
	sigaddset(&ts, SIGTERM);
	sigaddset(&ts, SIGINT);
	if (next) {
		uint64_t now = kk_now_ns();

		rel = kk_ns_to_ts(next > now ? next - now : 0);
		relp = &rel;
	}
	sig = sigtimedwait(&ts, NULL, relp);
	if (sig == SIGTERM || sig == SIGINT)
		term_exit(sig);
	return sig < 0 && errno == EINTR;
}

/*
 * 0: deadline reached; 1: a tracer is attached (only when want_dbg).  A
 * tracer is looked for at the start and after each interruption: a debugger
 * attaching interrupts the thread it attaches to (this one: EINTR; a parked
 * one writes the eventfd, see panic_park_self()), so nothing polls /proc.
 */
static int idle_wait(const struct kk_panic_wait *w, int want_dbg)
{
	struct blinker b;
	struct tracer_find tf;
	int fds, woken;

	blink_init(&b);
	fds = setup_fds() == 0;
	if (want_dbg) {
		KKP_STORE(panic_debug_wanted, 1);
		if (find_tracer(&tf))
			return 1;
	}
	for (;;) {
		uint64_t now = kk_now_ns();

		if (w->deadline_ns && now >= w->deadline_ns)
			return 0;
		if (blink_due(&b, now))
			continue;
		if (fds) {
			woken = wait_epoll(next_wake(w, &b));
			if (woken < 0) {
				fds = 0;
				continue;
			}
		} else {
			woken = wait_signals(next_wake(w, &b));
		}
		if (woken && want_dbg && find_tracer(&tf))
			return 1;
	}
}

KK_EXPORT int kk_panic_idle(const struct kk_panic_wait *w)
{
	if (!w)
		return -EINVAL;
	if (KKP_LOAD(panic_owner) != panic_gettid())
		return -EPERM;
	return idle_wait(w, 0);
}

/* ---- built-in policies ---------------------------------------------------------- */

static int halt_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	(void)p;
	return idle_wait(w, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static int busy_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	uint64_t period = panic_blink_fn ? (uint64_t)KKP_LOAD(panic_set.blink_ms) * 1000000ull : 0;
	uint64_t i_next = kk_now_ns() + period;
	uint64_t unblock = (1ull << (SIGTERM - 1)) | (1ull << (SIGINT - 1));

	(void)p;
	/* The handler answers SIGTERM/SIGINT; nothing else here sleeps. */
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &unblock, NULL, (size_t)(_NSIG / 8));
	for (;;) {
		uint64_t t = kk_now_ns(), end = t + 100000000ull;	/* mdelay(PANIC_TIMER_STEP) */

		if (w->deadline_ns && t >= w->deadline_ns)
			return 0;
		if (period && t >= i_next) {
			if (panic_guarded("the blink hook", call_blink, NULL)) {
				panic_blink_fn = NULL;
				period = 0;
			}
			i_next = t + period;
		}
		if (w->deadline_ns && end > w->deadline_ns)
			end = w->deadline_ns;
		while (kk_now_ns() < end)
			cpu_relax();
	}
}

static int debugger_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	struct tracer_find tf;
	struct sigaction sa;

	(void)p;
	panic_dprintf(KKP_FD, "kernelkit: waiting for a debugger to attach: gdb -p %d\n", (int)panic_getpid());
	if (idle_wait(w, 1) == 0)
		return 0;
	find_tracer(&tf);
	panic_dprintf(KKP_FD, "kernelkit: debugger attached: thread %d traced by pid %d\n",
		    (int)tf.tid, tf.tracer);
	if (panic_tracer_pid(0) > 0) {
		/* Stop here for the debugger.  Ignored if it passes the signal on. */
		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_IGN;
		sigaction(SIGTRAP, &sa, NULL);
		syscall(SYS_tgkill, panic_getpid(), panic_gettid(), SIGTRAP);
	}
	return KK_PANIC_POLICY_NEXT;
}

/* ---- sd_notify --------------------------------------------------------------------- */

void panic_sd_notify(const char *msg)
{
	const char *path = kk_getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa;
	socklen_t salen;
	char buf[1280];
	size_t n, len;
	int fd;

	if (!path || !*path)
		return;
	n = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || n >= sizeof(sa.sun_path)) {
		panic_dprintf(KKP_FD, "kernelkit: NOTIFY_SOCKET=%s not supported\n", path);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, n);
	if (path[0] == '@') {
		sa.sun_path[0] = '\0';	/* abstract socket */
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	} else {
		salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1);
	}
	len = panic_snprintf(buf, sizeof(buf), "STATUS=kernelkit panic: %s\n%s", msg,
			   KKP_LOAD(panic_set.sd_watchdog) ? "WATCHDOG=trigger\n" : "");
	if (len > sizeof(buf) - 1)
		len = sizeof(buf) - 1;
	/* One line for STATUS=: newlines in the message become spaces. */
	for (size_t i = 7; i < len; i++) {
		if (buf[i] == '\n') {
			if (!strncmp(buf + i + 1, "WATCHDOG=", 9) || i + 1 == len)
				break;
			buf[i] = ' ';
		}
	}
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, buf, len, MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0)
		panic_dprintf(KKP_FD, "kernelkit: sd_notify to %s failed (errno %d)\n", path, errno);
	else
		panic_dprintf(KKP_FD, "kernelkit: told the service manager (NOTIFY_SOCKET)\n");
	close(fd);
}

/* ---- the walk ------------------------------------------------------------------------ */

struct pol_call {
	struct kk_panic_policy *p;
	const struct kk_panic_wait *w;
	int ret;
};

static void call_policy(void *arg)
{
	struct pol_call *c = arg;

	c->ret = c->p->run(c->p, c->w);
}

void panic_after_panic(void)
{
	struct kk_panic_wait w = { KKP_LOAD(panic_set.timeout), 0, panic_msg };
	struct kk_panic_policy *p;
	struct sigaction sa;

	/* SIGTERM/SIGINT exit with the panic status in whichever thread gets them. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = term_handler;
	sa.sa_flags = SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (w.timeout < 0) {
		panic_dprintf(KKP_FD, "kernelkit: panic_timeout %d: restarting now\n", w.timeout);
		panic_restart();
	}
	if (w.timeout > 0) {
		w.deadline_ns = kk_now_ns() + (uint64_t)w.timeout * 1000000000ull;
		panic_dprintf(KKP_FD, "kernelkit: restarting in %d seconds..\n", w.timeout);
	}
	panic_dprintf(KKP_FD, "---[ end panic - not syncing: %s ]---\n", panic_msg);

	for (p = __atomic_load_n(&selected, __ATOMIC_ACQUIRE); p;
	     p = __atomic_load_n(&p->next, __ATOMIC_ACQUIRE)) {
		struct pol_call c = { p, &w, KK_PANIC_POLICY_NEXT };

		if (panic_guarded("an after-panic policy", call_policy, &c)) {
			panic_dprintf(KKP_FD, "kernelkit: policy %s failed; trying the next\n", p->name);
			continue;
		}
		if (c.ret == 0)
			panic_restart();
	}
	idle_wait(&w, 0);
	panic_restart();
}
