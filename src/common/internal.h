/* SPDX-License-Identifier: MIT */
/*
 * The shared internal layer: what every facility needs from the process it
 * lives in, written once so that the rules for a library that is a guest in
 * someone else's process hold everywhere, not file by file.
 *
 *  - init order:   named constructor levels instead of bare priorities;
 *  - fork:         one pthread_atfork() for the library, handlers in level order;
 *  - settings:     KK_* variables read with secure-getenv semantics, one
 *                  boolean grammar, one-line warnings for values we reject;
 *  - descriptors:  a descriptor is used or closed only while it provably is
 *                  still the file we opened (device + inode);
 *  - time, futex:  CLOCK_MONOTONIC nanoseconds and absolute futex deadlines;
 *  - threads:      every library thread is created here, with every signal
 *                  blocked except synchronous faults and the park signal, and
 *                  belongs to a service that kk_threads_stop() can stop;
 *  - the worker:   one lazily started thread that runs the library's
 *                  deferred work (the kernel's system workqueue).
 *  - ELF objects:  which loaded object holds an address, and its module name.
 *
 * Nothing here allocates in a way a signal handler could deadlock on, except
 * where a function says so.
 */
#ifndef KK_COMMON_H
#define KK_COMMON_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

/* ---- init order ------------------------------------------------------------------
 * Constructors of libkernelkit run in this order (lower first).  Destructors
 * run in the reverse order and must need no syscall a sandbox could refuse.
 */
enum kk_init_level {
	KK_INIT_COMMON = 110,		/* this layer: fork dispatch */
	KK_INIT_TEXT = 120,		/* text patching: no syscalls, set-up is lazy */
	KK_INIT_JUMP_LABEL = 150,
	KK_INIT_DYNDBG = 160,
	KK_INIT_CONTROL = 200,
	KK_INIT_ODEBUG = 210,
	KK_INIT_ODEBUG_PRELOAD = 220,
	KK_INIT_PANIC = 300,
	KK_INIT_SHAZPTR = 310,
};
/* The value must be a literal for the attribute; the enum documents it. */
#define KK_INIT(level)	__attribute__((__constructor__(level)))
#define KK_EXIT(level)	__attribute__((__destructor__(level)))

/*
 * Start-up locality.  Every process that links the library pays for what the
 * constructors touch, and the price is per page: a first touch is a page
 * fault, about 2 us on a virtual machine, the cost of a hello world's whole
 * main().  So:
 *  - KK_LOAD_TEXT: code that runs at load (or exit) goes with the
 *    constructors into .text.startup, the start of .text, next to the PLT
 *    that the first call through it maps anyway;
 *  - KK_LOAD_DATA: data written at load goes into .data, on the page the
 *    dynamic linker already copied when it relocated .got.plt (.data follows
 *    it).  Keep such data small: a large buffer belongs in .bss, touched only
 *    when used.
 * Constructors also avoid libc calls they can do without: each first call
 * costs a symbol lookup and often a fault on a page of libc's text.
 */
#define KK_LOAD_TEXT	__attribute__((__section__(".text.startup")))
#define KK_LOAD_DATA	__attribute__((__section__(".data")))

/* ---- what the library exports (docs/abi.md) --------------------------------------
 * The objects are compiled with -fvisibility=hidden, and src/libkernelkit.map
 * (the version script, the authority on what libkernelkit.so exports) makes
 * every name it does not list local.  These macros make the intent visible
 * where a symbol is defined:
 *  - KK_EXPORT: public API, declared in include/kernelkit/ and listed in the
 *    map under KERNELKIT_1.  (The public headers' "#pragma GCC visibility
 *    push(default)" already gives their declarations default visibility; the
 *    mark says so at the definition, and is what exports a definition whose
 *    declaration the unit does not see.)
 *  - KK_INTERPOSE(name): defines kk_interpose_<name> and exports it as the
 *    libc function <name>, unversioned.  A definition in KERNELKIT_1 would
 *    not interpose: a caller's execve@GLIBC_2.2.5 binds only to a definition
 *    of that version or to an unversioned one.  (.symver binds the base
 *    version; it overrides the map.  A static link sees plain <name>.)
 *  - KK_WHITEBOX: internal, but reachable from the white-box unit tests and
 *    kk-bench, which link $(B)/internal/libkernelkit.so (the same objects
 *    without the version script).  libkernelkit.so keeps it local.
 */
#define KK_EXPORT	__attribute__((__visibility__("default")))
#define KK_WHITEBOX	__attribute__((__visibility__("default")))
#define KK_INTERPOSE(name)							\
	__asm__(".symver kk_interpose_" #name ", " #name "@@");			\
	KK_EXPORT

/*
 * A system call without libc's syscall(), for the few a constructor makes:
 * no symbol lookup, no page of libc.  Returns the result or -errno.
 */
#if defined(__x86_64__)
static inline long kk_raw_syscall4(long nr, long a, long b, long c, long d)
{
	register long r10 __asm__("r10") = d;
	long ret;

	__asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return ret;
}
#else
#include <errno.h>
#include <unistd.h>
static inline long kk_raw_syscall4(long nr, long a, long b, long c, long d)
{
	long ret = syscall(nr, a, b, c, d);

	return ret < 0 ? -errno : ret;
}
#endif

/* ---- fork ------------------------------------------------------------------------
 * One pthread_atfork() for the whole library.  prepare handlers run from the
 * highest level down, parent and child handlers from the lowest up, so locks
 * are taken in level order and released in reverse.  Call from constructors.
 */
struct kk_fork_ops {
	int level;			/* an enum kk_init_level */
	void (*prepare)(void);
	void (*parent)(void);
	void (*child)(void);
};
void kk_fork_register(const struct kk_fork_ops *ops);

/* ---- settings --------------------------------------------------------------------- */

/*
 * getenv() with secure_getenv() semantics: NULL in a set-user-ID or
 * set-group-ID program (AT_SECURE).  Takes no lock and does not allocate, so
 * it may run in a constructor, a signal handler or a panic.
 */
KK_WHITEBOX const char *kk_getenv(const char *name);
/*
 * Is any KK_* variable set?  One pass over environ that reads no string
 * constant (so no page of .rodata) and calls no libc: constructors ask this
 * first and skip their settings when none is set, the common case.  (True
 * in a set-user-ID program too: kk_getenv() refuses there.)
 */
bool kk_env_any(void);
/*
 * Is there a variable whose name starts with @prefix?  One pass over environ,
 * same rules as kk_getenv() (none in a set-user-ID program).
 */
bool kk_env_has_prefix(const char *prefix);
/* 1/0, y/n, yes/no, on/off, true/false (any case).  0, or -EINVAL. */
KK_WHITEBOX int kk_parse_bool(const char *s, bool *out);
/* The boolean value of @name, or @def when unset or invalid (warns once per call). */
KK_WHITEBOX bool kk_env_bool(const char *name, bool def);
/* An unsigned decimal/hex value of @name in [lo, hi], else @def with a warning. */
KK_WHITEBOX unsigned long kk_env_ulong(const char *name, unsigned long def, unsigned long lo,
			   unsigned long hi);
/*
 * Which of @choices (NULL-terminated) @name names: its index, or 0 (the
 * default, choices[0]) when unset, empty or unknown; an unknown value is
 * warned about once per @warned flag ("ignoring NAME=v: use a, b or c").
 */
int kk_env_choice(const char *name, const char *const *choices, int *warned);
/* "kernelkit: <message>\n" on stderr in one write(); async-signal-safe. */
void kk_warn(const char *fmt, ...) __attribute__((__format__(__printf__, 1, 2)));
/* kk_warn() only the first time for this @flag. */
#define kk_warn_once(flag, ...) do {						\
	static int flag;							\
	if (!__atomic_exchange_n(&flag, 1, __ATOMIC_RELAXED))			\
		kk_warn(__VA_ARGS__);						\
} while (0)

/* ---- backtraces -------------------------------------------------------------------
 * backtrace(), or 0 frames where unwinding would abort: in a static program,
 * before its unwind tables are registered (a constructor with a priority).
 * glibc loads libgcc_s on a dynamic program's first call: call this outside
 * constructors (first real use), never from one to "preload".
 */
int kk_backtrace(void **buf, int size);

/* ---- descriptors -----------------------------------------------------------------
 * The program owns every descriptor number.  It may close ours (closefrom,
 * close_range), or dup2() something over them, at any time.  So a descriptor
 * the library keeps is recorded with the identity of its file, and used or
 * closed only while fstat() still shows that identity.  A number that fails
 * the check is forgotten, never closed.
 */
struct kk_fd {
	int fd;
	dev_t dev;
	ino_t ino;
	pid_t pid;		/* the process that opened it (fork children inherit) */
};
#define KK_FD_INIT	{ -1, 0, 0, 0 }
/* Take ownership of a descriptor just opened (O_CLOEXEC): move it above 2 and
 * record its identity.  Returns the descriptor, or -errno (and closes @fd). */
int kk_fd_adopt(struct kk_fd *f, int fd);
/* True while f->fd is still the file we opened. */
bool kk_fd_ours(const struct kk_fd *f);
/* Close it if it is still ours; forget the number either way. */
void kk_fd_release(struct kk_fd *f);
/* In a fork child: release the inherited copy (only if still ours). */
#define kk_fd_release_inherited(f) kk_fd_release(f)

/* ---- time and futex ---------------------------------------------------------------- */

/* CLOCK_MONOTONIC nanoseconds.  Async-signal-safe (clock_gettime() is): a
 * panic reads it too. */
static inline uint64_t kk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC_COARSE milliseconds: as fine as the clock tick, and cheaper
 * to read than kk_now_ns(), for hot paths that count in ticks (rate limits,
 * the debug-objects pool's load average). */
static inline uint64_t kk_now_coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000ull + (uint64_t)ts.tv_nsec / 1000000ull;
}

static inline struct timespec kk_ns_to_ts(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull) };

	return ts;
}

/* Wait while *@addr == @val, until @deadline_ns (CLOCK_MONOTONIC; 0 = none).
 * 0 when woken (or the value differed), -ETIMEDOUT, -EINTR. */
KK_WHITEBOX int kk_futex_wait(int *addr, int val, uint64_t deadline_ns);
KK_WHITEBOX void kk_futex_wake(int *addr, int n);

/* ---- text ---------------------------------------------------------------------------- */

/* isspace() of the C locale (space, \t, \n, \v, \f, \r), whatever locale
 * the program set: grammars read the same everywhere, and a signal handler
 * may call it (no locale data). */
static inline bool kk_is_space(int c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* ---- threads ------------------------------------------------------------------------ */

/*
 * The park signal: the real-time signal the library uses to stop its own
 * threads (panic, kk_threads_stop()).  Chosen once: $KK_PANIC_SIGNAL, else the
 * highest real-time signal in SIGRTMIN+4..SIGRTMAX-4 that has no handler.
 */
KK_WHITEBOX int kk_park_signal(void);

/* A library thread: its pthread and its kernel id. */
struct kk_thread {
	pthread_t pt;
	pid_t tid;		/* atomic: written by the thread before its function runs */
};

/*
 * Start a library thread.  It runs @fn with every signal blocked except the
 * synchronous faults (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP) and the park
 * signal, named @name (at most 15 bytes).  Joinable.  0 or -errno.  @t must
 * outlive the thread (it writes its id there).
 */
int kk_thread_create(struct kk_thread *t, const char *name, void *(*fn)(void *), void *arg);
/*
 * Join library thread @t and return once it has left the thread group too:
 * pthread_join() returns when the kernel clears the thread's tid, a little
 * before the thread leaves /proc/self/task.  A program that stops our
 * threads to be single-threaded (unshare(), a seccomp filter without TSYNC)
 * needs it gone.  The id is read after the join, when the thread has surely
 * written it (a thread stopped before its function ran has one too).  Waits
 * at most a second for the exit (a tracer may hold a zombie thread).
 */
void kk_thread_join(struct kk_thread *t);
/* Is @tid a running library thread?  Lock-free (a panic asks). */
bool kk_is_library_thread(pid_t tid);

/*
 * A service owns library threads.  stop() must make them exit and join them
 * before it returns; start() brings them back if they are still needed (or
 * leaves them to start lazily).  While the library's threads are stopped,
 * services must not start threads: check kk_threads_stopped().
 */
struct kk_service {
	const char *name;
	void (*stop)(void);
	void (*start)(void);
	struct kk_service *next;
};
void kk_service_register(struct kk_service *s);
bool kk_threads_stopped(void);

/* ---- the library's own signal handlers (sighand.c) ----------------------------------------
 * Noted before they are installed, so that a look at the program's handlers
 * can leave them out.  The table has room for every handler the library has.
 */
void kk_handler_note(void (*fn)(int, siginfo_t *, void *));
bool kk_handler_is_library(const struct sigaction *sa);

/* ---- the threads of the process (tasks.c) ------------------------------------------------
 * From /proc/self/task, with open+getdents64: no malloc, no opendir, usable
 * in a panic.  Out of descriptors, a helper process that shares our memory
 * does the listing.
 */
/* The tids of this process into @tids (at most @max): the number of threads
 * seen (more than @max when they did not fit), or -errno.  Every tid here is
 * the process's own number (gettid()'s, tgkill()'s), also where /proc counts
 * in an outer pid namespace (tasks.c says how). */
KK_WHITEBOX int kk_list_tasks(pid_t *tids, int max);
/* "/proc/self/task/<its /proc number>/<leaf>" for thread @tid (0:
 * "/proc/thread-self/<leaf>").  0, or -ESRCH when it is gone. */
int kk_task_path(char *buf, size_t n, pid_t tid, const char *leaf);
/* Read up to @n-1 bytes of a small file; NUL-terminated.  Bytes or -errno.
 * Async-signal-safe (open, read, close only): a panic reads /proc with it. */
ssize_t kk_read_proc(const char *path, char *buf, size_t n);
/* SigBlk of thread @tid (0: the caller): bit (sig - 1) set = blocked.  0 or -errno. */
int kk_task_sigblk(pid_t tid, uint64_t *mask);
/* The same, and SigCgt (the signals the process has handlers for) with it. */
int kk_task_sigmasks(pid_t tid, uint64_t *blocked, uint64_t *caught);
/* SigPnd of thread @tid: the signals pending for it alone.  0 or -errno. */
int kk_task_sigpnd(pid_t tid, uint64_t *mask);
/* The thread's name without the newline ("" when gone).  0 or -errno. */
int kk_task_comm(pid_t tid, char *buf, size_t n);
/* When it started (clock ticks since boot, /proc's field 22), 0 when gone:
 * with its tid, what tells a thread from a later one that reuses the tid. */
unsigned long long kk_task_starttime(pid_t tid);
/* Its state letter from /proc (R, S, D, T, t, Z, ...), '\0' when gone. */
char kk_task_state(pid_t tid);
/* Still a thread that can run: not gone, not a zombie (an exited main thread
 * stays listed as one while the others run). */
bool kk_task_alive(pid_t tid);

/* ---- numbers as text -------------------------------------------------------------- */

/*
 * @v in base 8 (@c 'o'), 16 ('x', 'X'; 'p' as 'x') or 10 (anything else),
 * written backwards to end at @end (24 bytes hold any).  Returns its first
 * digit.  printf's digits without printf: the printed line and the trace's
 * readers format most numbers this way (async-signal-safe).
 */
static inline char *kk_utoa(char *end, unsigned long long v, char c)
{
	const char *dig = c == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";

	if (c == 'o')
		do *--end = (char)('0' + (v & 7)); while (v >>= 3);
	else if (c == 'x' || c == 'X' || c == 'p')
		do *--end = dig[v & 15]; while (v >>= 4);
	else if (v < 10)
		*--end = (char)('0' + v);
	else {
		/* two digits a division: a 64-bit division is most of a digit's cost */
		static const char pairs[] = "0001020304050607080910111213141516171819202122232425262728293031323334353637383940414243444546474849"
					    "5051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

		for (; v >= 100; v /= 100)
			memcpy(end -= 2, pairs + 2 * (v % 100), 2);
		if (v >= 10)
			memcpy(end -= 2, pairs + 2 * v, 2);
		else
			*--end = (char)('0' + v);
	}
	return end;
}

/* ---- the worker ---------------------------------------------------------------------- */

/*
 * Deferred work, run by one library thread ("kk-worker", the kernel's system
 * workqueue) that starts the first time work is queued.  Items run one at a
 * time, the earliest deadline first (FIFO among equal deadlines), so an item
 * never runs concurrently with itself or with any other item.
 *
 * A work item is owned by its caller and must stay valid until it has run
 * (the worker does not touch it after its function returned: the function
 * may free it) or kk_cancel_work_sync() returned.
 *
 * While the library's threads are stopped (kk_threads_stop()) queued items
 * wait; kk_flush_work() then runs a pending item in the caller instead.  In a
 * fork child the worker is gone: items pending at the fork stay queued and run
 * once the worker restarts, on the next kk_queue_work() or kk_threads_start().
 */
struct kk_work {
	void (*fn)(struct kk_work *w);
	uint64_t deadline_ns;		/* CLOCK_MONOTONIC; 0: run as soon as possible */
	struct kk_work *next;
	int state;			/* internal: pending, canceling, start count */
};
#define KK_WORK_INIT(f)	{ (f), 0, 0, 0 }
/*
 * Queue @w to run after @delay_ns.  1 when queued; 0 when it already was
 * pending (the kernel's queue_delayed_work(): the old deadline stays) or is
 * being cancelled; -errno when the worker cannot be started (then @w is not
 * queued).  Lock-free and async-signal-safe once the worker runs (or while
 * threads are stopped); the call that starts the worker is not.
 */
KK_WHITEBOX int kk_queue_work(struct kk_work *w, uint64_t delay_ns);
/*
 * The kernel's cancel_delayed_work_sync(): take @w off the queue and wait for
 * a running instance; queuing @w meanwhile is refused.  True if it was
 * pending.  Not from @w itself (it does not wait for itself).
 */
KK_WHITEBOX bool kk_cancel_work_sync(struct kk_work *w);
/*
 * The kernel's flush_delayed_work(): a pending @w runs now (on the worker,
 * ahead of its deadline) and the call returns when that instance finished; a
 * running instance is waited for.  With threads stopped, or from the worker
 * itself, a pending @w runs in the caller.
 */
KK_WHITEBOX void kk_flush_work(struct kk_work *w);
/*
 * Cancel every pending item for which @match returns true and wait until none
 * that matches runs (for an object being unloaded: jump_label).  @match gets
 * the item's function separately and must not dereference a running item
 * (its function may have freed it).  Makes no system call beyond futex waits.
 */
KK_WHITEBOX void kk_cancel_work_matching(bool (*match)(const struct kk_work *w,
					   void (*fn)(struct kk_work *), void *arg), void *arg);
/* False until the first kk_queue_work() (in this process or before its fork):
 * then nothing can be pending or running, and there is nothing to cancel. */
bool kk_work_ever_queued(void);
/* The kernel's work_pending(): queued and not yet started. */
KK_WHITEBOX bool kk_work_pending(const struct kk_work *w);
/* True on the worker thread (inside a work function). */
KK_WHITEBOX bool kk_in_worker(void);

/* ---- ELF objects (object_name.c) --------------------------------------------------- */

/*
 * Name of the object that contains @addr, and its base.  The name is the
 * object's file name without the directory, a "lib" prefix or any
 * extension ("/usr/lib/libfoo.so.1" -> "foo").
 * The main program's name comes from AT_EXECFN (readlink() of /proc/self/exe
 * only when the auxiliary vector has none), once per process.
 */
void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base);

/* The base and mapped range [lo, hi) of the object that contains @addr (all 0
 * if none).  No syscall: safe in a destructor under a sandbox. */
void kk_addr_range(const void *addr, uintptr_t *base, uintptr_t *lo, uintptr_t *hi);

/*
 * Is the process exiting?  A destructor asks, with any address inside its
 * object: true from the first destructor of the main program on (then no
 * object is unmapped until _exit), false in a dlclose() (common/exiting.c).
 * The flag is read inline: every unit of an object has its destructors.
 */
extern atomic_bool kk_exiting_flag;
bool kk_exiting_slow(const void *self);
static inline bool kk_exiting(const void *self)
{
	return atomic_load_explicit(&kk_exiting_flag, memory_order_relaxed) || kk_exiting_slow(self);
}

/* The PROT_* bits of the ELF load segment that holds @addr, as the loader
 * mapped it, or -ENOENT.  For text, where /proc/self/maps cannot be read. */
int kk_addr_segment_prot(const void *addr);

#endif
