// SPDX-License-Identifier: MIT
/*
 * Simple hazard pointers: per-thread slots, a self-scanning synchronize and a
 * scan, run on the library's worker, that batches blocked waiters.  See include/kernelkit/shazptr.h
 * and docs/shazptr.md.
 *
 * Slots.  Each thread owns one record; the record's first cache line holds the
 * slot and nothing else.  Records are carved from mmap'ed pages, pushed onto a
 * lock-free list with CAS and never freed: a thread that exits gives its record
 * back (slot emptied, in_use cleared) and the next new thread reuses it.  So a
 * scanner can walk the list at any time without locks and without ever
 * touching freed memory, and registration needs no lock (it may run inside a
 * signal handler).
 *
 * Waiting.  synchronize_shazptr(p) issues a full fence (pairing with the one
 * in shazptr_acquire()) and scans every slot.  If a slot holds p or the
 * wildcard, it queues a waiter carrying p and the set of slot groups (slot
 * index mod 64) that blocked it, queues the scan work on the library's worker
 * (src/common/workqueue.c, "kk-worker") and sleeps on a futex.  The scan takes
 * one snapshot of all slots per round, serving every queued waiter from it: a
 * waiter's group bit is dropped once a snapshot shows no slot of that group
 * holding the waiter's pointer (or the wildcard); when no bits are left the
 * waiter is woken.  While waiters remain, the scan rescans a few times at
 * once, then queues itself again after an exponential back-off (2 us ..
 * 256 us) that a new waiter cuts short (it queues the immediate scan, which
 * the worker runs before any delayed item).
 *
 * Without the worker (kk_threads_stop(), or it cannot start) a waiter scans
 * in its own thread, sleeping between rounds.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/shazptr.h>
#include "common/internal.h"
#include <kernelkit/control.h>
#include "control.h"

#define SHZ_LINE	64
#define SHZ_GROUPS	64
#define SHZ_QUICK_ROUNDS	8	/* rescans before the scan backs off */
#define SHZ_MAX_BACKOFF_US	256	/* longest sleep between rescans */

struct shazptr_rec {
	void *slot;			/* alone on the first cache line */
	char pad0[SHZ_LINE - sizeof(void *)];
	struct shazptr_rec *next;		/* immutable once the record is published */
	unsigned int index;		/* position, for the scan-group bit */
	unsigned int in_use;		/* owned by a live thread */
	char pad1[SHZ_LINE - sizeof(void *) - 2 * sizeof(unsigned int)];
} __attribute__((aligned(2 * SHZ_LINE)));

_Static_assert(offsetof(struct shazptr_rec, slot) == 0, "slot must come first");

struct shazptr_waiter {
	void *ptr;			/* the pointer being waited for */
	uint64_t mask;			/* slot groups not yet seen clear */
	uint64_t blocked;		/* scratch: groups blocking in this round */
	int done;			/* futex word: SHZ_DONE, SHZ_POLL (wait yourself) */
	struct shazptr_waiter *next;
};

KK_EXPORT __thread void **__kk_shazptr_slot __attribute__((tls_model("initial-exec")));

static struct shazptr_rec *rec_head;	/* list of all records (atomic) */
static unsigned int rec_count;		/* records allocated (atomic) */
static unsigned int rec_in_use;		/* records owned (atomic) */

/* The key that releases a thread's record at its exit: 0 before the first
 * thread registers, then the key + 1, or -1 if it could not be made. */
static long shazptr_key_state;
static bool shazptr_skip_self_scan;		/* atomic */

static struct {
	uint64_t sync_calls;
	uint64_t sync_scan_thread;
	uint64_t longest_wait_ns;
	uint64_t scan_rounds;
} shazptr_stats;

#define SHZ_DONE	1
#define SHZ_POLL	2

static void scan_fn(struct kk_work *w);

static struct {
	pthread_mutex_t lock;		/* protects queue */
	struct shazptr_waiter *queue;	/* waiters not yet taken by the scan */
	struct shazptr_waiter *active;	/* waiters the scan serves (the scan's own) */
	unsigned int backoff_us, quick;	/* the scan's back-off (the scan's own) */
	struct kk_work now;		/* queued by a new waiter: runs first */
	struct kk_work later;		/* queued by the scan to back off */
} scan = { PTHREAD_MUTEX_INITIALIZER, NULL, NULL, 0, 0, KK_WORK_INIT(scan_fn),
	   KK_WORK_INIT(scan_fn) };

/* ---- small helpers ----------------------------------------------------- */


static void stat_max(uint64_t *p, uint64_t v)
{
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);

	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, true,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

/* Full barrier.  On x86-64 a locked no-op on the stack (as the kernel's
 * smp_mb()) is cheaper than MFENCE; elsewhere the C11 fence. */
static inline void shazptr_mb(void)
{
#if defined(__x86_64__)
	__asm__ __volatile__("lock; orq $0, (%%rsp)" ::: "memory", "cc");
#else
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
}

static inline void shazptr_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline bool blocks(const void *v, const void *ptr)
{
	return v == ptr || v == SHAZPTR_WILDCARD;
}

/* ---- thread registration ---------------------------------------------- */

static void shazptr_thread_exit(void *arg)
{
	struct shazptr_rec *r = arg;

	/* A thread that exits holding a guard stops blocking here. */
	__atomic_store_n(&r->slot, NULL, __ATOMIC_RELEASE);
	if (__kk_shazptr_slot == &r->slot)
		__kk_shazptr_slot = NULL;
	__atomic_fetch_sub(&rec_in_use, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&r->in_use, 0, __ATOMIC_RELEASE);
}

static void shazptr_atfork_prepare(void)
{
	pthread_mutex_lock(&scan.lock);
}

static void shazptr_atfork_parent(void)
{
	pthread_mutex_unlock(&scan.lock);
}

static void shazptr_atfork_child(void)
{
	struct shazptr_rec *self = (struct shazptr_rec *)(void *)__kk_shazptr_slot;
	unsigned int n = 0;

	/* Only the forking thread survives: drop everybody else's slot. */
	for (struct shazptr_rec *r = __atomic_load_n(&rec_head, __ATOMIC_ACQUIRE); r; r = r->next) {
		if (r == self) {
			n++;
			continue;
		}
		__atomic_store_n(&r->slot, NULL, __ATOMIC_RELAXED);
		__atomic_store_n(&r->in_use, 0, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&rec_in_use, n, __ATOMIC_RELAXED);
	/* The waiters belonged to the parent's other threads.  A scan still
	 * queued on the worker finds nothing to do. */
	pthread_mutex_init(&scan.lock, NULL);
	scan.queue = NULL;
	scan.active = NULL;
	scan.backoff_us = scan.quick = 0;
}

/*
 * Made by the first thread that registers, not at load.  Registration may run
 * in a signal handler that interrupted this very function, so this is no
 * pthread_once() (which would wait for itself): each caller makes a key and
 * the first to publish wins; a loser deletes its own.
 */
static long shazptr_key_get(void)
{
	long v = __atomic_load_n(&shazptr_key_state, __ATOMIC_ACQUIRE), want;
	pthread_key_t k;

	if (v)
		return v;
	want = pthread_key_create(&k, shazptr_thread_exit) == 0 ? (long)k + 1 : -1;
	if (__atomic_compare_exchange_n(&shazptr_key_state, &v, want, false, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		if (want < 0)
			kk_warn("shazptr: pthread_key_create failed; "
				"slots of exiting threads will not be released");
		return want;
	}
	if (want > 0)
		pthread_key_delete(k);
	return v;
}

static struct shazptr_rec *rec_claim_free(void)
{
	for (struct shazptr_rec *r = __atomic_load_n(&rec_head, __ATOMIC_ACQUIRE); r; r = r->next) {
		unsigned int zero = 0;

		if (__atomic_load_n(&r->in_use, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&r->in_use, &zero, 1, false,
						__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return r;
	}
	return NULL;
}

/* Map a page of records, keep the first and publish all of them. */
static struct shazptr_rec *rec_alloc_page(void)
{
	size_t sz = (size_t)sysconf(_SC_PAGESIZE);
	size_t n;
	struct shazptr_rec *recs, *head;

	if (sz < sizeof(struct shazptr_rec) * 8)
		sz = sizeof(struct shazptr_rec) * 8;
	n = sz / sizeof(struct shazptr_rec);
	recs = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (recs == MAP_FAILED)
		return NULL;
	unsigned int base = __atomic_fetch_add(&rec_count, (unsigned int)n, __ATOMIC_RELAXED);
	for (size_t i = 0; i < n; i++) {
		recs[i].index = base + (unsigned int)i;
		recs[i].in_use = i == 0;
		recs[i].next = i + 1 < n ? &recs[i + 1] : NULL;
	}
	head = __atomic_load_n(&rec_head, __ATOMIC_RELAXED);
	do {
		recs[n - 1].next = head;
	} while (!__atomic_compare_exchange_n(&rec_head, &head, &recs[0], true,
					      __ATOMIC_RELEASE, __ATOMIC_RELAXED));
	return &recs[0];
}

KK_EXPORT void **__kk_shazptr_register_thread(void)
{
	sigset_t all, old;
	struct shazptr_rec *r;
	long key;

	/* Block signals so that a handler cannot register this thread twice.
	 * Not SIGTRAP: its handler is the library's (it registers nothing), and
	 * blocking it would wait out a batch of the int3 protocol
	 * (text_sync_sigmask.c). */
	sigfillset(&all);
	sigdelset(&all, SIGTRAP);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (__kk_shazptr_slot) {
		void **s = __kk_shazptr_slot;

		pthread_sigmask(SIG_SETMASK, &old, NULL);
		return s;
	}
	r = rec_claim_free();
	if (!r)
		r = rec_alloc_page();
	if (!r) {
		kk_warn("shazptr: out of memory for a slot");
		abort();
	}
	__atomic_store_n(&r->slot, NULL, __ATOMIC_RELAXED);
	__atomic_fetch_add(&rec_in_use, 1, __ATOMIC_RELAXED);
	__kk_shazptr_slot = &r->slot;
	/*
	 * Release at thread exit.  If this runs from another key's destructor
	 * after ours already ran, setting the value again makes glibc run our
	 * destructor once more (up to PTHREAD_DESTRUCTOR_ITERATIONS rounds).
	 */
	key = shazptr_key_get();
	if (key > 0)
		pthread_setspecific((pthread_key_t)(key - 1), r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return &r->slot;
}

/* ---- scanning ---------------------------------------------------------- */

/* One pass over all slots: the groups whose slots hold @ptr or the wildcard. */
static uint64_t scan_groups(const void *ptr)
{
	uint64_t mask = 0;

	for (struct shazptr_rec *r = __atomic_load_n(&rec_head, __ATOMIC_ACQUIRE); r; r = r->next) {
		void *v = __atomic_load_n(&r->slot, __ATOMIC_ACQUIRE);

		if (v && blocks(v, ptr))
			mask |= 1ull << (r->index % SHZ_GROUPS);
	}
	return mask;
}

static bool bad_ptr(const void *ptr)
{
	return ptr == NULL || ptr == SHAZPTR_WILDCARD;
}

KK_EXPORT int kk_shazptr_scan(const void *ptr)
{
	if (bad_ptr(ptr))
		return -EINVAL;
	shazptr_mb();
	return scan_groups(ptr) ? -EBUSY : 0;
}

/* One scan round over @active; returns the waiters left. */
static struct shazptr_waiter *scan_round(struct shazptr_waiter *active)
{
	struct shazptr_waiter *w, **pp;

	__atomic_fetch_add(&shazptr_stats.scan_rounds, 1, __ATOMIC_RELAXED);
	for (w = active; w; w = w->next)
		w->blocked = 0;
	/* Pairs with the readers' fence, like the updater's own fence. */
	shazptr_mb();
	for (struct shazptr_rec *r = __atomic_load_n(&rec_head, __ATOMIC_ACQUIRE); r; r = r->next) {
		void *v = __atomic_load_n(&r->slot, __ATOMIC_ACQUIRE);

		if (!v)
			continue;
		for (w = active; w; w = w->next)
			if (blocks(v, w->ptr))
				w->blocked |= 1ull << (r->index % SHZ_GROUPS);
	}
	pp = &active;
	while ((w = *pp)) {
		w->mask &= w->blocked;
		if (w->mask) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		/* Last touch of *w: the waiter may return as soon as it sees done. */
		__atomic_store_n(&w->done, SHZ_DONE, __ATOMIC_RELEASE);
		kk_futex_wake(&w->done, 1);
	}
	return active;
}

/* Take the waiters queued since the last round. */
static bool scan_take_fresh(void)
{
	struct shazptr_waiter *fresh, *tail;

	pthread_mutex_lock(&scan.lock);
	fresh = scan.queue;
	scan.queue = NULL;
	pthread_mutex_unlock(&scan.lock);
	if (!fresh)
		return false;
	for (tail = fresh; tail->next; tail = tail->next)
		;
	tail->next = scan.active;
	scan.active = fresh;
	return true;
}

/*
 * The scan, on the worker (scan.now and scan.later both run this; the worker
 * runs one item at a time, so scan.active and the back-off are its own).
 */
static void scan_fn(struct kk_work *w)
{
	(void)w;
	for (;;) {
		if (scan_take_fresh())
			scan.backoff_us = scan.quick = 0;
		if (!scan.active)
			return;
		scan.active = scan_round(scan.active);
		if (!scan.active) {
			scan.backoff_us = scan.quick = 0;
			continue;	/* serve waiters that came meanwhile */
		}
		/*
		 * Readers still hold.  Read sections are short: rescan a few
		 * times at once, then back off 2 us, 4 us, ... up to 256 us
		 * between rounds, giving the worker back (a new waiter queues
		 * scan.now, which runs first).
		 */
		if (++scan.quick <= SHZ_QUICK_ROUNDS) {
			for (int i = 0; i < 64; i++)
				shazptr_relax();
			continue;
		}
		scan.backoff_us = scan.backoff_us ? scan.backoff_us * 2 : 2;
		if (scan.backoff_us > SHZ_MAX_BACKOFF_US)
			scan.backoff_us = SHZ_MAX_BACKOFF_US;
		if (kk_queue_work(&scan.later, (uint64_t)scan.backoff_us * 1000) >= 0)
			return;
	}
}

/*
 * kk_threads_stop(): the worker is about to go.  Stop the scan and hand every
 * waiter back to its own thread, which then polls.
 */
static void scan_service_stop(void)
{
	struct shazptr_waiter *w, *next, *all;

	kk_cancel_work_sync(&scan.now);
	kk_cancel_work_sync(&scan.later);
	pthread_mutex_lock(&scan.lock);
	all = scan.queue;
	scan.queue = NULL;
	for (w = scan.active; w; w = next) {
		next = w->next;
		w->next = all;
		all = w;
	}
	scan.active = NULL;
	scan.backoff_us = scan.quick = 0;
	pthread_mutex_unlock(&scan.lock);
	for (w = all; w; w = next) {
		next = w->next;
		__atomic_store_n(&w->done, SHZ_POLL, __ATOMIC_RELEASE);
		kk_futex_wake(&w->done, 1);
	}
}

static struct kk_service scan_service = { "shazptr", scan_service_stop, NULL, NULL };

/* No worker: wait in the caller, sleeping between scans. */
static void wait_polling(struct shazptr_waiter *w)
{
	unsigned int us = 1;

	for (;;) {
		w->next = NULL;
		if (!scan_round(w))
			return;
		struct timespec ts = { 0, (long)us * 1000 };

		nanosleep(&ts, NULL);
		us = us < 1000 ? us * 2 : 1000;
	}
}

static void warn_self_deadlock(void)
{
	kk_warn_once(warned, "shazptr: synchronize_shazptr() called while this thread "
		     "holds a guard: it waits for itself");
}

KK_EXPORT void synchronize_shazptr(void *ptr)
{
	struct shazptr_waiter w;
	uint64_t t0, mask = ~0ull;
	bool queued;

	if (bad_ptr(ptr))
		return;
	__atomic_fetch_add(&shazptr_stats.sync_calls, 1, __ATOMIC_RELAXED);
	/* Pairs with the full fence in shazptr_acquire(). */
	shazptr_mb();
	if (!__atomic_load_n(&shazptr_skip_self_scan, __ATOMIC_RELAXED)) {
		mask = scan_groups(ptr);
		if (!mask)
			return;
	}
	/* Blocked: from here on the caller waits (and the wait is timed). */
	t0 = kk_now_ns();
	if (__kk_shazptr_slot && blocks(__atomic_load_n(__kk_shazptr_slot, __ATOMIC_RELAXED), ptr))
		warn_self_deadlock();

	__atomic_fetch_add(&shazptr_stats.sync_scan_thread, 1, __ATOMIC_RELAXED);
	w.ptr = ptr;		/* (the seed's kthread path forgot this one) */
	w.mask = mask;
	w.blocked = 0;
	w.done = 0;
	w.next = NULL;

	/* Checked under the lock: kk_threads_stop() sets the flag, then takes
	 * the lock to hand back every queued waiter. */
	pthread_mutex_lock(&scan.lock);
	queued = !kk_threads_stopped();
	if (queued) {
		w.next = scan.queue;
		scan.queue = &w;
	}
	pthread_mutex_unlock(&scan.lock);
	if (queued && kk_queue_work(&scan.now, 0) < 0) {
		/* No worker: take our waiter back, unless a scan has it already. */
		pthread_mutex_lock(&scan.lock);
		for (struct shazptr_waiter **pp = &scan.queue; *pp; pp = &(*pp)->next) {
			if (*pp == &w) {
				*pp = w.next;
				queued = false;
				break;
			}
		}
		pthread_mutex_unlock(&scan.lock);
	}
	if (queued) {
		int d;

		while (!(d = __atomic_load_n(&w.done, __ATOMIC_ACQUIRE)))
			kk_futex_wait(&w.done, 0, 0);
		queued = d == SHZ_DONE;
	}
	if (!queued)
		wait_polling(&w);	/* bits already dropped stay dropped */
	stat_max(&shazptr_stats.longest_wait_ns, kk_now_ns() - t0);
}

/* ---- settings and statistics ------------------------------------------- */

KK_EXPORT bool kk_shazptr_set_skip_synchronize_self_scan(bool skip)
{
	return __atomic_exchange_n(&shazptr_skip_self_scan, skip, __ATOMIC_RELAXED);
}

KK_EXPORT bool kk_shazptr_get_skip_synchronize_self_scan(void)
{
	return __atomic_load_n(&shazptr_skip_self_scan, __ATOMIC_RELAXED);
}

KK_EXPORT void kk_shazptr_get_stats(struct kk_shazptr_stats *st)
{
	if (!st)
		return;
	st->sync_calls = __atomic_load_n(&shazptr_stats.sync_calls, __ATOMIC_RELAXED);
	st->sync_scan_thread = __atomic_load_n(&shazptr_stats.sync_scan_thread, __ATOMIC_RELAXED);
	st->longest_wait_ns = __atomic_load_n(&shazptr_stats.longest_wait_ns, __ATOMIC_RELAXED);
	st->scan_rounds = __atomic_load_n(&shazptr_stats.scan_rounds, __ATOMIC_RELAXED);
	st->slots = __atomic_load_n(&rec_count, __ATOMIC_RELAXED);
	st->slots_in_use = __atomic_load_n(&rec_in_use, __ATOMIC_RELAXED);
}

KK_EXPORT void kk_shazptr_reset_stats(void)
{
	__atomic_store_n(&shazptr_stats.sync_calls, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&shazptr_stats.sync_scan_thread, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&shazptr_stats.longest_wait_ns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&shazptr_stats.scan_rounds, 0, __ATOMIC_RELAXED);
}

static int stats_show(struct kk_buf *out, void *priv)
{
	struct kk_shazptr_stats st;

	(void)priv;
	kk_shazptr_get_stats(&st);
	kk_buf_printf(out,
		      "synchronize_calls %llu\n"
		      "scan_thread_waits %llu\n"
		      "longest_wait_ns %llu\n"
		      "scan_rounds %llu\n"
		      "slots %llu\n"
		      "slots_in_use %llu\n"
		      "skip_synchronize_self_scan %d\n",
		      (unsigned long long)st.sync_calls,
		      (unsigned long long)st.sync_scan_thread,
		      (unsigned long long)st.longest_wait_ns,
		      (unsigned long long)st.scan_rounds,
		      (unsigned long long)st.slots,
		      (unsigned long long)st.slots_in_use,
		      kk_shazptr_get_skip_synchronize_self_scan());
	return out->error;
}

static bool text_is(const char *buf, size_t len, const char *word)
{
	size_t n = strlen(word);

	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	return len == n && memcmp(buf, word, n) == 0;
}

/* The counters stats_show() prints: they move on their own. */
static const char *const stat_names[] = {
	"synchronize_calls", "scan_thread_waits", "longest_wait_ns", "scan_rounds",
	"slots", "slots_in_use",
};

/*
 * One "name value" line of the printed form: a counter (any number,
 * ignored) or the setting skip_synchronize_self_scan (0 or 1, into *skip).
 * 0, or -EINVAL with the reason in @out.
 */
static int stats_line(const char *l, size_t n, int *skip, struct kk_buf *out)
{
	const char *sp = memchr(l, ' ', n), *v;
	size_t kn, vn;

	if (!sp)
		goto bad;
	kn = (size_t)(sp - l);
	v = sp + 1;
	vn = n - kn - 1;
	if (kn == strlen("skip_synchronize_self_scan") &&
	    !memcmp(l, "skip_synchronize_self_scan", kn)) {
		if (vn != 1 || (v[0] != '0' && v[0] != '1'))
			goto bad;
		*skip = v[0] == '1';
		return 0;
	}
	for (size_t i = 0; i < sizeof(stat_names) / sizeof(stat_names[0]); i++) {
		if (kn != strlen(stat_names[i]) || memcmp(l, stat_names[i], kn))
			continue;
		if (!vn || strspn(v, "0123456789") < vn)
			goto bad;
		return 0;
	}
bad:
	kk_buf_printf(out, "shazptr/stats: '%.*s': write \"reset\" to zero the counters, "
		      "or the text read back\n", (int)(n > 64 ? 64 : n), l);
	return -EINVAL;
}

/*
 * "reset" (or "0") zeroes the counters.  The text the file printed is
 * taken back: the counters in it are ignored (they are not settings), and
 * skip_synchronize_self_scan is applied, as by its own file.  Every line is
 * checked before anything is applied.
 */
static int stats_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	int skip = -1;

	(void)priv;
	if (text_is(buf, len, "reset") || text_is(buf, len, "0")) {
		kk_shazptr_reset_stats();
		return 0;
	}
	while (len) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (n && stats_line(buf, n, &skip, out))
			return -EINVAL;
		buf += n + (nl ? 1 : 0);
		len -= n + (nl ? 1 : 0);
	}
	if (skip >= 0)
		kk_shazptr_set_skip_synchronize_self_scan(skip);
	return 0;
}

static int skip_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	kk_buf_printf(out, "%d\n", kk_shazptr_get_skip_synchronize_self_scan());
	return out->error;
}

static int skip_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	if (text_is(buf, len, "1") || text_is(buf, len, "Y") || text_is(buf, len, "y"))
		kk_shazptr_set_skip_synchronize_self_scan(true);
	else if (text_is(buf, len, "0") || text_is(buf, len, "N") || text_is(buf, len, "n"))
		kk_shazptr_set_skip_synchronize_self_scan(false);
	else {
		kk_buf_printf(out, "shazptr/skip_synchronize_self_scan: write 0 or 1\n");
		return -EINVAL;
	}
	return 0;
}

static const struct kk_control_file_ops stats_ops = {
	.show = stats_show, .write = stats_write, .max_write = 1024,
};
static const struct kk_control_file_ops skip_ops = {
	.show = skip_show, .write = skip_write, .max_write = 64,
};
KK_CONTROL_LIB_FILE(stats_file, "shazptr/stats", &stats_ops);
KK_CONTROL_LIB_FILE(skip_file, "shazptr/skip_synchronize_self_scan", &skip_ops);

KK_INIT(310) static void shazptr_ctor(void)
{
	static const struct kk_fork_ops fork_ops = {
		KK_INIT_SHAZPTR, shazptr_atfork_prepare, shazptr_atfork_parent, shazptr_atfork_child
	};

	kk_fork_register(&fork_ops);
	kk_service_register(&scan_service);
	if (kk_env_any() && kk_env_bool("KK_SHAZPTR_SKIP_SELF_SCAN", false))
		kk_shazptr_set_skip_synchronize_self_scan(true);
	kk_control_add_lib_file(&stats_file);
	kk_control_add_lib_file(&skip_file);
}
