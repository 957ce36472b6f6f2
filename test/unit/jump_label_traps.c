// SPDX-License-Identifier: MIT
/*
 * SIGTRAPs that are not the library's (issue 10, "foreign traps" and "crash
 * reporters").  Once a key has been flipped the library's SIGTRAP handler
 * stands in front of the program's.  It must recognise only its own traps:
 *  - a program's two-byte `int $3` (cd 03) goes to the program's handler,
 *    once, and execution goes on after the instruction (old code: taken for
 *    a finished batch site, resumed one byte early, the program's handler
 *    never called); with no program handler the process dies of SIGTRAP;
 *  - a crash reporter that saved the previous handler (the library's) and
 *    calls it after writing its report: raise(SIGTRAP) gives one report and
 *    then the default action (old code: the library chains to the reporter,
 *    the reporter back to the library, without end).
 * The children run under alarm(): a hang fails the test as SIGALRM.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(tkey);

__attribute__((noinline)) static int tsite(void)
{
	return static_branch_unlikely(&tkey);
}

/* ---- a second thread, so that patching uses the int3 protocol --------------------- */

static int idle_pipe[2] = { -1, -1 };
static pthread_t idle_thread;

static void *idle_fn(void *arg)
{
	char c;

	(void)arg;
	while (read(idle_pipe[0], &c, 1) < 0 && errno == EINTR)
		;
	return NULL;
}

static void idle_start(void)
{
	cr_assert_eq(pipe(idle_pipe), 0);
	cr_assert_eq(pthread_create(&idle_thread, NULL, idle_fn, NULL), 0);
}

static void idle_stop(void)
{
	close(idle_pipe[1]);
	pthread_join(idle_thread, NULL);
	close(idle_pipe[0]);
}

/* Flip the key both ways and check the site followed. */
static void flip(void)
{
	cr_assert_eq(static_branch_enable(&tkey), 0, "%s", kk_jump_label_strerror());
	cr_assert_eq(tsite(), 1);
	cr_assert_eq(static_branch_disable(&tkey), 0, "%s", kk_jump_label_strerror());
	cr_assert_eq(tsite(), 0);
}

static void no_core_files(void)
{
	struct rlimit rl = { 0, 0 };

	setrlimit(RLIMIT_CORE, &rl);
}

/* ---- foreign int3 ------------------------------------------------------------------ */

#ifdef __x86_64__

static int trap_handler_is(void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction cur;

	sigaction(SIGTRAP, NULL, &cur);
	return (cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == fn;
}

static atomic_int prog_traps;
static atomic_uintptr_t prog_trap_pc;

static void prog_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	atomic_store(&prog_trap_pc, (uintptr_t)uc->uc_mcontext.gregs[REG_RIP]);
	atomic_fetch_add(&prog_traps, 1);
}

static void prog_trap_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
}

/*
 * `int $3` in its two-byte form.  Returns 0x1000 when execution went on
 * after it; resumed one byte early, the CPU runs 03 f8 (add %eax,%edi) and
 * the result is 0x1001.  *after gets the address after the instruction.
 */
static unsigned int_3_cd03(uintptr_t *after)
{
	unsigned marker = 0x1000;
	uintptr_t a;

	__asm__ volatile("lea 1f(%%rip), %0\n\t"
			 ".byte 0xcd, 0x03\n"		/* int $3 */
			 "1:\t.byte 0xf8"		/* clc */
			 : "=&r"(a), "+D"(marker) : "a"(1) : "cc", "memory");
	*after = a;
	return marker;
}

/* The one-byte int3 (0xcc) at a place that is no site. */
static uintptr_t int3_cc(void)
{
	uintptr_t a;

	__asm__ volatile("lea 1f(%%rip), %0\n\t"
			 "int3\n"
			 "1:"
			 : "=r"(a) : : "memory");
	return a;
}

Test(jump_label_traps, foreign_int_3_goes_to_the_program)
{
	uintptr_t after;

	idle_start();
	prog_trap_install();
	flip();		/* the library's handler goes in front of prog_trap */
	if (!trap_handler_is(prog_trap))
		cr_log_info("the library's SIGTRAP handler is in front");
	for (int i = 1; i <= 3; i++) {
		unsigned m = int_3_cd03(&after);

		cr_expect_eq(atomic_load(&prog_traps), i,
			     "int $3 number %d: the program's handler ran %d times", i,
			     atomic_load(&prog_traps));
		cr_expect_eq(atomic_load(&prog_trap_pc), after,
			     "the program's handler saw pc %#lx, not %#lx (after int $3)",
			     (unsigned long)atomic_load(&prog_trap_pc), (unsigned long)after);
		cr_assert_eq(m, 0x1000, "int $3 resumed one byte early (03 f8 ran: %#x)", m);
		flip();	/* the library reinstalls itself in front, if it does */
	}
	idle_stop();
}

Test(jump_label_traps, foreign_int3_goes_to_the_program)
{
	uintptr_t after = 0;

	idle_start();
	prog_trap_install();
	flip();
	for (int i = 1; i <= 3; i++) {
		after = int3_cc();
		cr_expect_eq(atomic_load(&prog_traps), i, "int3 number %d: the handler ran %d times",
			     i, atomic_load(&prog_traps));
		cr_expect_eq(atomic_load(&prog_trap_pc), after);
		flip();
	}
	idle_stop();
}

/* No handler of the program's: its int $3 kills it, as without the library. */
Test(jump_label_traps, foreign_int_3_without_handler_kills, .signal = SIGTRAP)
{
	uintptr_t after;

	no_core_files();
	idle_start();
	flip();
	int_3_cd03(&after);
	cr_log_error("int $3 did not kill the process: it was resumed");
}

Test(jump_label_traps, foreign_int3_without_handler_kills, .signal = SIGTRAP)
{
	no_core_files();
	idle_start();
	flip();
	int3_cc();
	cr_log_error("int3 did not kill the process");
}

/* The site in tsite(): its 5-byte NOP (the key is off), found by its bytes. */
static uintptr_t tsite_site(void)
{
	static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const uint8_t *f = (const uint8_t *)(uintptr_t)tsite;

	for (int i = 0; i < 64; i++)
		if (!memcmp(f + i, nop5, 5))
			return (uintptr_t)(f + i);
	return 0;
}

/*
 * An int3 at a site address that no batch of ours put there: the process
 * dies of SIGTRAP as before, and the library's handler first says in one
 * line that it could not resume a site (so that a crash of that kind, which
 * would be the library's bug if the int3 were ours, names its cause; the
 * old handler died without a word).
 */
Test(jump_label_traps, unresumable_site_trap_says_so)
{
	uint8_t cc = 0xcc;
	char out[1024] = "";
	int p[2], st, fd;
	ssize_t n, got = 0;
	pid_t pid;

#ifdef KK_NO_JUMP_LABEL
	cr_skip_test("KK_NO_JUMP_LABEL: sites are branches, no int3 is ever written");
#endif
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		uintptr_t a;

		no_core_files();
		dup2(p[1], 2);
		/* the int3 protocol, not a page swap: the site goes in the history */
		setenv("KK_TEXT_SYNC", "membarrier", 1);
		idle_start();
		if (static_branch_enable(&tkey) || static_branch_disable(&tkey))
			_exit(6);
		if (!(a = tsite_site()))
			_exit(3);
		fd = open("/proc/self/mem", O_RDWR);
		if (fd < 0 || pwrite(fd, &cc, 1, (off_t)a) != 1)
			_exit(4);
		tsite();
		_exit(5);
	}
	close(p[1]);
	while (got < (ssize_t)sizeof(out) - 1 &&
	       (n = read(p[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += n;
	close(p[0]);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTRAP,
		  "the child was not killed by SIGTRAP (status %#x; exit 3: no site found, 4: "
		  "/proc/self/mem refused the write, 6: a flip failed); it printed: %s", st, out);
	cr_expect(strstr(out, "kernelkit: SIGTRAP at jump-label site") != NULL,
		  "no line about the site trap; the child printed: %s", out);
}

#endif /* __x86_64__ */

/* The program's own breakpoint instruction, for its own SIGTRAP handler. */
static void program_trap(void)
{
#if defined(__x86_64__)
	int3_cc();
#elif defined(__aarch64__)
	__asm__ __volatile__("brk #0" ::: "memory");	/* pc stays on it: leave by longjmp */
#else
	raise(SIGTRAP);
#endif
}

/* ---- crash reporters --------------------------------------------------------------- */

/* In shared memory: what the child's reporter did. */
struct reports {
	atomic_int n;
	atomic_int prev_was_siginfo;
};

static struct reports *reports;
static struct sigaction reporter_prev;

/* Breakpad / Crashpad / sentry-native in short: report, then hand the
 * signal to whoever was there before. */
static void reporter(int sig, siginfo_t *si, void *uc)
{
	atomic_fetch_add(&reports->n, 1);
	if (reporter_prev.sa_flags & SA_SIGINFO) {
		reporter_prev.sa_sigaction(sig, si, uc);
	} else if (reporter_prev.sa_handler == SIG_DFL) {
		sigaction(sig, &reporter_prev, NULL);
		raise(sig);		/* delivered once we return */
	} else if (reporter_prev.sa_handler != SIG_IGN) {
		reporter_prev.sa_handler(sig);
	}
}

static void reporter_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = reporter;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGTRAP, &sa, &reporter_prev))
		_exit(90);
	atomic_store(&reports->prev_was_siginfo, !!(reporter_prev.sa_flags & SA_SIGINFO));
}

/* In a child: flips, the reporter before or after the first flip, more
 * flips, raise(SIGTRAP).  Returns the wait status. */
static int run_reporter_child(int reporter_first)
{
	int status;
	pid_t pid;

	reports = mmap(NULL, sizeof(*reports), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		       -1, 0);
	cr_assert_neq(reports, MAP_FAILED);
	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(10);		/* a chain that loops is a hang: fail, not wait */
		no_core_files();
		idle_start();
		if (reporter_first)
			reporter_install();
		flip();			/* the library's handler goes in */
		if (!reporter_first)
			reporter_install();
		flip();			/* in front again, if it does that */
		flip();
		raise(SIGTRAP);
		_exit(0);		/* no one took the default action */
	}
	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR);
	return status;
}

static void expect_one_report_then_death(int status)
{
	int n = atomic_load(&reports->n);

	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGALRM)
		cr_assert_fail("the child hung after %d reports: the handlers chain in a loop", n);
	cr_expect_eq(n, 1, "%d reports, not 1", n);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTRAP,
		  "the child did not die of SIGTRAP: %s %d", WIFSIGNALED(status) ? "signal" : "exit",
		  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* The reporter comes after the library and saves its handler (old code:
 * endless chain library -> reporter -> library -> ...). */
Test(jump_label_traps, crash_reporter_after_the_library)
{
	int status = run_reporter_child(0);

	cr_log_info("the reporter saved %s", atomic_load(&reports->prev_was_siginfo) ?
		    "a handler (the library's)" : "no handler");
	expect_one_report_then_death(status);
}

/* The reporter comes first; the library chains to it. */
Test(jump_label_traps, crash_reporter_before_the_library)
{
	expect_one_report_then_death(run_reporter_child(1));
}

/* A program handler that leaves with siglongjmp (a test harness that expects
 * traps): every later trap must still reach it.  A loop guard that
 * remembered the abandoned chain would take the next trap for a loop and
 * kill the process. */
static sigjmp_buf trap_env;
static atomic_int jumped;

static void prog_trap_jump(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	(void)uc;
	atomic_fetch_add(&jumped, 1);
	siglongjmp(trap_env, 1);
}

Test(jump_label_traps, program_handler_may_longjmp_out)
{
	struct sigaction sa;

	idle_start();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = prog_trap_jump;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	cr_assert_eq(sigaction(SIGTRAP, &sa, NULL), 0);
	flip();		/* the library's handler goes in front, chaining to ours */
	for (int i = 1; i <= 5; i++) {
		if (!sigsetjmp(trap_env, 1))
			program_trap();
		cr_assert_eq(atomic_load(&jumped), i, "trap %d reached the program %d times", i,
			     atomic_load(&jumped));
		flip();
	}
	idle_stop();
}
