/* SPDX-License-Identifier: MIT */
/*
 * panic(), WARN() and BUG() for user-space processes.
 *
 *	if (!table_consistent(t))
 *		panic("table %s corrupt at %zu", t->name, off);
 *	if (WARN_ON(len > max))
 *		len = max;
 *	BUG_ON(refs < 0);
 *
 * What a panic does, in order:
 *  1. Block every signal in the calling thread and claim the panic with a
 *     compare-and-swap.  A thread that loses the race parks itself.  A panic
 *     inside the panic (from a notifier, a policy, a blink hook, or a fault
 *     while reporting) is reported and the failing step is skipped.
 *  2. Switch to a reserved stack and print "kernelkit: panic - not syncing:
 *     MSG" and a backtrace with write(2) only: no malloc, no stdio.
 *  3. Stop every other thread: each thread of /proc/self/task gets a reserved
 *     real-time signal whose handler parks it in rt_sigtimedwait() with every
 *     signal blocked (no CPU).  Threads that did not park within the stop
 *     timeout are listed.  (Setting notifiers_first=1 runs step 4 first.)
 *  4. Run the panic notifiers, highest priority first.
 *  5. Optionally dump core from a forked copy; tell systemd (sd_notify
 *     STATUS=...) when NOTIFY_SOCKET is set.
 *  6. panic_timeout < 0: restart now.  > 0: wait that many seconds, then
 *     restart.  0: halt forever.  The wait is done by the after-panic policy
 *     ("halt", the default, sleeps in epoll_wait on absolute timerfds; "busy"
 *     spins like the kernel's old loop; "debugger" sleeps until a tracer
 *     attaches).  SIGTERM or SIGINT during the wait exits with the panic
 *     status.  "Restart" is, by the restart setting: exit with the panic
 *     status (KK_PANIC_EXIT_STATUS_DEFAULT, 112, the default), abort() for
 *     a core dump, or re-exec /proc/self/exe with the original argv.
 *
 * Settings are read from the environment at library load (KK_PANIC_TIMEOUT,
 * KK_PANIC_ON_WARN, KK_PANIC_ON_OOPS, KK_PANIC_RESTART, KK_PANIC_POLICY,
 * KK_PANIC_EXIT_STATUS, KK_PANIC_CORE, KK_PANIC_STOP_TIMEOUT_MS,
 * KK_PANIC_NOTIFIERS_FIRST, KK_PANIC_SD_WATCHDOG), and can be changed with the
 * functions below or by writing "key=value" lines to the control file "panic".
 * Functions that register or change something return 0 or a negative errno;
 * a rejected call changes nothing.
 */
#ifndef KERNELKIT_PANIC_H
#define KERNELKIT_PANIC_H

#include <stdarg.h>
#include <stdint.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

#define KK_PANIC_EXIT_STATUS_DEFAULT	112

/* ---- panic ------------------------------------------------------------- */

void kk_panic(const char *fmt, ...)
	__attribute__((__noreturn__, __cold__, __format__(__printf__, 1, 2)));
void kk_vpanic(const char *fmt, va_list ap)
	__attribute__((__noreturn__, __cold__, __format__(__printf__, 1, 0)));

#ifndef KK_NO_PANIC_ALIAS
/* The kernel's name.  Define KK_NO_PANIC_ALIAS if your program has its own. */
#define panic(...)	kk_panic(__VA_ARGS__)
#endif

/* Nonzero once some thread has entered kk_panic(). */
int kk_panic_in_progress(void);

/*
 * Set up the calling thread's alternate signal stack, so that a stack
 * overflow in this thread can still be reported.  The thread that turns
 * panic_on_oops on (kk_panic_set_on_oops(1), or KK_PANIC_ON_OOPS=1 at load)
 * gets one automatically.  0 or -errno (-ENOMEM).
 */
int kk_panic_thread_init(void);

/* ---- notifiers (kernel: atomic_notifier_chain_register(&panic_notifier_list, nb)) */

#define KK_NOTIFY_DONE		0x0000
#define KK_NOTIFY_OK		0x0001
#define KK_NOTIFY_STOP_MASK	0x8000
#define KK_NOTIFY_STOP		(KK_NOTIFY_OK | KK_NOTIFY_STOP_MASK)

struct kk_panic_notifier {
	/*
	 * Called in the panicking thread, after the other threads have been
	 * stopped (unless notifiers_first is set), with every signal blocked.
	 * @action is 0; @data is the panic message (const char *).  Returning
	 * a value with KK_NOTIFY_STOP_MASK set ends the chain.
	 */
	int (*notifier_call)(struct kk_panic_notifier *nb, unsigned long action, void *data);
	int priority;			/* higher runs first; equal: first registered first */
	struct kk_panic_notifier *next;	/* private */
};

/* 0, -EINVAL (NULL or no callback), -EEXIST (already registered), -EBUSY (panicking). */
int kk_panic_notifier_register(struct kk_panic_notifier *nb);
/* 0, -EINVAL, -ENOENT, -EBUSY. */
int kk_panic_notifier_unregister(struct kk_panic_notifier *nb);

/* ---- after-panic policies --------------------------------------------- */

struct kk_panic_wait {
	int timeout;			/* panic_timeout, seconds */
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC restart time; 0 = never */
	const char *message;		/* the panic message */
};

#define KK_PANIC_POLICY_NEXT	1	/* run the next lower-priority policy */

struct kk_panic_policy {
	const char *name;		/* [a-z0-9_-], 1..31 chars, unique */
	int priority;			/* chain order, highest first */
	/*
	 * Wait after the panic.  Return 0 when w->deadline_ns has passed (the
	 * restart follows) or KK_PANIC_POLICY_NEXT to hand over to the next
	 * policy below this one.  Runs like a notifier: signals blocked, other
	 * threads stopped.  kk_panic_idle() is the halt wait, for reuse.
	 */
	int (*run)(struct kk_panic_policy *p, const struct kk_panic_wait *w);
	struct kk_panic_policy *next;	/* private */
};

/*
 * The chain holds the built-ins "debugger" (300), "halt" (200) and "busy"
 * (100).  The setting "policy" names the first one to run (default "halt");
 * when it returns KK_PANIC_POLICY_NEXT the walk goes on down the chain, and
 * ends in a halt.  register: 0, -EINVAL, -EEXIST, -EBUSY.
 * unregister: 0, -EINVAL, -ENOENT, -EPERM (built-in), -EBUSY.
 */
int kk_panic_policy_register(struct kk_panic_policy *p);
int kk_panic_policy_unregister(struct kk_panic_policy *p);

/*
 * Sleep with no CPU until w->deadline_ns (then return 0; never, for 0),
 * calling the blink hook on time and exiting with the panic status on
 * SIGTERM/SIGINT.  Only valid inside a policy.
 */
int kk_panic_idle(const struct kk_panic_wait *w);

/* ---- settings ------------------------------------------------------------ */

enum kk_panic_restart {
	KK_PANIC_RESTART_EXIT = 0,	/* _exit(exit_status): the supervisor restarts us */
	KK_PANIC_RESTART_ABORT,		/* SIGABRT with the default action: core dump */
	KK_PANIC_RESTART_REEXEC,	/* execve("/proc/self/exe", original argv) */
};

int kk_panic_set_timeout(int seconds);			/* any value */
int kk_panic_get_timeout(void);
int kk_panic_set_on_warn(int on);			/* 0 or 1, else -EINVAL */
int kk_panic_get_on_warn(void);
int kk_panic_set_on_oops(int on);			/* 0 or 1; 1 hooks SIGSEGV/BUS/ILL/FPE */
int kk_panic_get_on_oops(void);
int kk_panic_set_restart(enum kk_panic_restart how);	/* -EINVAL if unknown */
enum kk_panic_restart kk_panic_get_restart(void);
int kk_panic_set_exit_status(int status);		/* 1..255 */
int kk_panic_get_exit_status(void);
int kk_panic_set_policy(const char *name);		/* -ENOENT if not registered */
const char *kk_panic_get_policy(void);
int kk_panic_set_core_dump(int on);			/* 0 or 1 */
int kk_panic_set_stop_timeout_ms(int ms);		/* 1..60000 */
int kk_panic_set_notifiers_first(int on);		/* 0 or 1 */
int kk_panic_set_sd_watchdog(int on);			/* 0 or 1: also send WATCHDOG=trigger */
/*
 * The blink hook (kernel: panic_blink), called from the after-panic wait
 * every @period_ms (10..60000) on absolute deadlines, with state 1, 0, 1, ...
 * NULL removes it.  Without a hook the halted wait has no timer at all.
 */
int kk_panic_set_blink(void (*blink)(int state, void *arg), void *arg, int period_ms);

/*
 * Apply "key=value" (or "key value", or "key: value" as the control file
 * prints) settings, one per line, as the control file does: all lines are
 * checked first, then applied together.  Keys:
 * timeout on_warn on_oops restart exit_status policy core_dump
 * stop_timeout_ms notifiers_first sd_watchdog blink_ms taint.  The file's
 * status lines are taken back too: warn_count and tainted are ignored,
 * policies, stop_signal and panicked must say what they say now.  0 or
 * -EINVAL; @err (may be NULL) gets a message.
 */
int kk_panic_apply_settings(const char *text, char *err, int errlen);

/*
 * The real-time signal that stops threads (KK_PANIC_SIGNAL overrides): the
 * library's park signal, chosen once (the highest real-time signal without a
 * handler); its handler is installed at the panic.
 */
int kk_panic_stop_signal(void);

/* ---- what the last panic measured (for notifiers and benchmarks) --------- */

struct kk_panic_stats {
	uint64_t enter_ns;		/* CLOCK_MONOTONIC at kk_panic() */
	uint64_t parked_ns;		/* when every other thread was parked (0: not yet) */
	int threads_signalled;
	int threads_parked;
	int threads_missing;		/* did not stop within the stop timeout */
	int recursions;
};
/* 0, or -ENOENT when no panic happened. */
int kk_panic_get_stats(struct kk_panic_stats *st);

/* ---- taint --------------------------------------------------------------- */

/* The kernel's bit numbers and letters (kernel/panic.c taint_flags). */
#define KK_TAINT_PROPRIETARY_MODULE	0	/* P */
#define KK_TAINT_FORCED_MODULE		1	/* F */
#define KK_TAINT_CPU_OUT_OF_SPEC	2	/* S */
#define KK_TAINT_FORCED_RMMOD		3	/* R */
#define KK_TAINT_MACHINE_CHECK		4	/* M */
#define KK_TAINT_BAD_PAGE		5	/* B */
#define KK_TAINT_USER			6	/* U */
#define KK_TAINT_DIE			7	/* D: oops / BUG */
#define KK_TAINT_OVERRIDDEN_ACPI_TABLE	8	/* A */
#define KK_TAINT_WARN			9	/* W: WARN() fired */
#define KK_TAINT_CRAP			10	/* C */
#define KK_TAINT_FIRMWARE_WORKAROUND	11	/* I */
#define KK_TAINT_OOT_MODULE		12	/* O */
#define KK_TAINT_UNSIGNED_MODULE	13	/* E */
#define KK_TAINT_SOFTLOCKUP		14	/* L */
#define KK_TAINT_LIVEPATCH		15	/* K */
#define KK_TAINT_AUX			16	/* X */
#define KK_TAINT_RANDSTRUCT		17	/* T */
#define KK_TAINT_TEST			18	/* N */
#define KK_TAINT_FLAGS_COUNT		19

int kk_add_taint(unsigned flag);		/* 0 or -EINVAL */
int kk_test_taint(unsigned flag);		/* 1, 0 */
unsigned long kk_get_taint(void);		/* bit mask */
/* Write the kernel-style taint string ("G        W" style, one letter per flag) to @buf. */
const char *kk_print_tainted(char *buf, int len);

/* ---- WARN and BUG -------------------------------------------------------- */

void kk_warn_slowpath(const char *file, int line, const char *func, const char *fmt, ...)
	__attribute__((__cold__, __format__(__printf__, 4, 5)));
void kk_warn_slowpath_null(const char *file, int line, const char *func) __attribute__((__cold__));
__attribute__((__noreturn__, __cold__))
void kk_bug(const char *file, int line, const char *func);
/* How many WARN()s have fired (each WARN_ON_ONCE site counts once). */
unsigned long kk_warn_count(void);

#define kk_unlikely(x)	__builtin_expect(!!(x), 0)

#ifndef KK_NO_KERNEL_NAMES

#define WARN(condition, ...) __extension__ ({						\
	int __kk_ret_warn = !!(condition);				\
	if (kk_unlikely(__kk_ret_warn))					\
		kk_warn_slowpath(__FILE__, __LINE__, __func__, __VA_ARGS__); \
	kk_unlikely(__kk_ret_warn);					\
})

#define WARN_ON(condition) __extension__ ({						\
	int __kk_ret_warn = !!(condition);				\
	if (kk_unlikely(__kk_ret_warn))					\
		kk_warn_slowpath_null(__FILE__, __LINE__, __func__);	\
	kk_unlikely(__kk_ret_warn);					\
})

#define WARN_ONCE(condition, ...) __extension__ ({					\
	static int __kk_warned;						\
	int __kk_ret_warn = !!(condition);				\
	if (kk_unlikely(__kk_ret_warn) &&				\
	    !__atomic_exchange_n(&__kk_warned, 1, __ATOMIC_RELAXED))	\
		kk_warn_slowpath(__FILE__, __LINE__, __func__, __VA_ARGS__); \
	kk_unlikely(__kk_ret_warn);					\
})

#define WARN_ON_ONCE(condition) __extension__ ({					\
	static int __kk_warned;						\
	int __kk_ret_warn = !!(condition);				\
	if (kk_unlikely(__kk_ret_warn) &&				\
	    !__atomic_exchange_n(&__kk_warned, 1, __ATOMIC_RELAXED))	\
		kk_warn_slowpath_null(__FILE__, __LINE__, __func__);	\
	kk_unlikely(__kk_ret_warn);					\
})

/*
 * BUG() is an oops: reported and tainted 'D'; with panic_on_oops it panics,
 * otherwise the process dies of SIGABRT (the kernel kills the task).
 */
#define BUG()		kk_bug(__FILE__, __LINE__, __func__)
#define BUG_ON(condition) do { if (kk_unlikely(condition)) BUG(); } while (0)

#endif /* KK_NO_KERNEL_NAMES */

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif /* KERNELKIT_PANIC_H */
