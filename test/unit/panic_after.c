// SPDX-License-Identifier: MIT
/*
 * After the panic, each case in a forked child: the three panic_timeout
 * branches, the restart kinds, SIGTERM/SIGINT while halted, the CPU a halted
 * child uses, the blink hook, sd_notify, the policy chain, wait-for-debugger
 * and the optional core dump.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdatomic.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>

#include <kernelkit/control.h>
#include <kernelkit/panic.h>
#include "panic_kid.h"

#define STATUS KK_PANIC_EXIT_STATUS_DEFAULT
#define END_LINE "---[ end panic - not syncing:"

static atomic_int spinning;

static void *spinner(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	atomic_fetch_add(&spinning, 1);
	for (;;)
		n++;
	return NULL;
}

static void start_spinners(int n)
{
	pthread_t t;

	for (int i = 0; i < n; i++)
		if (pthread_create(&t, NULL, spinner, NULL))
			_exit(4);
	while (atomic_load(&spinning) < n)
		sched_yield();
}

struct cfg {
	int timeout;
	int restart;
	int exit_status;
	const char *policy;
	int spinners;
	int in_thread;
};

static void *panic_thread(void *arg)
{
	(void)arg;
	panic("from a thread");
}

static void cfg_child(void *arg)
{
	const struct cfg *c = arg;

	if (kk_panic_set_timeout(c->timeout) || kk_panic_set_restart((enum kk_panic_restart)c->restart))
		_exit(3);
	if (c->exit_status && kk_panic_set_exit_status(c->exit_status))
		_exit(3);
	if (c->policy && kk_panic_set_policy(c->policy))
		_exit(3);
	start_spinners(c->spinners);
	if (c->in_thread) {
		pthread_t t;

		pthread_create(&t, NULL, panic_thread, NULL);
		for (;;)
			pause();
	}
	panic("cfg timeout=%d", c->timeout);
}

/* ---- panic_timeout ------------------------------------------------------------- */

Test(panic_after, negative_timeout_restarts_at_once)
{
	struct cfg c = { .timeout = -1, .spinners = 1 };
	struct kid k;

	kid_start(&k, cfg_child, &c);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "panic_timeout -1: restarting now"), "%s", k.out);
	cr_assert_null(strstr(k.out, END_LINE), "%s", k.out);
}

Test(panic_after, positive_timeout_waits_then_restarts)
{
	struct cfg c = { .timeout = 1, .spinners = 1, .exit_status = 42 };
	struct kid k;
	uint64_t t0, el;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, "restarting in 1 seconds", 10000), "%s", k.out);
	t0 = kid_now_ms();
	cr_assert_eq(kid_finish(&k, 10000), 0);
	el = kid_now_ms() - t0;
	cr_assert_eq(kid_exit_code(&k), 42, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "restart: exit with status 42"), "%s", k.out);
	/* a lower bound only: the deadline is 1 s after the line above */
	cr_assert_geq(el, 800, "restarted after %llu ms", (unsigned long long)el);
}

Test(panic_after, zero_timeout_halts_until_sigterm)
{
	struct cfg c = { .timeout = 0, .spinners = 2 };
	struct kid k;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	kid_sleep_ms(300);
	cr_assert(kid_alive(&k), "a halted child exited:\n%s", k.out);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "SIGTERM after panic: exiting with status 112"), "%s", k.out);
}

Test(panic_after, sigint_while_halted_exits_with_the_panic_status)
{
	struct cfg c = { .timeout = 0, .spinners = 1, .in_thread = 1, .exit_status = 99 };
	struct kid k;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	kill(k.pid, SIGINT);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), 99, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "SIGINT after panic"), "%s", k.out);
}

Test(panic_after, sigterm_while_busy_exits_with_the_panic_status)
{
	struct cfg c = { .timeout = 0, .policy = "busy" };
	struct kid k;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	kid_sleep_ms(100);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
}

Test(panic_after, restart_abort_dies_of_sigabrt)
{
	struct cfg c = { .timeout = -1, .restart = KK_PANIC_RESTART_ABORT };
	struct kid k;

	kid_start(&k, cfg_child, &c);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_term_sig(&k), SIGABRT, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "restart: abort"), "%s", k.out);
}

/* ---- CPU while halted ------------------------------------------------------------ */

Test(panic_after, halted_child_uses_under_10_percent_cpu)
{
	struct cfg c = { .timeout = 0, .spinners = 2, .in_thread = 1 };
	unsigned long long c0, c1, x0, x1;
	uint64_t t0, t1;
	struct kid k;
	double share;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	kid_sleep_ms(50);
	cr_assert_eq(kid_cpu(k.pid, &c0, &x0), 0);
	t0 = kid_now_ms();
	kid_sleep_ms(2000);
	cr_assert_eq(kid_cpu(k.pid, &c1, &x1), 0);
	t1 = kid_now_ms();
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	share = (double)(c1 - c0) / 1e6 / (double)(t1 - t0);
	cr_log_info("halted: %.3f ms CPU over %llu ms, %llu context switches\n",
		    (c1 - c0) / 1e6, (unsigned long long)(t1 - t0), x1 - x0);
	cr_assert_lt(share, 0.10, "halted child used %.1f%% CPU", share * 100);
}

/* ---- blink --------------------------------------------------------------------- */

static void blink(int state, void *arg)
{
	char c = state ? '1' : '0';

	(void)arg;
	if (write(1, &c, 1) < 0)
		return;
}

static void blink_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(1);
	if (kk_panic_set_blink(blink, NULL, 50))
		_exit(3);
	if (write(1, "<B:", 3) < 0)
		_exit(3);
	panic("blink");
}

Test(panic_after, blink_hook_runs_at_a_fixed_rate_until_the_restart)
{
	struct kid k;
	const char *p, *e;
	int n = 0;

	kid_start(&k, blink_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	p = strstr(k.out, END_LINE);
	cr_assert(p, "%s", k.out);
	p = strchr(p, '\n') + 1;
	e = strstr(p, "kernelkit: restart");
	cr_assert(e, "%s", k.out);
	for (; p < e && (*p == '0' || *p == '1'); p++, n++)
		cr_assert_eq(*p, n % 2 ? '0' : '1', "states must alternate 1,0,1..: %s", k.out);
	/* 1 s at 50 ms: 20 deadlines.  Never more (absolute deadlines, no bursts). */
	cr_assert_leq(n, 21, "%d blinks in 1 s", n);
	cr_assert_geq(n, 3, "%d blinks in 1 s:\n%s", n, k.out);
}

/* ---- sd_notify -------------------------------------------------------------------- */

static char notify_path[108];

static void notify_child(void *arg)
{
	(void)arg;
	setenv("NOTIFY_SOCKET", notify_path, 1);
	kk_panic_set_timeout(-1);
	kk_panic_set_sd_watchdog(1);
	panic("notify\nme");
}

Test(panic_after, sd_notify_tells_the_supervisor)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct pollfd p;
	char buf[2048];
	ssize_t n = -1;
	struct kid k;
	int fd;

	snprintf(notify_path, sizeof(notify_path), "/tmp/kk-panic-notify-%d.sock", (int)getpid());
	strcpy(sa.sun_path, notify_path);
	unlink(notify_path);
	fd = socket(AF_UNIX, SOCK_DGRAM, 0);
	cr_assert_geq(fd, 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0, "bind: %s", strerror(errno));
	kid_start(&k, notify_child, NULL);
	p.fd = fd;
	p.events = POLLIN;
	if (poll(&p, 1, 10000) == 1)
		n = recv(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	unlink(notify_path);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_gt(n, 0, "no datagram:\n%s", k.out);
	buf[n] = '\0';
	cr_assert(strstr(buf, "STATUS=kernelkit panic: notify me\n"), "%s", buf);
	cr_assert(strstr(buf, "WATCHDOG=trigger\n"), "%s", buf);
	cr_assert(strstr(k.out, "told the service manager"), "%s", k.out);
}

/* ---- the policy chain ------------------------------------------------------------ */

static int mine_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	printf("<%s prio %d timeout %d deadline %d>\n", p->name, p->priority, w->timeout,
	       w->deadline_ns != 0);
	return KK_PANIC_POLICY_NEXT;
}

static int bad_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	(void)w;
	panic("policy %s broke", p->name);
}

static int idle_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	printf("<%s idles>\n", p->name);
	return kk_panic_idle(w);
}

static struct kk_panic_policy mine = { "mine", 250, mine_run, NULL };
static struct kk_panic_policy bad = { "bad", 240, bad_run, NULL };
static struct kk_panic_policy lower = { "lower", 50, idle_run, NULL };

static void chain_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(1);
	if (kk_panic_policy_register(&mine) || kk_panic_policy_register(&bad) ||
	    kk_panic_policy_register(&lower) || kk_panic_set_policy("mine"))
		_exit(3);
	printf("<policy %s>\n", kk_panic_get_policy());
	panic("chain");
}

Test(panic_after, policies_hand_over_down_the_chain)
{
	struct kid k;
	const char *a, *b;

	kid_start(&k, chain_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "<policy mine>"), "%s", k.out);
	a = strstr(k.out, "<mine prio 250 timeout 1 deadline 1>");
	b = strstr(k.out, "recursive panic in an after-panic policy: policy bad broke");
	cr_assert(a && b && a < b, "%s", k.out);
	cr_assert(strstr(k.out, "policy bad failed; trying the next"), "%s", k.out);
	/* then the built-in halt (200) waits for the deadline; "lower" never runs */
	cr_assert_null(strstr(k.out, "<lower idles>"), "%s", k.out);
}

static void lower_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(1);
	if (kk_panic_policy_register(&lower) || kk_panic_set_policy("lower"))
		_exit(3);
	panic("lower");
}

Test(panic_after, a_custom_policy_can_idle_until_the_deadline)
{
	struct kid k;

	kid_start(&k, lower_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
	cr_assert(strstr(k.out, "<lower idles>"), "%s", k.out);
	cr_assert(strstr(k.out, "restart: exit"), "%s", k.out);
}

/* ---- wait for debugger ------------------------------------------------------------- */

static int wait_stop(pid_t pid, int *st, unsigned timeout_ms)
{
	uint64_t end = kid_now_ms() + timeout_ms;

	while (kid_now_ms() < end) {
		pid_t r = waitpid(pid, st, WNOHANG | __WALL);

		if (r == pid)
			return 0;
		if (r < 0)
			return -1;
		kid_sleep_ms(5);
	}
	return -1;
}

Test(panic_after, debugger_policy_wakes_when_a_tracer_attaches)
{
	struct cfg c = { .timeout = 0, .policy = "debugger", .spinners = 1 };
	unsigned long long c0, c1, x0, x1;
	struct kid k;
	int st = 0;

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, "waiting for a debugger", 10000), "%s", k.out);
	kid_sleep_ms(50);
	/* No polling: the waiting process does not wake up at all. */
	cr_assert_eq(kid_cpu(k.pid, &c0, &x0), 0);
	kid_sleep_ms(1000);
	cr_assert_eq(kid_cpu(k.pid, &c1, &x1), 0);
	cr_assert_lt(x1 - x0, 5, "%llu context switches in 1 s while waiting", x1 - x0);

	if (ptrace(PTRACE_ATTACH, k.pid, NULL, NULL)) {
		kill(k.pid, SIGKILL);
		kid_finish(&k, 5000);
		cr_skip_test("ptrace not permitted here: %s", strerror(errno));
	}
	cr_assert_eq(wait_stop(k.pid, &st, 5000), 0);
	cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGSTOP, "%#x", st);
	cr_assert_eq(ptrace(PTRACE_CONT, k.pid, NULL, NULL), 0);
	/* The owner (the main thread) wakes and stops itself for us with SIGTRAP. */
	cr_assert_eq(wait_stop(k.pid, &st, 5000), 0, "no trap after attach:\n%s", k.out);
	cr_assert(WIFSTOPPED(st) && WSTOPSIG(st) == SIGTRAP, "%#x", st);
	cr_assert_eq(ptrace(PTRACE_DETACH, k.pid, NULL, NULL), 0);
	cr_assert(kid_wait_for(&k, "debugger attached: thread", 5000), "%s", k.out);
	kid_sleep_ms(50);
	cr_assert(kid_alive(&k), "%s", k.out);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
}

Test(panic_after, debugger_policy_wakes_when_a_parked_thread_is_seized)
{
	struct cfg c = { .timeout = 0, .policy = "debugger", .in_thread = 1 };
	struct kid k;
	int st = 0;
	char want[96];

	kid_start(&k, cfg_child, &c);
	cr_assert(kid_wait_for(&k, "waiting for a debugger", 10000), "%s", k.out);
	kid_sleep_ms(50);
	/* The main thread is parked; the owner is another thread. Seize + interrupt, as strace does. */
	if (ptrace(PTRACE_SEIZE, k.pid, NULL, NULL)) {
		kill(k.pid, SIGKILL);
		kid_finish(&k, 5000);
		cr_skip_test("ptrace not permitted here: %s", strerror(errno));
	}
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, k.pid, NULL, NULL), 0);
	cr_assert_eq(wait_stop(k.pid, &st, 5000), 0);
	cr_assert(WIFSTOPPED(st), "%#x", st);
	cr_assert_eq(ptrace(PTRACE_CONT, k.pid, NULL, NULL), 0);
	snprintf(want, sizeof(want), "debugger attached: thread %d traced by pid %d", (int)k.pid,
		 (int)getpid());
	cr_assert(kid_wait_for(&k, want, 5000), "%s", k.out);
	/* detach: stop it first, then let go */
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, k.pid, NULL, NULL), 0);
	cr_assert_eq(wait_stop(k.pid, &st, 5000), 0);
	cr_assert_eq(ptrace(PTRACE_DETACH, k.pid, NULL, NULL), 0);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
}

/* ---- core dump ---------------------------------------------------------------------- */

static void core_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_set_core_dump(1);
	start_spinners(1);
	panic("core");
}

Test(panic_after, core_dump_from_a_forked_copy)
{
	struct kid k;
	const char *dump, *restart;

	kid_start(&k, core_child, NULL);	/* RLIMIT_CORE is 0: no file, just the signal */
	cr_assert_eq(kid_finish(&k, 20000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	dump = strstr(k.out, "core dump: child");
	restart = strstr(k.out, "restart: exit");
	cr_assert(dump && strstr(dump, "killed by signal 6"), "%s", k.out);
	cr_assert(restart && dump < restart, "%s", k.out);
}

/* ---- the control endpoint dies with the panic ------------------------------------------ */

static void control_child(void *arg)
{
	const char *path;

	(void)arg;
	kk_control_start();
	path = kk_control_socket_path();
	printf("<SOCK %s>\n", path ? path : "none");
	panic("control");
}

/* connect() to an endpoint named "@kernelkit/<pid>": 0 or -errno. */
static int connect_abstract(const char *name)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t n = strlen(name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ret;

	memcpy(sa.sun_path + 1, name + 1, n - 1);	/* '@' is the leading NUL */
	ret = connect(fd, (struct sockaddr *)&sa,
		      (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) ? -errno : 0;
	close(fd);
	return ret;
}

Test(panic_after, the_control_socket_refuses_clients_when_its_thread_parks)
{
	char path[256] = "";
	const char *p;
	struct kid k;

	kid_start(&k, control_child, NULL);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	p = strstr(k.out, "<SOCK ");
	cr_assert(p && sscanf(p, "<SOCK %255[^>]>", path) == 1, "%s", k.out);
	if (!strcmp(path, "none")) {
		kill(k.pid, SIGKILL);
		kid_finish(&k, 5000);
		cr_skip_test("no control endpoint here");
	}
	cr_assert_eq(path[0], '@', "%s", path);
	cr_assert_eq(connect_abstract(path), -ECONNREFUSED, "%s still accepts clients", path);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%s", k.out);
}

/* ---- a panic because the process ran out of descriptors -------------------------------- */

static void nofile_child(void *arg)
{
	struct rlimit rl = { 64, 64 };

	(void)arg;
	kk_panic_set_timeout(0);
	start_spinners(2);
	if (setrlimit(RLIMIT_NOFILE, &rl))
		_exit(3);
	while (open("/dev/null", O_RDONLY) >= 0)
		;
	panic("out of descriptors (errno %d)", errno);
}

Test(panic_after, a_panic_with_no_free_descriptors_still_stops_threads_and_halts)
{
	unsigned long long c0, c1;
	struct kid k;
	const char *p;
	int n = -1;

	kid_start(&k, nofile_child, NULL);
	cr_assert(kid_wait_for(&k, END_LINE, 10000), "%s", k.out);
	cr_assert(strstr(k.out, "out of descriptors (errno 24)"), "%s", k.out);
	p = strstr(k.out, "kernelkit: stopped ");
	cr_assert(p && sscanf(p, "kernelkit: stopped %d other thread", &n) == 1 && n >= 2, "%s", k.out);
	cr_assert(kid_wait_for(&k, "waiting in sigtimedwait", 5000), "%s", k.out);
	kid_sleep_ms(50);
	cr_assert_eq(kid_cpu(k.pid, &c0, NULL), 0);
	kid_sleep_ms(1000);
	cr_assert_eq(kid_cpu(k.pid, &c1, NULL), 0);
	cr_assert_lt(c1 - c0, 100000000ull, "%llu ns of CPU in 1 s", c1 - c0);
	kill(k.pid, SIGTERM);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
}
