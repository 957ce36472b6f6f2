// SPDX-License-Identifier: MIT
/*
 * panic(): the flow.  See include/kernelkit/panic.h for the contract.
 *
 * Everything after the compare-and-swap runs in one thread (the owner) with
 * every signal but the synchronous fault signals blocked, on a reserved
 * stack, and uses only system calls and this facility's own formatting
 * (fmt.c): the heap, stdio and any lock may belong to a thread that is being
 * stopped.
 *
 * Load costs nothing but a look at the signal mask and the settings: the
 * reserved stacks and libgcc_s (which glibc's backtrace() loads on first use)
 * come with the first call that configures panic (panic_prepare()), or at the
 * panic itself; KK_PANIC_* settings reserve the stacks at load but never
 * unwind there (see panic_prepare()); the calling thread's alternate signal stack comes with
 * panic_on_oops (the fault handlers need it), the park signal's handler with
 * the panic.
 */
#include <errno.h>
#include <execinfo.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <poll.h>
#include <ucontext.h>
#include <unistd.h>

#include "common/internal.h"
#include "panic/internal.h"
#include "dynamic_debug/internal.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KKP_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define KKP_ASAN 1
#endif
#ifdef KKP_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

struct panic_settings panic_set = {
	.timeout = 0,
	.on_warn = 0,
	.on_oops = 0,
	.restart = KK_PANIC_RESTART_EXIT,
	.exit_status = KK_PANIC_EXIT_STATUS_DEFAULT,
	.core_dump = 0,
	.stop_timeout_ms = 1000,
	.notifiers_first = 0,
	.sd_watchdog = 0,
	.blink_ms = 200,
};

void (*volatile panic_blink_fn)(int state, void *arg);
void *volatile panic_blink_arg;

int panic_owner;
char panic_msg[1024];

static int panic_depth;
static struct kk_panic_stats stats;
static const char *volatile panic_stage = "entry";
static sigjmp_buf *volatile guard_env;
static const char *volatile guard_what;
static void *bt_buf[64];
static int bt_n;

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kk_panic_notifier *notifier_head;
static unsigned long taint_mask;
static unsigned long warn_count;

/* The reserved stacks: [guard][panic stack][guard][owner's signal stack]. */
#define KKP_PANIC_STACK		(256 * 1024)
#define KKP_ALT_STACK		(64 * 1024)
static char *panic_stack;
static char *owner_altstack;

static const int fault_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE };
#define NFAULT	((int)(sizeof(fault_sigs) / sizeof(fault_sigs[0])))
static struct sigaction old_fault_act[NFAULT];
static int fault_hooked;

static void fault_handler(int sig, siginfo_t *si, void *uc);

/* ---- signal masks, raw ------------------------------------------------------ */

#define KSIGSET_SIZE	(_NSIG / 8)

static uint64_t sigbit(int sig)
{
	return 1ull << (sig - 1);
}

/* Block everything except the synchronous faults (blocking those makes the kernel kill us). */
static uint64_t panic_mask(void)
{
	uint64_t m = ~0ull;

	for (int i = 0; i < NFAULT; i++)
		m &= ~sigbit(fault_sigs[i]);
	m &= ~sigbit(SIGTRAP);
	return m;
}

static void set_mask(uint64_t m)
{
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &m, NULL, KSIGSET_SIZE);
}

/* ---- taint and WARN --------------------------------------------------------- */

static const char taint_true[KK_TAINT_FLAGS_COUNT + 1] = "PFSRMBUDAWCIOELKXTN";

KK_EXPORT int kk_add_taint(unsigned flag)
{
	if (flag >= KK_TAINT_FLAGS_COUNT)
		return -EINVAL;
	__atomic_fetch_or(&taint_mask, 1ul << flag, __ATOMIC_RELAXED);
	return 0;
}

KK_EXPORT int kk_test_taint(unsigned flag)
{
	if (flag >= KK_TAINT_FLAGS_COUNT)
		return 0;
	return !!(KKP_LOAD(taint_mask) & (1ul << flag));
}

KK_EXPORT unsigned long kk_get_taint(void)
{
	return KKP_LOAD(taint_mask);
}

KK_EXPORT const char *kk_print_tainted(char *buf, int len)
{
	unsigned long m = KKP_LOAD(taint_mask);
	int n = 0, last = 0;

	if (!buf || len <= 0)
		return "";
	if (!m) {
		panic_snprintf(buf, (size_t)len, "Not tainted");
		return buf;
	}
	n = (int)panic_snprintf(buf, (size_t)len, "Tainted: ");
	for (int i = 0; i < KK_TAINT_FLAGS_COUNT && n + 1 < len; i++) {
		char c = (m & (1ul << i)) ? taint_true[i] : (i == 0 ? 'G' : ' ');

		buf[n++] = c;
		if (c != ' ')
			last = n;
	}
	buf[last] = '\0';
	return buf;
}

KK_EXPORT unsigned long kk_warn_count(void)
{
	return KKP_LOAD(warn_count);
}

static void warn_common(const char *file, int line, const char *func, const char *fmt, va_list ap)
{
	char tainted[48], buf[512];
	void *bt[32];
	int n;

	__atomic_fetch_add(&warn_count, 1, __ATOMIC_RELAXED);
	kk_add_taint(KK_TAINT_WARN);
	panic_dprintf(KKP_FD, "------------[ cut here ]------------\n"
		    "WARNING: PID: %d TID: %d at %s:%d %s\n",
		    (int)panic_getpid(), (int)panic_gettid(), file ? file : "?", line, func ? func : "?");
	if (fmt) {
		size_t len = panic_vsnprintf(buf, sizeof(buf), fmt, ap);

		if (len > sizeof(buf) - 1)
			len = sizeof(buf) - 1;
		panic_write_all(KKP_FD, buf, len);
		if (!len || buf[len - 1] != '\n')
			panic_write_all(KKP_FD, "\n", 1);
	}
	panic_dprintf(KKP_FD, "%s\nCall Trace:\n", kk_print_tainted(tainted, sizeof(tainted)));
	n = kk_backtrace(bt, 32);
	if (n > 1)
		backtrace_symbols_fd(bt + 1, n - 1, KKP_FD);
	panic_dprintf(KKP_FD, "---[ end trace %lu ]---\n", kk_warn_count());
	if (KKP_LOAD(panic_set.on_warn))
		kk_panic("panic_on_warn set ...");
}

KK_EXPORT void kk_warn_slowpath(const char *file, int line, const char *func, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	warn_common(file, line, func, fmt, ap);
	va_end(ap);
}

KK_EXPORT void kk_warn_slowpath_null(const char *file, int line, const char *func)
{
	va_list ap;

	/* The va_list is never read when fmt is NULL. */
	memset(&ap, 0, sizeof(ap));
	warn_common(file, line, func, NULL, ap);
}

KK_EXPORT void kk_bug(const char *file, int line, const char *func)
{
	kk_add_taint(KK_TAINT_DIE);
	if (KKP_LOAD(panic_set.on_oops) || KKP_LOAD(panic_owner))
		kk_panic("BUG at %s:%d %s()", file ? file : "?", line, func ? func : "?");
	panic_dprintf(KKP_FD, "------------[ cut here ]------------\n"
		    "BUG at %s:%d %s() (PID: %d TID: %d); panic_on_oops is off: aborting\n",
		    file ? file : "?", line, func ? func : "?", (int)panic_getpid(), (int)panic_gettid());
	signal(SIGABRT, SIG_DFL);
	{
		uint64_t m = sigbit(SIGABRT);

		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &m, NULL, KSIGSET_SIZE);
	}
	syscall(SYS_tgkill, panic_getpid(), panic_gettid(), SIGABRT);
	_exit(128 + SIGABRT);
}

/* ---- notifiers ---------------------------------------------------------------- */

KK_EXPORT int kk_panic_in_progress(void)
{
	return KKP_LOAD(panic_owner) != 0;
}

KK_EXPORT int kk_panic_notifier_register(struct kk_panic_notifier *nb)
{
	struct kk_panic_notifier **pp, *it;

	panic_prepare();
	if (!nb || !nb->notifier_call)
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&reg_lock);
	for (it = notifier_head; it; it = it->next) {
		if (it == nb) {
			pthread_mutex_unlock(&reg_lock);
			return -EEXIST;
		}
	}
	pp = &notifier_head;
	while (*pp && (*pp)->priority >= nb->priority)
		pp = &(*pp)->next;
	nb->next = *pp;
	__atomic_store_n(pp, nb, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

KK_EXPORT int kk_panic_notifier_unregister(struct kk_panic_notifier *nb)
{
	struct kk_panic_notifier **pp;

	if (!nb)
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&reg_lock);
	for (pp = &notifier_head; *pp; pp = &(*pp)->next) {
		if (*pp == nb) {
			__atomic_store_n(pp, nb->next, __ATOMIC_RELEASE);
			pthread_mutex_unlock(&reg_lock);
			return 0;
		}
	}
	pthread_mutex_unlock(&reg_lock);
	return -ENOENT;
}

/* ---- settings ----------------------------------------------------------------- */

static int bool_ok(int on)
{
	return on == 0 || on == 1;
}

KK_EXPORT int kk_panic_set_timeout(int seconds)
{
	panic_prepare();
	KKP_STORE(panic_set.timeout, seconds);
	return 0;
}

KK_EXPORT int kk_panic_get_timeout(void)
{
	return KKP_LOAD(panic_set.timeout);
}

KK_EXPORT int kk_panic_set_on_warn(int on)
{
	panic_prepare();
	if (!bool_ok(on))
		return -EINVAL;
	KKP_STORE(panic_set.on_warn, on);
	return 0;
}

KK_EXPORT int kk_panic_get_on_warn(void)
{
	return KKP_LOAD(panic_set.on_warn);
}

static int hook_faults(int on)
{
	struct sigaction sa;
	int rc = 0;

	memset(&sa, 0, sizeof(sa));
	kk_handler_note(fault_handler);
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	for (int i = 0; i < NFAULT; i++)
		sigdelset(&sa.sa_mask, fault_sigs[i]);
	if (on && !fault_hooked) {
		for (int i = 0; i < NFAULT; i++) {
			if (sigaction(fault_sigs[i], &sa, &old_fault_act[i])) {
				rc = -errno;
				while (--i >= 0)
					sigaction(fault_sigs[i], &old_fault_act[i], NULL);
				return rc;
			}
		}
		fault_hooked = 1;
	} else if (!on && fault_hooked) {
		for (int i = 0; i < NFAULT; i++)
			sigaction(fault_sigs[i], &old_fault_act[i], NULL);
		fault_hooked = 0;
	}
	return 0;
}

KK_EXPORT int kk_panic_set_on_oops(int on)
{
	int rc;

	panic_prepare();
	if (!bool_ok(on))
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	/* A stack overflow in this thread must find a stack for the handler. */
	if (on)
		kk_panic_thread_init();
	pthread_mutex_lock(&reg_lock);
	rc = hook_faults(on);
	if (!rc)
		KKP_STORE(panic_set.on_oops, on);
	pthread_mutex_unlock(&reg_lock);
	return rc;
}

KK_EXPORT int kk_panic_get_on_oops(void)
{
	return KKP_LOAD(panic_set.on_oops);
}

KK_EXPORT int kk_panic_set_restart(enum kk_panic_restart how)
{
	panic_prepare();
	if ((int)how < KK_PANIC_RESTART_EXIT || how > KK_PANIC_RESTART_REEXEC)
		return -EINVAL;
	KKP_STORE(panic_set.restart, (int)how);
	return 0;
}

KK_EXPORT enum kk_panic_restart kk_panic_get_restart(void)
{
	return (enum kk_panic_restart)KKP_LOAD(panic_set.restart);
}

KK_EXPORT int kk_panic_set_exit_status(int status)
{
	panic_prepare();
	if (status < 1 || status > 255)
		return -EINVAL;
	KKP_STORE(panic_set.exit_status, status);
	return 0;
}

KK_EXPORT int kk_panic_get_exit_status(void)
{
	return KKP_LOAD(panic_set.exit_status);
}

KK_EXPORT int kk_panic_set_policy(const char *name)
{
	panic_prepare();
	return panic_policy_select(name);
}

KK_EXPORT const char *kk_panic_get_policy(void)
{
	return panic_policy_name();
}

KK_EXPORT int kk_panic_set_core_dump(int on)
{
	panic_prepare();
	if (!bool_ok(on))
		return -EINVAL;
	KKP_STORE(panic_set.core_dump, on);
	return 0;
}

KK_EXPORT int kk_panic_set_stop_timeout_ms(int ms)
{
	panic_prepare();
	if (ms < 1 || ms > 60000)
		return -EINVAL;
	KKP_STORE(panic_set.stop_timeout_ms, ms);
	return 0;
}

KK_EXPORT int kk_panic_set_notifiers_first(int on)
{
	panic_prepare();
	if (!bool_ok(on))
		return -EINVAL;
	KKP_STORE(panic_set.notifiers_first, on);
	return 0;
}

KK_EXPORT int kk_panic_set_sd_watchdog(int on)
{
	panic_prepare();
	if (!bool_ok(on))
		return -EINVAL;
	KKP_STORE(panic_set.sd_watchdog, on);
	return 0;
}

KK_EXPORT int kk_panic_set_blink(void (*blink)(int state, void *arg), void *arg, int period_ms)
{
	panic_prepare();
	if (blink && (period_ms < 10 || period_ms > 60000))
		return -EINVAL;
	if (kk_panic_in_progress())
		return -EBUSY;
	pthread_mutex_lock(&reg_lock);
	panic_blink_fn = NULL;
	panic_blink_arg = arg;
	if (blink)
		KKP_STORE(panic_set.blink_ms, period_ms);
	panic_blink_fn = blink;
	pthread_mutex_unlock(&reg_lock);
	return 0;
}

KK_EXPORT int kk_panic_stop_signal(void)
{
	return kk_park_signal();
}

KK_EXPORT int kk_panic_get_stats(struct kk_panic_stats *st)
{
	if (!st)
		return -EINVAL;
	if (!kk_panic_in_progress())
		return -ENOENT;
	*st = stats;
	return 0;
}

/* ---- the flow ----------------------------------------------------------------- */

void panic_exit_status_now(void)
{
	_exit(KKP_LOAD(panic_set.exit_status));
}

int panic_guarded(const char *what, void (*fn)(void *), void *arg)
{
	sigjmp_buf env;
	sigjmp_buf *prev = guard_env;
	const char *prev_what = guard_what;

	if (sigsetjmp(env, 1)) {
		guard_env = prev;
		guard_what = prev_what;
		return 1;
	}
	guard_what = what;
	guard_env = &env;
	fn(arg);
	guard_env = prev;
	guard_what = prev_what;
	return 0;
}

__attribute__((noreturn)) static void recover_or_exit(void)
{
	int depth = __atomic_add_fetch(&panic_depth, 1, __ATOMIC_RELAXED);
	sigjmp_buf *env = guard_env;

	stats.recursions = depth;
	if (env && depth < 16)
		siglongjmp(*env, 1);
	panic_dprintf(KKP_FD, "kernelkit: cannot recover from a panic in %s; exiting with status %d\n",
		    guard_what ? guard_what : panic_stage, KKP_LOAD(panic_set.exit_status));
	panic_exit_status_now();
}

__attribute__((noreturn)) static void panic_recursive(const char *fmt, va_list ap)
{
	char msg[256];

	panic_vsnprintf(msg, sizeof(msg), fmt, ap);
	panic_dprintf(KKP_FD, "kernelkit: recursive panic in %s: %s\n",
		    guard_what ? guard_what : panic_stage, msg);
	recover_or_exit();
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGILL: return "SIGILL";
	case SIGFPE: return "SIGFPE";
	case SIGTRAP: return "SIGTRAP";
	default: return "signal";
	}
}

static void fault_handler(int sig, siginfo_t *si, void *ucv)
{
	pid_t me = panic_gettid();
	pid_t owner = KKP_LOAD(panic_owner);

	(void)ucv;
	if (owner == me) {
		panic_dprintf(KKP_FD, "kernelkit: recursive fault in %s: %s (code %d) at %p\n",
			    guard_what ? guard_what : panic_stage, sig_name(sig), si ? si->si_code : 0,
			    si ? si->si_addr : NULL);
		recover_or_exit();
	}
	if (owner)
		panic_park_self();	/* another thread is panicking */
	if (!KKP_LOAD(panic_set.on_oops)) {
		/* Unhooked meanwhile: die of the signal as if we had never been here. */
		signal(sig, SIG_DFL);
		if (!si || si->si_code <= 0)
			syscall(SYS_tgkill, panic_getpid(), me, sig);
		return;		/* the fault happens again, with the default action */
	}
	kk_add_taint(KK_TAINT_DIE);
	panic_dprintf(KKP_FD, "Oops: %s (code %d) at address %p, PID: %d TID: %d\n",
		    sig_name(sig), si ? si->si_code : 0, si ? si->si_addr : NULL,
		    (int)panic_getpid(), (int)me);
	kk_panic("Fatal exception: %s", sig_name(sig));
}

/* ---- panic stack ---------------------------------------------------------- */

static void reserve_stacks(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	size_t total = pg + KKP_PANIC_STACK + pg + KKP_ALT_STACK;
	char *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (m == MAP_FAILED)
		return;
	mprotect(m, pg, PROT_NONE);
	mprotect(m + pg + KKP_PANIC_STACK, pg, PROT_NONE);
	__atomic_store_n(&owner_altstack, m + pg + KKP_PANIC_STACK + pg, __ATOMIC_RELAXED);
	__atomic_store_n(&panic_stack, m + pg, __ATOMIC_RELEASE);
}

/* Set while panic_init() applies the KK_PANIC_* settings. */
static int in_ctor;

/*
 * The first call that configures panic prepares it: reserve the stacks, and
 * have glibc's backtrace() load libgcc_s now rather than in a panic (where
 * descriptors or memory may have run out, or another thread may hold the
 * loader's lock).  A panic that comes first does both itself.
 *
 * Settings from the environment are applied in a constructor: there only the
 * stacks are reserved.  No unwinding runs in a constructor (in a static
 * program it aborts there, and loading libgcc_s is a dlopen at start-up):
 * the program's first configuration call, kk_panic_thread_init() or WARN
 * loads it, or else the panic.
 */
void panic_prepare(void)
{
	static int done;
	void *bt[2];

	if (in_ctor) {
		if (!__atomic_load_n(&panic_stack, __ATOMIC_ACQUIRE))
			reserve_stacks();
		return;
	}
	if (__atomic_load_n(&done, __ATOMIC_ACQUIRE) || __atomic_exchange_n(&done, 1, __ATOMIC_ACQ_REL))
		return;
	kk_backtrace(bt, 2);
	if (!__atomic_load_n(&panic_stack, __ATOMIC_ACQUIRE))
		reserve_stacks();
}

KK_EXPORT int kk_panic_thread_init(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	stack_t ss, old;
	char *m;

	panic_prepare();
	if (sigaltstack(NULL, &old) == 0 && !(old.ss_flags & SS_DISABLE))
		return 0;
	m = mmap(NULL, pg + KKP_ALT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	mprotect(m, pg, PROT_NONE);
	ss.ss_sp = m + pg;
	ss.ss_size = KKP_ALT_STACK;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL)) {
		int e = errno;

		munmap(m, pg + KKP_ALT_STACK);
		return -e;
	}
	return 0;
}

/* ---- the owner, on the panic stack ---------------------------------------- */

static void do_backtrace(void *arg)
{
	(void)arg;
	if (bt_n > 0)
		backtrace_symbols_fd(bt_buf, bt_n, KKP_FD);
	else
		panic_dprintf(KKP_FD, " (no backtrace)\n");
}

static struct kk_panic_notifier *cur_nb;

static void call_notifier(void *arg)
{
	int *ret = arg;

	*ret = cur_nb->notifier_call(cur_nb, 0, panic_msg);
}

static void run_notifiers(void)
{
	struct kk_panic_notifier *nb;
	int n = 0;

	panic_stage = "panic notifiers";
	for (nb = __atomic_load_n(&notifier_head, __ATOMIC_ACQUIRE); nb;
	     nb = __atomic_load_n(&nb->next, __ATOMIC_ACQUIRE)) {
		int ret = KK_NOTIFY_DONE;

		cur_nb = nb;
		n++;
		if (panic_guarded("a panic notifier", call_notifier, &ret)) {
			panic_dprintf(KKP_FD, "kernelkit: panic notifier %d (priority %d, %p) failed; going on\n",
				    n, nb->priority, (void *)nb->notifier_call);
			continue;
		}
		if (ret & KK_NOTIFY_STOP_MASK) {
			panic_dprintf(KKP_FD, "kernelkit: panic notifier %d (priority %d) stopped the chain\n",
				    n, nb->priority);
			break;
		}
	}
}

static void stop_others(void *arg)
{
	(void)arg;
	panic_stop_others(&stats);
}

static void core_dump(void *arg)
{
	long pid;
	int status = 0, pfd;

	(void)arg;
	panic_stage = "core dump";
	pid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
	if (pid < 0) {
		panic_dprintf(KKP_FD, "kernelkit: core dump: fork failed (errno %d)\n", errno);
		return;
	}
	if (pid == 0) {
		/* A copy with this thread only: dump it with the default SIGABRT. */
		struct sigaction sa;
		uint64_t m = sigbit(SIGABRT);

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = SIG_DFL;
		sigaction(SIGABRT, &sa, NULL);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &m, NULL, KSIGSET_SIZE);
		syscall(SYS_tgkill, syscall(SYS_getpid), syscall(SYS_gettid), SIGABRT);
		_exit(127);
	}
	pfd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
	if (pfd >= 0) {
		struct pollfd p = { pfd, POLLIN, 0 };
		int r;

		do
			r = poll(&p, 1, 30000);
		while (r < 0 && errno == EINTR);
		close(pfd);
		if (r == 0) {
			panic_dprintf(KKP_FD, "kernelkit: core dump: child %ld still dumping after 30 s; going on\n", pid);
			return;
		}
	}
	if (waitpid((pid_t)pid, &status, 0) != (pid_t)pid) {
		panic_dprintf(KKP_FD, "kernelkit: core dump: child %ld not waitable (errno %d)\n", pid, errno);
		return;
	}
	if (WIFSIGNALED(status))
		panic_dprintf(KKP_FD, "kernelkit: core dump: child %ld killed by signal %d%s\n", pid,
			    WTERMSIG(status), WCOREDUMP(status) ? " (core dumped)" : " (no core: see ulimit -c)");
	else
		panic_dprintf(KKP_FD, "kernelkit: core dump: child %ld exited with %d\n", pid,
			    WEXITSTATUS(status));
}

static void dump_trace(void *arg)
{
	(void)arg;
	kk_dd_trace_dump_fd(KKP_FD, KK_DD_TRACE_PANIC_LINES, panic_snprintf);
}

static void send_notify(void *arg)
{
	(void)arg;
	panic_stage = "sd_notify";
	panic_sd_notify(panic_msg);
}

__attribute__((noreturn)) static void panic_body(void)
{
	char comm[32], tainted[48];
	ssize_t n;

	panic_stage = "report";
	n = kk_read_proc("/proc/thread-self/comm", comm, sizeof(comm));
	if (n <= 0)
		comm[0] = '\0';
	else if (comm[n - 1] == '\n')
		comm[n - 1] = '\0';
	panic_dprintf(KKP_FD, "kernelkit: panic - not syncing: %s\n"
		    "PID: %d TID: %d Comm: %s %s\nCall Trace:\n",
		    panic_msg, (int)panic_getpid(), (int)panic_gettid(), comm,
		    kk_print_tainted(tainted, sizeof(tainted)));
	panic_guarded("the backtrace", do_backtrace, NULL);

	if (!KKP_LOAD(panic_set.notifiers_first)) {
		panic_stage = "stopping threads";
		panic_guarded("stopping threads", stop_others, NULL);
		run_notifiers();
	} else {
		run_notifiers();
		panic_stage = "stopping threads";
		panic_guarded("stopping threads", stop_others, NULL);
	}
	/* the flight recorder, with the other threads stopped (ftrace_dump_on_oops) */
	panic_stage = "trace dump";
	panic_guarded("the trace dump", dump_trace, NULL);
	panic_control_gone();
	if (KKP_LOAD(panic_set.core_dump))
		panic_guarded("the core dump", core_dump, NULL);
	panic_guarded("sd_notify", send_notify, NULL);
	panic_stage = "after panic";
	panic_after_panic();
}

static void on_panic_stack(void)
{
#ifdef KKP_ASAN
	__sanitizer_finish_switch_fiber(NULL, NULL, NULL);
#endif
	panic_body();
}

static ucontext_t panic_uc;

__attribute__((noreturn)) static void switch_stack_and_run(void)
{
	stack_t ss;

	if (!__atomic_load_n(&panic_stack, __ATOMIC_ACQUIRE))
		reserve_stacks();	/* nobody configured panic before */

	/* A signal stack for faults in notifiers, unless the thread has one. */
	if (owner_altstack && sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_DISABLE)) {
		ss.ss_sp = owner_altstack;
		ss.ss_size = KKP_ALT_STACK;
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
	}
	if (panic_stack && getcontext(&panic_uc) == 0) {
		panic_uc.uc_stack.ss_sp = panic_stack;
		panic_uc.uc_stack.ss_size = KKP_PANIC_STACK;
		panic_uc.uc_link = NULL;
		makecontext(&panic_uc, on_panic_stack, 0);
#ifdef KKP_ASAN
		__sanitizer_start_switch_fiber(NULL, panic_stack, KKP_PANIC_STACK);
#endif
		setcontext(&panic_uc);
	}
	panic_body();		/* no reserved stack: go on where we are */
}

KK_EXPORT void kk_vpanic(const char *fmt, va_list ap)
{
	uint64_t t0 = kk_now_ns();
	pid_t me = panic_gettid();
	int expected = 0;
	size_t len;

	set_mask(panic_mask());
	if (!__atomic_compare_exchange_n(&panic_owner, &expected, me, 0,
					 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		if (expected == me)
			panic_recursive(fmt, ap);
		panic_park_self();
	}
	stats.enter_ns = t0;
	/* Faults from here on are recursive panics, whatever panic_on_oops says. */
	hook_faults(1);
	len = panic_vsnprintf(panic_msg, sizeof(panic_msg), fmt, ap);
	if (len > sizeof(panic_msg) - 1)
		len = sizeof(panic_msg) - 1;
	while (len && panic_msg[len - 1] == '\n')
		panic_msg[--len] = '\0';
	bt_n = kk_backtrace(bt_buf, (int)(sizeof(bt_buf) / sizeof(bt_buf[0])));
	switch_stack_and_run();
}

KK_EXPORT void kk_panic(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	kk_vpanic(fmt, ap);
}

/* ---- init ------------------------------------------------------------------------ */

char **panic_argv KK_LOAD_DATA;
/* A copy (getopt() permutes argv): a short one on the page written at load
 * anyway, a long one in .bss. */
static char *short_argv[8] KK_LOAD_DATA;
static char *saved_argv[1025];

/*
 * Nothing that can fail or that a sandbox could refuse: one look at the
 * signal mask (restored by a re-exec), argv, the settings (when any is set).
 */
KK_INIT(300) static void panic_init(int argc, char **argv, char **envp)
{
	char **copy = argc < (int)(sizeof(short_argv) / sizeof(short_argv[0])) ?
		short_argv : saved_argv;

	(void)envp;
	kk_raw_syscall4(SYS_rt_sigprocmask, SIG_BLOCK, 0, (long)&panic_init_mask, KSIGSET_SIZE);
	if (argc > 0 && argc < (int)(sizeof(saved_argv) / sizeof(saved_argv[0])) && argv) {
		for (int i = 0; i < argc; i++)
			copy[i] = argv[i];
		copy[argc] = NULL;
		panic_argv = copy;
	}
	if (kk_env_any() && kk_env_has_prefix("KK_PANIC_")) {
		in_ctor = 1;
		panic_env_init();
		in_ctor = 0;
	}
	panic_control_init();
}
