// SPDX-License-Identifier: MIT
/*
 * Making the other threads see code that was just written (text_sync.h).
 *
 * Three ways, chosen per batch by kk_sync_plan():
 *
 *  - membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): the kernel
 *    IPIs every CPU that runs one of our threads and serializes it.
 *  - the signal fallback (liburcu's signal flavour, for gVisor, old kernels
 *    and seccomp profiles that deny membarrier): the park signal goes to
 *    every other thread with tgkill(); its handler executes a serializing
 *    instruction (kk_sync_core()) and acknowledges; the caller waits on a
 *    futex for every acknowledgement, then lists /proc/self/task again for
 *    threads created meanwhile, until a listing adds nobody.
 *  - stop_machine (the kernel's): the same signal, but each handler parks on
 *    a futex until the caller has run the whole batch, then serializes and
 *    returns.  No int3 is ever in the path of a running thread: the choice
 *    under a debugger (gdb stops on SIGTRAP), under valgrind, and when a
 *    thread blocks SIGTRAP (a trap there kills the process).
 *
 * The handler is installed the first time a signal is needed, never at load:
 * until then the signal's disposition is the program's.  It is installed only
 * over SIG_DFL; a handler the program put there is never replaced (the plan
 * refuses instead, naming the signal).  It takes part only in a request of
 * ours (si_code SI_TKILL from our own pid while a request is open): anything
 * else just serializes and returns.  A panic installs its own handler on the
 * same signal when it stops the threads for good.
 *
 * Each request has a sequence number.  A handler acknowledges by raising its
 * slot's word to that number (never lowering it), so an acknowledgement of an
 * old request (a thread that blocked the signal, then unblocked it after the
 * caller gave up) can never be counted for a newer one.
 *
 * A thread that exits before it acknowledges does not count: the caller
 * notices on a periodic check (tgkill(tid, 0) says ESRCH, or /proc shows a
 * zombie).  A thread that keeps the signal blocked for KK_SYNC_BLOCKED_NS
 * makes the request fail with its tid and name; one that blocks SIGTRAP as
 * well gets KK_SYNC_ALLBLOCKED_NS, as it is most likely passing through our
 * trap handler or glibc's thread start or exit.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>
#include <linux/membarrier.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define KK_HAVE_VALGRIND_H 1
#endif
#endif

#include <kernelkit/kernelkit.h>

#include "arch/sync_core.h"
#include "common/internal.h"
#include "text_poke.h"
#include "text_sync.h"

#define KK_SYNC_MAX_THREADS	4096
#define KK_SYNC_TICK_NS		(10 * 1000000ull)	/* look for exited threads */
#define KK_SYNC_BLOCKED_NS	(1000 * 1000000ull)	/* then give up on a blocker */
#define KK_SYNC_ALLBLOCKED_NS	(30000 * 1000000ull)	/* one that blocks SIGTRAP too */
#define SLOT_GONE		0x7fffffff		/* exited, never acknowledges */

enum req_type { REQ_NONE = 0, REQ_ROUND = 1, REQ_STOP = 2 };
#define REQ_TYPE(w)	((w) & 3)
#define REQ_SEQ_STEP	4

enum sync_method { M_UNUSED, M_SINGLE, M_MEMBARRIER, M_SIGNAL, M_STOP, M_SWAP };
static const char *const method_names[] = {
	"unused", "single-thread", "membarrier", "signal", "stop-machine", "swap",
};

/* ---- state shared with the handler --------------------------------------------------- */

static int req_word;			/* seq | REQ_*; REQ_NONE between requests */
static int nsig;			/* entries of sig_tids[] in use */
static pid_t sig_tids[KK_SYNC_MAX_THREADS];
/* When the thread signalled on each slot started: its tid may be reused by a
 * later thread (pid_max 32768, a program that churns threads), which never
 * got the signal.  Caller-only state. */
static unsigned long long sig_start[KK_SYNC_MAX_THREADS];
/* Signalled again (signal_again()): at most once a request. */
static bool sig_again[KK_SYNC_MAX_THREADS];
static int sig_ack[KK_SYNC_MAX_THREADS];	/* highest request acknowledged, or SLOT_GONE */
/*
 * A thread parked by a stop shows our handler's mask (every signal blocked)
 * until it leaves the handler: seen asleep there, it looked deaf, and the
 * next stop would leave it running while it wrote (a jump torn across a
 * page kills it: tally run 20 of issue 27 saw a reader run during a stop,
 * its cause not established).  So from before its acknowledgement until it
 * leaves, its slot says so: tid << 32 | LEAVING_IN, plus what the mask it
 * returns to (its signal frame's) blocks.
 */
enum { LEAVING_IN = 1, LEAVING_TRAP = 2, LEAVING_PARK = 4 };
static uint64_t sig_leaving[KK_SYNC_MAX_THREADS];
static int ack_count;			/* futex: bumped by every acknowledgement */
static int release_word;		/* futex: bumped to release stopped threads */

/* ---- the caller's state (under sync_lock) ---------------------------------------------- */

static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static int armed, membarrier_ok, handler_in;
static int swap_refused;		/* mremap() was refused: no page swaps */
static int method = M_UNUSED;
static int seq;
static pid_t listed[KK_SYNC_MAX_THREADS];

void (*kk_sync_plan_hook)(int stage);
void (*kk_sync_round_hook)(pid_t tid);
void (*kk_sync_leave_hook)(void);

/*
 * Threads that block both SIGTRAP and the park signal, as the last plan saw
 * them: glibc's helper for SIGEV_THREAD timers and mq_notify(), a program's
 * sigwaitinfo() thread.  Nothing can stop or sync them by signal, and a trap
 * would kill them, so the library assumes they never run a site: rounds
 * and stops leave them alone (the remaining hazard, see kk_sync_plan()).
 *
 * Only a thread that sleeps so (state S) is deaf.  Every handler of ours
 * blocks every signal too, so a thread parked by the last stop_machine
 * shows both blocked until its sigreturn (for long under strace, which
 * stops it at that syscall); taken for deaf, it was left running while the
 * next stop wrote its sites with /proc/self/mem (issue 22).
 */
#define KK_SYNC_MAX_DEAF	64
static pid_t deaf[KK_SYNC_MAX_DEAF];
static int ndeaf;
/* The planned stop looks at the deaf again once the others are parked
 * (undeafen(): a stop of a protocol with traps). */
static bool stop_settles;
static int undeafen(int sig);

static bool is_deaf(pid_t tid)
{
	for (int i = 0; i < ndeaf; i++)
		if (deaf[i] == tid)
			return true;
	return false;
}

static unsigned long long st_membarrier, st_signal_rounds, st_signals, st_stops;

#define STAT_INC(x)	__atomic_fetch_add(&(x), 1, __ATOMIC_RELAXED)

static pid_t my_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/* ---- membarrier ------------------------------------------------------------------------ */

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

void kk_sync_arm(void)
{
	int cmds, ok;

	if (__atomic_load_n(&armed, __ATOMIC_ACQUIRE))
		return;
	cmds = membarrier(MEMBARRIER_CMD_QUERY);
	ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
	__atomic_store_n(&membarrier_ok, ok, __ATOMIC_RELAXED);
	__atomic_store_n(&armed, 1, __ATOMIC_RELEASE);
}

void kk_sync_atfork_child(void)
{
	/* One thread, a new mm: registration is per mm, and a fork from a
	 * signal handler may have left the lock held and a request open. */
	pthread_mutex_init(&sync_lock, NULL);
	__atomic_store_n(&armed, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&membarrier_ok, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&req_word, REQ_NONE, __ATOMIC_RELAXED);
	__atomic_store_n(&nsig, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&method, M_UNUSED, __ATOMIC_RELAXED);
	kk_sync_window_atfork_child();
}

/* ---- the handler ----------------------------------------------------------------------- */

static int find_slot(pid_t tid)
{
	int n = __atomic_load_n(&nsig, __ATOMIC_ACQUIRE);

	for (int i = 0; i < n; i++)
		if (__atomic_load_n(&sig_tids[i], __ATOMIC_RELAXED) == tid)
			return i;
	return -1;
}

/* Raise the slot to @w: true if this call acknowledged request @w. */
static bool ack_slot(int slot, int w)
{
	int old = __atomic_load_n(&sig_ack[slot], __ATOMIC_RELAXED);

	while (old < w)
		if (__atomic_compare_exchange_n(&sig_ack[slot], &old, w, false,
						__ATOMIC_RELEASE, __ATOMIC_RELAXED))
			return true;
	return false;
}

/* The slot's word while its thread is parked by a stop (sig_leaving[]). */
static uint64_t leaving_word(pid_t tid, int sig, const ucontext_t *uc)
{
	uint64_t v = (uint64_t)(uint32_t)tid << 32 | LEAVING_IN;

	if (uc && sigismember(&uc->uc_sigmask, SIGTRAP) == 1)
		v |= LEAVING_TRAP;
	if (uc && sigismember(&uc->uc_sigmask, sig) == 1)
		v |= LEAVING_PARK;
	return v;
}

static void sync_handler(int sig, siginfo_t *si, void *uc)
{
	int e = errno, w = __atomic_load_n(&req_word, __ATOMIC_ACQUIRE), slot = -1;
	uint64_t leaving = 0;

	if (REQ_TYPE(w) != REQ_NONE && si && si->si_code == SI_TKILL && si->si_pid == getpid()) {
		/* Read before the acknowledgement: the caller releases after it. */
		int gen = __atomic_load_n(&release_word, __ATOMIC_ACQUIRE);
		pid_t me = my_tid();

		slot = find_slot(me);
		/* Published by the acknowledgement's release. */
		if (slot >= 0 && REQ_TYPE(w) == REQ_STOP) {
			leaving = leaving_word(me, sig, uc);
			__atomic_store_n(&sig_leaving[slot], leaving, __ATOMIC_RELAXED);
		}
		/* For a round the serializing instruction comes before the
		 * acknowledgement: that is what the caller waits for. */
		kk_sync_core();
		if (slot >= 0 && ack_slot(slot, w)) {
			__atomic_fetch_add(&ack_count, 1, __ATOMIC_RELEASE);
			kk_futex_wake(&ack_count, 1);
			if (REQ_TYPE(w) == REQ_STOP)
				while (__atomic_load_n(&release_word, __ATOMIC_ACQUIRE) == gen)
					kk_futex_wait(&release_word, gen, 0);
		}
	}
	/* After a stop: the code may have changed under us. */
	kk_sync_core();
	if (leaving) {
		if (kk_sync_leave_hook)
			kk_sync_leave_hook();
		/* Unless a later request gave the slot to another thread. */
		__atomic_compare_exchange_n(&sig_leaving[slot], &leaving, 0, false,
					    __ATOMIC_RELEASE, __ATOMIC_RELAXED);
	}
	errno = e;
}

static bool handler_is_ours(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == sync_handler;
}

static bool handler_is_dfl(const struct sigaction *sa)
{
	return !(sa->sa_flags & SA_SIGINFO) && sa->sa_handler == SIG_DFL;
}

/* Can we use the park signal?  0, or -ENOTSUP with the reason. */
static int check_disposition(int sig, char *err, size_t errlen)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old)) {
		snprintf(err, errlen, "cannot read the disposition of signal %d (the park signal): %s",
			 sig, strerror(errno));
		return -ENOTSUP;
	}
	if (handler_is_ours(&old) || handler_is_dfl(&old))
		return 0;
	snprintf(err, errlen, "signal %d (the park signal) has a %s of the program's: "
		 "kernelkit will not replace it (set KK_PANIC_SIGNAL to a free real-time signal)",
		 sig, old.sa_handler == SIG_IGN && !(old.sa_flags & SA_SIGINFO) ? "SIG_IGN" : "handler");
	return -ENOTSUP;
}

/* Install the handler over SIG_DFL, once. */
static int install_handler(int sig, char *err, size_t errlen)
{
	struct sigaction sa;
	int ret;

	if (handler_in)
		return check_disposition(sig, err, errlen);
	ret = check_disposition(sig, err, errlen);
	if (ret)
		return ret;
	memset(&sa, 0, sizeof(sa));
	kk_handler_note(sync_handler);
	sa.sa_sigaction = sync_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	if (sigaction(sig, &sa, NULL)) {
		snprintf(err, errlen, "cannot install the handler of signal %d (the park signal): %s",
			 sig, strerror(errno));
		return -ENOTSUP;
	}
	handler_in = 1;
	return 0;
}

/* ---- signalling every other thread ------------------------------------------------------ */

static void name_thread(char *buf, size_t n, pid_t tid)
{
	char comm[32];

	kk_task_comm(tid, comm, sizeof(comm));
	snprintf(buf, n, "thread %d (%s)", (int)tid, comm[0] ? comm : "?");
}

/* The thread on @slot's tid now is not the one signalled there: that one
 * exited, and a later thread got its tid. */
static bool tid_reused(int slot)
{
	unsigned long long now = kk_task_starttime(sig_tids[slot]);

	return now && sig_start[slot] && now != sig_start[slot];
}

/*
 * A start time counts clock ticks (10 ms): a newcomer given a gone thread's
 * tid within the tick it started in has its start time too, and was never
 * signalled (ns_last_pid, clone3()'s set_tid).  So a thread that neither
 * acknowledged, nor has the signal pending, nor shows as reused is signalled
 * once more.  If it is the one signalled, taking the signal now, the second
 * run of the handler finds its slot acknowledged and does nothing; the
 * pending test keeps a real-time park signal from queueing up behind a
 * thread that blocks it.
 */
static void signal_again(int slot, pid_t pid, int sig)
{
	uint64_t pnd;

	if (sig_again[slot] || kk_task_sigpnd(sig_tids[slot], &pnd) || (pnd >> (sig - 1) & 1))
		return;
	sig_again[slot] = true;
	if (syscall(SYS_tgkill, pid, sig_tids[slot], sig) == 0)
		STAT_INC(st_signals);
}

/*
 * Signal every listed thread not signalled yet.  Returns how many were
 * added, or -errno.  The leader, once it called pthread_exit(), stays listed
 * as a zombie that will never run a handler: skipped.
 */
static int signal_new(pid_t me, pid_t pid, int sig, int w, char *err, size_t errlen)
{
	int n = kk_list_tasks(listed, KK_SYNC_MAX_THREADS), added = 0;

	if (n < 0) {
		snprintf(err, errlen, "cannot list /proc/self/task: %s", strerror(-n));
		return n;
	}
	if (n > KK_SYNC_MAX_THREADS) {
		snprintf(err, errlen, "%d threads: more than the %d the signal fallback can track",
			 n, KK_SYNC_MAX_THREADS);
		return -ENOTSUP;
	}
	for (int i = 0; i < n; i++) {
		pid_t tid = listed[i];
		int slot;

		if (tid == me || is_deaf(tid))
			continue;
		/* One that acknowledged needs no look: a round's newcomer runs
		 * the new code anyway, and a stop's threads are parked. */
		if ((slot = find_slot(tid)) >= 0 &&
		    (__atomic_load_n(&sig_ack[slot], __ATOMIC_ACQUIRE) == w || !tid_reused(slot)))
			continue;
		if (tid == pid && kk_task_state(tid) == 'Z')
			continue;
		if (slot < 0) {
			slot = nsig;
			if (slot == KK_SYNC_MAX_THREADS) {
				snprintf(err, errlen, "more than %d threads", KK_SYNC_MAX_THREADS);
				return -ENOTSUP;
			}
		}
		/* a new thread, or a newcomer on a gone thread's tid: signalled */
		sig_start[slot] = kk_task_starttime(tid);
		sig_again[slot] = false;
		__atomic_store_n(&sig_ack[slot], 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sig_tids[slot], tid, __ATOMIC_RELAXED);
		if (slot == nsig)
			__atomic_store_n(&nsig, slot + 1, __ATOMIC_RELEASE);
		if (syscall(SYS_tgkill, pid, tid, sig) != 0) {
			/* ESRCH: it exited between the listing and now. */
			__atomic_store_n(&sig_ack[slot], SLOT_GONE, __ATOMIC_RELAXED);
			continue;
		}
		STAT_INC(st_signals);
		added++;
	}
	return added;
}

/* Slots that neither acknowledged request @w nor exited. */
static int pending(int w)
{
	int n = 0;

	for (int i = 0; i < nsig; i++) {
		int a = __atomic_load_n(&sig_ack[i], __ATOMIC_ACQUIRE);

		n += a != w && a != SLOT_GONE;
	}
	return n;
}

/* On a tick: forget threads that exited; fail on one that keeps @sig blocked. */
static int check_pending(int w, int sig, uint64_t waited, char *err, size_t errlen)
{
	for (int i = 0; i < nsig; i++) {
		int a = __atomic_load_n(&sig_ack[i], __ATOMIC_ACQUIRE);
		pid_t tid = sig_tids[i];
		uint64_t m;

		if (a == w || a == SLOT_GONE)
			continue;
		if (!kk_task_alive(tid) || tid_reused(i)) {
			/* It may have acknowledged just before it exited. */
			__atomic_compare_exchange_n(&sig_ack[i], &a, SLOT_GONE, false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
			continue;
		}
		signal_again(i, getpid(), sig);
		/* Under valgrind a thread running guest code shows valgrind's
		 * mask, which blocks the signal: /proc cannot tell, keep waiting. */
		/* One read of the mask for both questions: a thread starting or
		 * exiting blocks both, then neither; read twice, it looked like
		 * one that blocks the park signal alone (tally run 15). */
		if (waited >= KK_SYNC_BLOCKED_NS && !kk_under_valgrind() &&
		    !kk_task_sigblk(tid, &m) && (m >> (sig - 1) & 1)) {
			char who[64];

			if (kk_sync_round_hook)
				kk_sync_round_hook(tid);

			/*
			 * Blocking SIGTRAP too is a passing state: our own trap
			 * handler runs with every signal blocked, and so does
			 * glibc while a thread starts or exits.  Under load either
			 * can sit past the first limit.  Never skip such a thread:
			 * one in the trap handler must leave it before the batch
			 * may change.  Wait longer instead.
			 */
			if (waited < KK_SYNC_ALLBLOCKED_NS && (m >> (SIGTRAP - 1) & 1))
				continue;

			name_thread(who, sizeof(who), tid);
			snprintf(err, errlen, "%s blocks signal %d (the park signal): "
				 "cannot sync it", who, sig);
			return -ENOTSUP;
		}
	}
	return 0;
}

/* Wait until every signalled thread acknowledged @w or exited. */
static int wait_acks(int w, int sig, char *err, size_t errlen)
{
	uint64_t start = kk_now_ns();

	for (;;) {
		int seen = __atomic_load_n(&ack_count, __ATOMIC_ACQUIRE);
		uint64_t now;

		if (!pending(w))
			return 0;
		if (kk_futex_wait(&ack_count, seen, kk_now_ns() + KK_SYNC_TICK_NS) != -ETIMEDOUT)
			continue;
		now = kk_now_ns();
		if (check_pending(w, sig, now - start, err, errlen))
			return -ENOTSUP;
	}
}

/*
 * Open request @type, signal every other thread, wait for all of them, and
 * list again until a listing finds nobody new.  The request stays open (for
 * a stop: the threads stay parked) until close_request().
 *
 * A stop then looks at the deaf again, and signals those that woke.  Asleep
 * with both signals blocked is also a thread starting under ASan: it waits
 * on a lock inside pthread_create() with every signal blocked, another
 * starting thread releases it while the plan settles, and it went on to run
 * sites that /proc/self/mem was rewriting (tally runs 20 and 33 of issue
 * 27: 9 in 961 runs of text_poke_torture 8 8 in the ASan build).  Once the
 * others are parked nobody is left to release such a lock, so one still
 * asleep stays asleep through the write (a timer or a signal it waits for
 * can still wake it: what a forced stop trusts, see kk_sync_plan()).
 */
static int signal_all(int type, int sig, char *err, size_t errlen)
{
	pid_t me = my_tid(), pid = getpid();
	int w, added, ret;

	seq += REQ_SEQ_STEP;
	if (seq >= SLOT_GONE - REQ_SEQ_STEP)
		seq = REQ_SEQ_STEP;	/* after 2^29 requests: old acks may linger a while */
	w = seq | type;
	__atomic_store_n(&nsig, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&req_word, w, __ATOMIC_RELEASE);
	do {
		added = signal_new(me, pid, sig, w, err, errlen);
		if (added < 0)
			return added;
		ret = wait_acks(w, sig, err, errlen);
		if (ret)
			return ret;
	} while (added || (type == REQ_STOP && stop_settles && ndeaf && undeafen(sig)));
	return 0;
}

static void close_request(void)
{
	__atomic_store_n(&req_word, REQ_NONE, __ATOMIC_RELEASE);
	__atomic_fetch_add(&release_word, 1, __ATOMIC_RELEASE);
	kk_futex_wake(&release_word, 0x7fffffff);
}

static int signal_round(char *err, size_t errlen)
{
	int sig = kk_park_signal();
	int ret = install_handler(sig, err, errlen);

	if (ret)
		return ret;
	ret = signal_all(REQ_ROUND, sig, err, errlen);
	close_request();
	if (!ret)
		STAT_INC(st_signal_rounds);
	return ret;
}

/* ---- rounds and stop_machine -------------------------------------------------------------- */

int kk_sync_round(void)
{
	char err[256];
	int ret = 0, m;

	pthread_mutex_lock(&sync_lock);
	m = method;
	if (m != M_SIGNAL && __atomic_load_n(&membarrier_ok, __ATOMIC_RELAXED)) {
		if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) == 0) {
			STAT_INC(st_membarrier);
			goto out;
		}
		/* A seccomp filter installed since we registered: signals then. */
		__atomic_store_n(&membarrier_ok, 0, __ATOMIC_RELAXED);
	}
	/* A page swap without membarrier: the swap's TLB shootdown was the
	 * sync (see kk_sync_plan()); its threads may not take signals. */
	if (m == M_SWAP)
		goto out;
	ret = signal_round(err, sizeof(err));
	if (ret)
		kk_warn("text sync: %s", err);
out:
	pthread_mutex_unlock(&sync_lock);
	return ret;
}

KK_EXPORT __attribute__((__noinline__, __used__)) void kk_gdb_stop_signal(int sig)
{
	(void)sig;
	__asm__ volatile("");
}

int kk_stop_machine(int (*fn)(void *), void *arg, char *err, size_t errlen)
{
	int sig = kk_park_signal();
	int ret;

	pthread_mutex_lock(&sync_lock);
	ret = install_handler(sig, err, errlen);
	if (ret)
		goto out;
	if (kk_tracer_pid() > 0)
		kk_gdb_stop_signal(sig);
	ret = signal_all(REQ_STOP, sig, err, errlen);
	if (!ret) {
		ret = fn(arg);
		STAT_INC(st_stops);
	}
	close_request();
out:
	pthread_mutex_unlock(&sync_lock);
	return ret;
}

/* ---- the plan ------------------------------------------------------------------------------ */

enum sync_force { F_AUTO, F_MEMBARRIER, F_SIGNAL, F_STOP, F_SWAP };

/* KK_TEXT_SYNC, in enum sync_force order. */
static enum sync_force read_force(void)
{
	static const char *const how[] = { "auto", "membarrier", "signal", "stop-machine", "swap",
					   NULL };
	static int warned;

	return (enum sync_force)kk_env_choice("KK_TEXT_SYNC", how, &warned);
}

/* What the other threads' signal masks allow. */
struct survey {
	int others;		/* threads besides the caller (and the deaf) */
	pid_t trap_blocker;	/* a thread that blocks SIGTRAP, or 0 */
	pid_t park_blocker;	/* a thread that blocks the park signal, or 0 */
	pid_t all_blocker;	/* one that runs with both blocked (not deaf), or 0 */
	uint64_t caught;	/* SigCgt: signals with a handler (bit sig - 1) */
	bool caught_known;
	bool unsettled;		/* masks may gain SIGTRAP unseen (survey_threads()) */
	pid_t me, pid;
};

/*
 * A thread that runs with SIGTRAP and the park signal blocked is most often
 * passing through: out of a handler of ours (which blocks every signal: a
 * thread released by the last stop, until its sigreturn; for long under
 * `strace -f`, which stops it there) or glibc's thread start or exit.  It
 * runs code next, so a stop must not take it for deaf, or it would run
 * while sites are written (issue 22).  Before a stop, every deaf thread that
 * is not asleep gets until one shared deadline (50 ms for them all) to
 * settle: asleep, it stays deaf (a sigwait() thread that only happened to
 * run); unblocked, or still running so, it is signalled like the others and
 * waited for (check_pending()).  Only stops pay this: a round leaves a
 * thread that is truly passing through nothing to fear, and the library
 * writes by page swaps where such threads exist.  And only stops of a
 * protocol with traps (x86: a stop writes whole pages, 5-byte sites in more
 * than one store): where a site is one word (aarch64) the stop writes each
 * with one store, which a running thread sees whole, as in a round.
 */
#define KK_SYNC_SETTLE_NS	(50 * 1000000ull)

static bool settles_asleep(pid_t tid, int sig, uint64_t end)
{
	const uint64_t both = 1ull << (SIGTRAP - 1) | 1ull << (sig - 1);
	uint64_t m;

	for (;;) {
		if (kk_task_state(tid) == 'S')
			return true;
		if (kk_task_sigblk(tid, &m) || (m & both) != both || kk_now_ns() >= end)
			return false;
		sched_yield();
	}
}

/* How many it took off the deaf. */
static int undeafen(int sig)
{
	uint64_t end = kk_now_ns() + KK_SYNC_SETTLE_NS;
	int k = 0, n = ndeaf;

	for (int i = 0; i < ndeaf; i++)
		if (settles_asleep(deaf[i], sig, end))
			deaf[k++] = deaf[i];
	ndeaf = k;
	return n - k;
}

/*
 * Where mremap() is refused, stop_machine stands in for the page swap, and
 * a thread deaf to both signals makes it refuse.  A deaf thread that runs
 * may only be passing through (out of our handler after the last stop: for
 * long under `strace -f`), and refusing for it failed a quarter of the
 * batches of an ordinary program under strace (issue 22 audit).  Until one
 * shared deadline (50 ms for them all), drop from the deaf those that
 * unblock or exit: the stop signals them like the others.  One asleep, or
 * still running so at the deadline (a busy worker started with every
 * signal blocked), stays deaf: refused at once, not waited for.
 */
static void settle_deaf(int sig)
{
	const uint64_t both = 1ull << (SIGTRAP - 1) | 1ull << (sig - 1);
	uint64_t end = kk_now_ns() + KK_SYNC_SETTLE_NS, m;
	int k = 0;

	for (int i = 0; i < ndeaf; i++) {
		for (;;) {
			if (kk_task_sigblk(deaf[i], &m) || (m & both) != both)
				break;				/* exited or unblocked */
			if (kk_task_state(deaf[i]) == 'S' || kk_now_ns() >= end) {
				deaf[k++] = deaf[i];		/* deaf */
				break;
			}
			sched_yield();
		}
	}
	ndeaf = k;
}

/* Every thread's tid, however many: into @buf, or into *@big, malloc'ed. */
static int list_all(pid_t *buf, pid_t **big, char *err, size_t errlen)
{
	int n = kk_list_tasks(buf, KK_SYNC_MAX_THREADS), cap = KK_SYNC_MAX_THREADS;

	*big = NULL;
	while (n > cap) {
		free(*big);
		cap = n + n / 4;
		if (!(*big = malloc((size_t)cap * sizeof(**big)))) {
			snprintf(err, errlen, "cannot look at the signal masks of %d threads: "
				 "out of memory", n);
			return -ENOMEM;
		}
		n = kk_list_tasks(*big, cap);
	}
	if (n < 0) {
		free(*big);
		*big = NULL;
		snprintf(err, errlen, "cannot list /proc/self/task: %s", strerror(-n));
	}
	return n;
}

/*
 * A thread still inside our park handler after the last stop runs next
 * with the mask it returns to, not the handler's (sig_leaving[]).  Its slot
 * is the one of the last request, which the next one has not reset yet.
 */
static void leaving_mask(pid_t tid, bool *trap, bool *park)
{
	int slot = find_slot(tid);
	uint64_t v = slot < 0 ? 0 : __atomic_load_n(&sig_leaving[slot], __ATOMIC_ACQUIRE);

	if (!(v & LEAVING_IN) || (pid_t)(v >> 32) != tid)
		return;
	*trap = v & LEAVING_TRAP;
	*park = v & LEAVING_PARK;
}

static void survey_one(pid_t tid, int sig, struct survey *s)
{
	uint64_t m;
	bool trap, park;

	if (tid == s->me)
		return;
	if (tid == s->pid && kk_task_state(tid) == 'Z')
		return;
	/* Library threads leave both unblocked (kk_thread_create()). */
	if (kk_is_library_thread(tid) ||
	    kk_task_sigmasks(tid, &m, s->caught_known ? NULL : &s->caught)) {
		s->others++;
		return;
	}
	s->caught_known = true;
	trap = m >> (SIGTRAP - 1) & 1;
	park = m >> (sig - 1) & 1;
	if (trap && park)
		leaving_mask(tid, &trap, &park);
	/* Under valgrind /proc shows the program's mask only while a thread
	 * sits in a syscall; a thread running guest code shows valgrind's own
	 * mask: everything blocked but the faults.  valgrind delivers to it
	 * by the program's mask, so take that pattern as "not blocked". */
	if (!trap && park && kk_under_valgrind())
		park = false;
	/* Deaf: both blocked (a sigwait() worker, glibc's timer thread, a
	 * test runner's helper): left alone by signals, and a reason for the
	 * page swap when the library chooses.  One that runs (all_blocker)
	 * may be passing through instead: a stop looks at it again
	 * (undeafen()). */
	if (trap && park && ndeaf < KK_SYNC_MAX_DEAF) {
		if (kk_task_state(tid) != 'S' && !s->all_blocker)
			s->all_blocker = tid;
		deaf[ndeaf++] = tid;
		return;
	}
	if (trap && !s->trap_blocker)
		s->trap_blocker = tid;
	if (park && !s->park_blocker)
		s->park_blocker = tid;
	s->others++;
}

static int tid_cmp(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * Every thread's mask counts, however many there are: one past the first
 * 4096 that blocks SIGTRAP dies of the int3 protocol as surely (issue 22
 * audit).  The signal methods still refuse past 4096.
 *
 * And every thread's, including those created while the masks are read.
 * A thread inherits its creator's mask, and the trap window only stops
 * masks from gaining SIGTRAP from now on: a creator that blocked every
 * signal before, to create a worker (a common way to keep signals off
 * one), may create it after the listing and unblock before its own mask is
 * read.  So the threads are listed again until a listing adds none; a
 * thread created after that was created by one whose mask was read.  Up to
 * KK_SYNC_RELISTS times: under a storm of thread creation the plan is
 * unsettled (the page swap, where the library chooses).
 */
#define KK_SYNC_RELISTS		4
static pid_t relisted[KK_SYNC_MAX_THREADS];

static int survey_threads(int sig, struct survey *s, char *err, size_t errlen)
{
	pid_t *buf[2] = { listed, relisted }, *tids, *big, *big2;
	int n, cur = 0;
	sigset_t mine;

	memset(s, 0, sizeof(*s));
	s->me = my_tid();
	s->pid = getpid();
	ndeaf = 0;
	/* A trap in the caller itself (a signal handler running a site). */
	if (!pthread_sigmask(SIG_BLOCK, NULL, &mine) && sigismember(&mine, SIGTRAP))
		s->trap_blocker = s->me;
	if ((n = list_all(buf[cur], &big, err, errlen)) < 0)
		return n;
	tids = big ? big : buf[cur];
	if (kk_sync_plan_hook)
		kk_sync_plan_hook(KK_PLAN_LISTED);
	for (int i = 0; i < n; i++)
		survey_one(tids[i], sig, s);
	for (int pass = 0, fresh = 1; fresh; pass++) {
		pid_t *again;
		int m;

		qsort(tids, (size_t)n, sizeof(*tids), tid_cmp);
		cur ^= 1;
		if ((m = list_all(buf[cur], &big2, err, errlen)) < 0) {
			free(big);
			return m;
		}
		again = big2 ? big2 : buf[cur];
		fresh = 0;
		for (int i = 0; i < m; i++)
			if (!bsearch(&again[i], tids, (size_t)n, sizeof(*tids), tid_cmp)) {
				survey_one(again[i], sig, s);
				fresh++;
			}
		free(big);
		big = big2;
		tids = again;
		n = m;
		if (fresh && pass == KK_SYNC_RELISTS)
			s->unsettled = true;
		if (s->unsettled)
			break;
	}
	free(big);
	return 0;
}

static int refuse(char *err, size_t errlen, pid_t tid, const char *what, const char *why)
{
	char who[64];

	name_thread(who, sizeof(who), tid);
	snprintf(err, errlen, "%s blocks %s: %s", who, what, why);
	return -ENOTSUP;
}

/* Can every other thread be signalled?  0 or -ENOTSUP. */
static int can_signal(int sig, const struct survey *s, char *err, size_t errlen, const char *why)
{
	char what[48];

	if (check_disposition(sig, err, errlen))
		return -ENOTSUP;
	if (s->park_blocker) {
		snprintf(what, sizeof(what), "signal %d (the park signal)", sig);
		return refuse(err, errlen, s->park_blocker, what, why);
	}
	return 0;
}

/*
 * The page swap (KK_PATCH_SWAP): a protocol with traps would kill a thread
 * that blocks SIGTRAP, and shows every trap and park signal to a tracer.
 * Swapping in rebuilt pages needs neither: -ENOTSUP where mremap() was
 * refused, with the reason of the thread that needed it.
 */
static int swap_or_refuse(pid_t who, const char *why, char *err, size_t errlen)
{
	if (!__atomic_load_n(&swap_refused, __ATOMIC_RELAXED))
		return M_SWAP;
	if (!who) {
		snprintf(err, errlen, "%s, and pages cannot be swapped (mremap refused)", why);
		return -ENOTSUP;
	}
	return refuse(err, errlen, who, "SIGTRAP", why);
}

/* A forced method that would need a trap where @s says one kills. */
static int forced(int m, bool mb, int sig, struct survey *s, const char *name, char *err,
		  size_t errlen)
{
	char why[80];

	snprintf(why, sizeof(why), "KK_TEXT_SYNC=%s would kill it with a trap", name);
	if (m == M_MEMBARRIER && !mb) {
		snprintf(err, errlen, "KK_TEXT_SYNC=membarrier: membarrier SYNC_CORE is unavailable");
		return -ENOTSUP;
	}
	if (m == M_SIGNAL && can_signal(sig, s, err, errlen, "KK_TEXT_SYNC=signal cannot sync it"))
		return -ENOTSUP;
	if (m == M_STOP)
		return can_signal(sig, s, err, errlen, "KK_TEXT_SYNC=stop-machine cannot stop it") ?
			-ENOTSUP : M_STOP;
	if (s->trap_blocker)
		return refuse(err, errlen, s->trap_blocker, "SIGTRAP", why);
	return m;
}

/*
 * A program handler that blocks SIGTRAP while it runs (a full sa_mask, as
 * sigfillset() gives: a common way to install one) runs sites with SIGTRAP
 * blocked whenever its signal comes, on any thread, at any moment: met by
 * the int3 protocol, such a site kills the process.  The first such signal,
 * or 0.  The park signal's handler is the library's.  SIGTRAP's is too,
 * but it chains to the program's, with every signal blocked: a program
 * SIGTRAP handler counts, whatever its sa_mask (issue 37, held-out round),
 * as does one installed over ours (the kernel blocks SIGTRAP while it runs
 * unless SA_NODEFER).
 */
static bool trap_handler_blocks_trap(const struct sigaction *sa)
{
	if (kk_handler_is_library(sa))
		return kk_arch_trap_chains_program();
	return !(sa->sa_flags & SA_NODEFER) || sigismember(&sa->sa_mask, SIGTRAP);
}

static int handler_blocking_trap(int park, struct survey *s)
{
	struct sigaction sa;

	/* Only the signals with a handler (SigCgt, read with the masks): 62
	 * sigaction() queries cost a sixth of a one-site flip. */
	if (!s->caught_known && kk_task_sigmasks(0, &(uint64_t){ 0 }, &s->caught))
		s->caught = ~0ull;
	for (int sig = 1; sig < NSIG && sig <= 64; sig++) {
		if (!(s->caught >> (sig - 1) & 1) ||
		    sig == park || sig == SIGKILL || sig == SIGSTOP ||
		    sigaction(sig, NULL, &sa) || handler_is_dfl(&sa) ||
		    (!(sa.sa_flags & SA_SIGINFO) && sa.sa_handler == SIG_IGN))
			continue;
		if (sig == SIGTRAP ? trap_handler_blocks_trap(&sa) :
		    !kk_handler_is_library(&sa) && sigismember(&sa.sa_mask, SIGTRAP))
			return sig;
	}
	return 0;
}

static int choose(enum sync_force force, int sig, struct survey *s, bool traps,
		  bool (*cow_hot)(void *), void *cow, char *err, size_t errlen)
{
	static const int forced_method[] = {
		[F_MEMBARRIER] = M_MEMBARRIER, [F_SIGNAL] = M_SIGNAL, [F_STOP] = M_STOP,
	};
	static const char *const forced_name[] = {
		[F_MEMBARRIER] = "membarrier", [F_SIGNAL] = "signal", [F_STOP] = "stop-machine",
	};
	bool mb = __atomic_load_n(&membarrier_ok, __ATOMIC_RELAXED);
	bool noswap = __atomic_load_n(&swap_refused, __ATOMIC_RELAXED);
	bool debug = traps && (kk_tracer_pid() > 0 || kk_under_valgrind());

	/* Without traps a thread that blocks SIGTRAP is like any other. */
	if (!traps)
		s->trap_blocker = 0;
	if (force == F_SWAP)
		return swap_or_refuse(0, "KK_TEXT_SYNC=swap", err, errlen);
	/* A forced int3 protocol leaves threads deaf to every signal alone:
	 * whoever forces it says that they run no site. */
	if (force != F_AUTO)
		return forced(forced_method[force], mb, sig, s, forced_name[force], err, errlen);
	/*
	 * Left to itself the library assumes nothing: a thread that blocks
	 * every signal (a sigwait() daemon's workers, asleep or running;
	 * glibc's timer thread running a SIGEV_THREAD callback) is killed by
	 * a trap like any other SIGTRAP blocker, and may run a site.
	 */
	if (traps && noswap && s->all_blocker)
		settle_deaf(sig);
	if (traps && !s->trap_blocker)
		s->trap_blocker = ndeaf ? deaf[0] : s->all_blocker;
	if (!s->others && !ndeaf)
		return s->trap_blocker ? M_STOP : M_SINGLE;
	if (s->trap_blocker && noswap && !ndeaf &&
	    !can_signal(sig, s, err, errlen, ""))
		return M_STOP;
	if (s->trap_blocker)
		return swap_or_refuse(s->trap_blocker, "a trap would kill it, and pages cannot be "
				      "swapped (mremap refused)", err, errlen);
	/* A thread may have blocked SIGTRAP unseen (threads created faster
	 * than they can be listed, a mask change held up in a handler). */
	if (traps && !noswap && s->unsettled)
		return M_SWAP;
	/* Where mremap() is refused such a program keeps the int3 protocol:
	 * refusing its every change would be worse (docs/text_patching.md). */
	if (traps && !noswap && handler_blocking_trap(sig, s))
		return M_SWAP;
	if (debug && !noswap)
		return M_SWAP;
	/* The first change of pages that still hold their file's bytes breaks
	 * copy-on-write: a TLB flush of every CPU running the process for each
	 * page that a thread maps back before it is written (216 IPIs for
	 * dynamic debug's 16154 sites while a thread runs them).  Where more
	 * came back than a page swap flushes, it swaps (text_poke.c). */
	if (cow_hot && !noswap && (s->others || ndeaf) && cow_hot(cow))
		return M_SWAP;
	if (debug && !can_signal(sig, s, err, errlen, ""))
		return M_STOP;
	if (mb)
		return M_MEMBARRIER;
	if (can_signal(sig, s, err, errlen, "membarrier SYNC_CORE is unavailable, so "
		       "kernelkit cannot sync it"))
		return -ENOTSUP;
	return M_SIGNAL;
}

int kk_sync_plan(bool traps, bool (*cow_hot)(void *), void *cow, char *err, size_t errlen)
{
	enum sync_force force = read_force();
	int sig = kk_park_signal(), m;
	struct survey s;

	kk_sync_arm();
	pthread_mutex_lock(&sync_lock);
	/* No mask gains SIGTRAP unseen from here until the batch has no trap
	 * byte left (text_sync_sigmask.c). */
	if (traps)
		kk_sync_window_open();
	m = survey_threads(sig, &s, err, errlen);
	if (kk_sync_plan_hook)
		kk_sync_plan_hook(KK_PLAN_SURVEYED);
	if (m < 0 && m != -ENOMEM && __atomic_load_n(&membarrier_ok, __ATOMIC_RELAXED) &&
	    (force == F_AUTO || force == F_MEMBARRIER)) {
		/* No /proc (a chroot, a sandbox): membarrier needs no list.
		 * What cannot be checked is who blocks SIGTRAP. */
		kk_warn_once(no_list_warned, "%s: patching with membarrier without checking "
			     "which threads block SIGTRAP", err);
		err[0] = 0;
		m = M_MEMBARRIER;
	} else if (!m) {
		m = choose(force, sig, &s, traps, cow_hot, cow, err, errlen);
	}
	/* Without traps a stop writes each site with one aligned store, as a
	 * round does: a deaf thread left running sees the old or the new
	 * instruction, so there is nothing to settle (and no 30 s wait for a
	 * busy worker that blocks every signal). */
	stop_settles = m == M_STOP && traps;
	if (stop_settles)
		undeafen(sig);
	if (m >= 0)
		__atomic_store_n(&method, m, __ATOMIC_RELAXED);
	/* Only the int3 protocol puts traps in other threads' way. */
	if (traps && m != M_MEMBARRIER && m != M_SIGNAL && m != M_SINGLE)
		kk_sync_done();
	pthread_mutex_unlock(&sync_lock);
	if (m < 0)
		return m;
	return m == M_STOP ? KK_PATCH_STOP : m == M_SWAP ? KK_PATCH_SWAP : KK_PATCH_LIVE;
}

void kk_sync_swap_refused(void)
{
	__atomic_store_n(&swap_refused, 1, __ATOMIC_RELAXED);
}

/* ---- what the plan looks at ------------------------------------------------------------------ */

pid_t kk_tracer_pid(void)
{
	char buf[2048], *p;
	long v = 0;

	if (kk_read_proc("/proc/self/status", buf, sizeof(buf)) <= 0 ||
	    !(p = strstr(buf, "\nTracerPid:")))
		return 0;
	for (p += 11; *p == ' ' || *p == '\t'; p++)
		;
	for (; *p >= '0' && *p <= '9' && v < 0x7fffffff; p++)
		v = v * 10 + (*p - '0');
	return (pid_t)v;
}

bool kk_under_valgrind(void)
{
#ifdef KK_HAVE_VALGRIND_H
	static int cached;	/* 0 unknown, 1 no, 2 yes */
	int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);

	if (!c) {
		c = RUNNING_ON_VALGRIND ? 2 : 1;
		__atomic_store_n(&cached, c, __ATOMIC_RELAXED);
	}
	return c == 2;
#else
	return false;
#endif
}

void kk_sync_get_stats(struct kk_sync_stats *st)
{
	st->membarrier_rounds = __atomic_load_n(&st_membarrier, __ATOMIC_RELAXED);
	st->signal_rounds = __atomic_load_n(&st_signal_rounds, __ATOMIC_RELAXED);
	st->signals = __atomic_load_n(&st_signals, __ATOMIC_RELAXED);
	st->stop_machines = __atomic_load_n(&st_stops, __ATOMIC_RELAXED);
	kk_sync_deferral_stats(&st->deferrals, &st->deferrals_standing);
}

const char *kk_sync_method(void)
{
	return method_names[__atomic_load_n(&method, __ATOMIC_RELAXED)];
}
