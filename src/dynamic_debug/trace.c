// SPDX-License-Identifier: MIT
/*
 * The trace ring: where sites with the T flag send their messages.  The
 * kernel's trace_printk() model (bprintk: vbin_printf() at the call,
 * bstr_printf() when the trace is read): a call records its site, its format
 * and its arguments in binary, packed by the format's conversions, and the
 * text is made only when someone reads dynamic_debug/trace (or a panic
 * dumps it).
 *
 * One ring per thread, so a writer shares nothing: no lock, no atomic
 * read-modify-write, no allocation after the thread's first event.  A ring
 * is a struct (never freed: writers walk the list of rings without a lock)
 * and a buffer (mmap'ed, so that a first event in a signal handler is safe;
 * unmapped only by the control side, under trace_lock, when no thread owns
 * the ring).
 *
 * Positions are byte counts that only grow; the byte of position p is
 * buf[p & (size - 1)].  The writer owns three positions:
 *   tail      the oldest record still whole,
 *   reserved  the end of the bytes being (or last) written,
 *   head      the end of the committed records.
 * Before it writes a byte it moves tail past the records it is about to
 * overwrite and publishes reserved (release), then writes, then publishes
 * head (release).  A reader copies [start, head) out of the buffer, then
 * reads reserved and tail: the bytes below reserved - size may have been
 * overwritten while it copied (the seqlock rule), and tail (>= that, and a
 * record boundary) is where the good records begin.  So a reader never stops
 * a writer and a writer never waits for a reader; the reader loses what was
 * overwritten under it.
 *
 * A record that would not fit before the end of the buffer is preceded by a
 * padding record to the end, so a record is contiguous.  Room for the
 * largest record (TR_REC_MAX) is reserved before the arguments are packed;
 * the record is as long as what was packed.
 *
 * Counting: each record carries its number in its ring (the low 32 bits of
 * the ring's count of records written).  A read counts what it copied by
 * those numbers: the first record copied tells how many were overwritten
 * before it, the last how many were written, so in-buffer + overwritten ==
 * written in every read, also while the owner writes (counters loaded beside
 * the copy cannot be: the owner moves on between the loads).  A clear and a
 * consuming read remember the number where they stopped.
 *
 * Signals: a handler that interrupts a writer of its own thread finds the
 * thread's nesting mark set and drops its event (counted: "nested"), so the
 * interrupted record is never torn.  A handler that runs while its thread
 * is not writing records normally.
 *
 * Threads: a ring belongs to the thread whose tid it holds.  A thread that
 * has exited leaves its ring (and its last records, for the flight
 * recorder) until a new thread claims it: a ring is free when its tid is 0
 * or names no thread of this process (tgkill(pid, tid, 0) fails with
 * ESRCH), or names the claiming thread itself, which has no ring (the tid
 * was reused).  Memory: TR_TOTAL_CAP bytes of buffers at most; a thread
 * that would need more records nothing (counted: "no buffer").
 *
 * fork: the child's thread keeps its ring (with its tid updated); the
 * others' rings hold threads that do not exist in the child, so they are
 * free, and are cleared.  No lock is held across fork (trace_lock is taken
 * in prepare and released in both).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/internal.h"
#include "dynamic_debug/trace_int.h"

#define TR_STR_MAX	256		/* bytes of one %s kept */
#define TR_REC_MAX	1024u		/* one record, header included */
#define TR_MIN_KB	4u
#define TR_MAX_KB	(16u * 1024)	/* one thread's ring */
/*
 * 1 MiB a thread: ftrace's default is 1.4 MB a CPU.  A busy thread's ring
 * must hold what it writes between two reads of a streaming reader: at
 * Valkey's 100k records/s (about 60 bytes each), 64 KiB held 10 ms, 1 MiB
 * holds about 170 ms.  The buffer is mapped at the thread's first event and
 * its pages become resident as the ring fills; TR_TOTAL_CAP bounds the sum.
 */
#define TR_DEFAULT_KB	1024u
#define TR_TOTAL_CAP	((size_t)256 << 20)	/* all rings' buffers together */
/*
 * A trace_pipe read with nothing to show waits this long for a record, the
 * way the kernel's trace_pipe blocks: the endpoint serves one request at a
 * time, so the wait is bounded, and a reader that wants a stream reads again
 * (kkctl -f read).  TR_PIPE_SLICE bounds the wake-up that a writer can miss
 * (see tr_kick()).
 */
#define TR_PIPE_WAIT_MS	250u
#define TR_PIPE_SLICE_MS 20u

#define TR_TLS	__thread __attribute__((tls_model("initial-exec")))

_Static_assert(sizeof(struct trec) == 40, "record header");

/* Formats compiled into packing programs, cached per ring by address. */
#define SIG_OPS		24
#define SIG_CACHE	64

struct ring {
	struct ring *next;		/* all rings; pushed at the head, never unlinked */
	_Atomic int tid;		/* the owner; 0 free, -1 being unmapped */
	_Atomic(unsigned char *) buf;	/* NULL until a buffer is given */
	uint64_t size;			/* a power of two; set before buf is published */
	unsigned int gen;		/* tr_gen when the buffer was given */
	_Atomic uint64_t tail, reserved, head;
	/* records written to this buffer, by the owner only (relaxed), read by readers */
	_Atomic uint64_t written;
	/*
	 * Readers, under trace_lock: cleared up to position clear_pos, which
	 * is the start of record number clear_seq; consumed by trace_pipe up
	 * to pipe_pos, record pipe_seq.
	 */
	uint64_t clear_pos, pipe_pos, clear_seq, pipe_seq;
	/* the panic dump's cursor (threads stopped, no lock) */
	uint64_t dump_pos, dump_end;
	/* the owner's compiled formats (see compile()); valid while fmt_gen is tr_fmt_gen */
	unsigned int fmt_gen;
	struct sig {
		const char *fmt;
		uint16_t most;		/* bytes the program packs at most (see prog_info()) */
		uint8_t nconv;		/* its conversions */
		uint8_t ops[SIG_OPS];
	} sigs[SIG_CACHE];
};

static _Atomic(struct ring *) rings;
static atomic_uint tr_fmt_gen;		/* bumped when an object with sites is unloaded */
static atomic_uint tr_gen;
static _Atomic size_t tr_size = (size_t)TR_DEFAULT_KB << 10;
static _Atomic size_t tr_total;		/* bytes of buffers mapped */
static atomic_ulong tr_nested, tr_nobuf;
static pthread_mutex_t trace_lock = PTHREAD_MUTEX_INITIALIZER;
/* A trace_pipe reader is waiting (tr_armed) on tr_wake: see tr_kick(). */
static atomic_int tr_armed;
static int tr_wake;

static TR_TLS struct ring *my_ring;
static TR_TLS int my_nest;
static TR_TLS pid_t my_tid;

static pid_t tr_gettid(void)
{
	if (!my_tid)
		my_tid = (pid_t)syscall(SYS_gettid);
	return my_tid;
}

static bool thread_alive(pid_t tid)
{
	int e = errno;
	long r = syscall(SYS_tgkill, (long)getpid(), (long)tid, 0L);
	bool alive = r == 0 || errno != ESRCH;

	errno = e;
	return alive;
}

/* ---- time ------------------------------------------------------------------------------ */

/*
 * Time stamps.  clock_gettime() costs 20-30 ns here, most of an event, so
 * records take the CPU's counter where it runs at a constant rate and is
 * shared by all CPUs (x86-64 with an invariant TSC, aarch64's virtual
 * counter), and readers convert.  Elsewhere the records hold
 * CLOCK_MONOTONIC ns.
 *
 * The conversion is a line through knots, (counter, CLOCK_MONOTONIC ns)
 * pairs: the anchor, taken before the first record, and one taken by each
 * read that has a record newer than the last knot.  A knot is taken after
 * the read's copy, so every record a read converts lies between two knots,
 * and a later read only adds knots after it: a record's time, once given,
 * is the time every later read gives it (a reply's complete, taken from a
 * ring's order, holds against the next reply's records).  A knot is the
 * counter read between two clock reads, the narrowest of a few tries: a
 * preemption between the two reads would skew every time near the knot.
 * Of the knots after the anchor, the last TR_KNOTS - 2 are kept: only a
 * record older than all of them can then get another time, by a knot's
 * error (ns).
 */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)
static inline uint64_t read_counter(void)
{
	return __rdtsc();
}

static bool counter_usable(void)
{
	unsigned int a, b, c, d;

	/* CPUID 0x80000007 EDX bit 8: the TSC is invariant */
	return __get_cpuid(0x80000007, &a, &b, &c, &d) && (d >> 8 & 1);
}
#elif defined(__aarch64__)
static inline uint64_t read_counter(void)
{
	uint64_t v;

	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}

static bool counter_usable(void)
{
	return true;
}
#else
static inline uint64_t read_counter(void)
{
	return mono_ns();
}

static bool counter_usable(void)
{
	return false;
}
#endif

enum { TR_CLOCK_UNKNOWN, TR_CLOCK_COUNTER, TR_CLOCK_MONO };
static atomic_int tr_clock;

#define TR_KNOT_TRIES	8
#define TR_KNOT_NARROW_NS 2000u	/* a bracket this narrow is not tried again */

/* A knot: the counter between two CLOCK_MONOTONIC reads, the narrowest of a few (async-signal-safe). */
static struct tr_knot knot_take(void)
{
	struct tr_knot k = { 0, 0 };
	uint64_t best = UINT64_MAX;

	for (int i = 0; i < TR_KNOT_TRIES && best > TR_KNOT_NARROW_NS; i++) {
		uint64_t n1 = mono_ns(), c = read_counter(), n2 = mono_ns();

		if (n2 - n1 < best) {
			best = n2 - n1;
			k = (struct tr_knot){ c, n1 + (n2 - n1) / 2 };
		}
	}
	return k;
}

/*
 * The anchor: the first knot, taken before the first record.  Threads that
 * come at once each take a slot of their own and the first to publish its
 * slot wins, so nobody waits for another (a thread stopped in the middle,
 * or a handler on top of it, holds up no one) and no anchor is half one
 * thread's and half another's.
 */
#define TR_ANCHOR_SLOTS	4
static struct tr_knot tr_anchor_slot[TR_ANCHOR_SLOTS];
static atomic_int tr_anchor_claims, tr_anchor_at = -1;

static void anchor_publish(void)
{
	int slot, none = -1;

	if (atomic_load_explicit(&tr_anchor_at, memory_order_acquire) >= 0)
		return;
	slot = atomic_fetch_add(&tr_anchor_claims, 1);
	if (slot >= TR_ANCHOR_SLOTS)
		return;	/* (the slots' holders publish) */
	tr_anchor_slot[slot] = knot_take();
	atomic_compare_exchange_strong_explicit(&tr_anchor_at, &none, slot, memory_order_release,
						memory_order_relaxed);
}

/* Once, from the first ring attach or the first read (async-signal-safe). */
static void clock_setup(void)
{
	int was = TR_CLOCK_UNKNOWN;

	atomic_compare_exchange_strong(&tr_clock, &was,
				       counter_usable() ? TR_CLOCK_COUNTER : TR_CLOCK_MONO);
	if (atomic_load(&tr_clock) == TR_CLOCK_COUNTER)
		anchor_publish();
}

/* The clock is chosen (a ring's attach, a read's stamp: async-signal-safe). */
static inline void clock_ready(void)
{
	if (!atomic_load_explicit(&tr_clock, memory_order_acquire))
		clock_setup();
}

static inline uint64_t now_stamp(void)
{
	return atomic_load_explicit(&tr_clock, memory_order_relaxed) == TR_CLOCK_COUNTER ?
		       read_counter() : mono_ns();
}

static int64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The knots after the anchor, under trace_lock; tr_read_newest: the newest record a read copied. */
static struct tr_knot tr_knots[TR_KNOTS - 2];
static size_t tr_nknots;
static uint64_t tr_read_newest;

/*
 * Add @k after the last knot of @cv->knots (the anchor, then tr_knots).
 * When full, the oldest after the anchor goes: the records between the
 * anchor and the next knot are the oldest, read long ago.
 */
static void knot_add_locked(struct tr_conv *cv, struct tr_knot k)
{
	if (cv->nknots == TR_KNOTS - 1) {
		memmove(&cv->knots[1], &cv->knots[2], (cv->nknots - 2) * sizeof(k));
		cv->nknots--;
	}
	cv->knots[cv->nknots++] = k;
	tr_nknots = cv->nknots - 1;
	memcpy(tr_knots, &cv->knots[1], tr_nknots * sizeof(k));
}

/*
 * The conversion of a read: stamps to CLOCK_MONOTONIC ns, and the offset of
 * CLOCK_REALTIME measured now (a clock step between a record and its read
 * shifts the record's wall-clock time by the step).  After the read's copy:
 * the knots, and one of now, kept when a record is newer than the last
 * (else it converts only the read's own stamps).  @lock false (the panic
 * dump): the knots are taken only if trace_lock is free.
 */
static void conv_setup(struct tr_conv *cv, bool lock)
{
	uint64_t width = UINT64_MAX;
	bool locked;
	struct tr_knot k;
	int at;

	/* The narrowest of a few brackets: a thread preempted between two
	 * reads would put a read's records up to the preemption late or early
	 * against another process's (kkctl record merges them by this time). */
	for (int i = 0; i < 4 && width > 2000; i++) {
		uint64_t n1 = mono_ns();
		int64_t real = clock_ns(CLOCK_REALTIME);
		uint64_t n2 = mono_ns();

		if (n2 - n1 < width) {
			width = n2 - n1;
			cv->real_off = real - (int64_t)(n1 + (n2 - n1) / 2);
		}
	}
	cv->realtime = kk_dd_tr_clock_realtime();
	cv->counter = atomic_load(&tr_clock) == TR_CLOCK_COUNTER;
	cv->nknots = 0;
	if (!cv->counter)
		return;
	anchor_publish();	/* (the anchor's thread may be stopped before it published) */
	at = atomic_load_explicit(&tr_anchor_at, memory_order_acquire);
	if (at >= 0)
		cv->knots[cv->nknots++] = tr_anchor_slot[at];
	locked = lock ? !pthread_mutex_lock(&trace_lock) : !pthread_mutex_trylock(&trace_lock);
	if (locked && cv->nknots) {
		memcpy(&cv->knots[1], tr_knots, tr_nknots * sizeof(tr_knots[0]));
		cv->nknots += tr_nknots;
	}
	k = knot_take();
	/* (the counter and the clock only go on; a knot that does not is not used) */
	if (!cv->nknots) {
		cv->knots[cv->nknots++] = k;
	} else if (k.ctr > cv->knots[cv->nknots - 1].ctr && k.ns > cv->knots[cv->nknots - 1].ns) {
		if (locked && tr_read_newest > cv->knots[cv->nknots - 1].ctr)
			knot_add_locked(cv, k);
		else
			cv->knots[cv->nknots++] = k;
	}
	if (locked)
		pthread_mutex_unlock(&trace_lock);
}

void kk_dd_tr_conv_setup(struct tr_conv *cv)
{
	conv_setup(cv, true);
}

/* ns of @a + (stamp - ctr of @a) at the rate from @a to @b (@stamp may be before @a). */
static uint64_t knot_line(const struct tr_knot *a, const struct tr_knot *b, uint64_t stamp)
{
	unsigned __int128 dn = b->ns - a->ns, dc = b->ctr - a->ctr;

	if (stamp >= a->ctr)
		return a->ns + (uint64_t)((unsigned __int128)(stamp - a->ctr) * dn / dc);
	return a->ns - (uint64_t)((unsigned __int128)(a->ctr - stamp) * dn / dc);
}

uint64_t kk_dd_tr_conv_ns(const struct tr_conv *cv, uint64_t stamp)
{
	size_t lo = 0, hi;

	if (!cv->counter)	/* (a counter's conversion has a knot at least: conv_setup()) */
		return stamp;
	if (cv->nknots == 1)	/* (no rate known: a knot of now was refused) */
		return cv->knots[0].ns;
	/* the knots around @stamp: the last with ctr <= stamp, and the next */
	hi = cv->nknots - 1;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (cv->knots[mid].ctr <= stamp)
			lo = mid;
		else
			hi = mid;
	}
	return knot_line(&cv->knots[lo], &cv->knots[hi], stamp);
}

/* ---- the writer ------------------------------------------------------------------------ */

static struct ring *ring_new_struct(void)
{
	/* one page-sized mmap for the struct: malloc is not async-signal-safe */
	struct ring *r = mmap(NULL, sizeof(struct ring), PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (r == MAP_FAILED)
		return NULL;
	memset(r, 0, sizeof(*r));
	return r;
}

/* Give @r (owned by us, no buffer) a buffer of @size bytes. */
static bool ring_give_buf(struct ring *r, size_t size, unsigned int gen)
{
	size_t total = atomic_load_explicit(&tr_total, memory_order_relaxed);
	unsigned char *b;

	do {
		if (total + size > TR_TOTAL_CAP)
			return false;
	} while (!atomic_compare_exchange_weak(&tr_total, &total, total + size));
	b = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b == MAP_FAILED) {
		atomic_fetch_sub(&tr_total, size);
		return false;
	}
	r->size = size;
	r->gen = gen;
	atomic_store_explicit(&r->written, 0, memory_order_relaxed);
	atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
	atomic_store_explicit(&r->reserved, 0, memory_order_relaxed);
	atomic_store_explicit(&r->head, 0, memory_order_relaxed);
	atomic_store_explicit(&r->buf, b, memory_order_release);
	return true;
}

/* The calling thread's ring, after its first event or a resize.  Not a hot path. */
static __attribute__((noinline)) struct ring *ring_attach(void)
{
	unsigned int gen = atomic_load_explicit(&tr_gen, memory_order_acquire);
	size_t size = atomic_load_explicit(&tr_size, memory_order_relaxed);
	pid_t me = tr_gettid();
	struct ring *r = my_ring, *fresh = NULL;

	clock_ready();
	if (r) {
		if (r->size == size) {
			r->gen = gen;	/* the resize did not change our size */
			return r;
		}
		/* leave it (its records stay readable) and take one of the new size */
		my_ring = NULL;
		atomic_store_explicit(&r->tid, 0, memory_order_release);
	}
	/* a free ring of our size, or without a buffer */
	for (r = atomic_load_explicit(&rings, memory_order_acquire); r; r = r->next) {
		int t = atomic_load_explicit(&r->tid, memory_order_acquire);
		unsigned char *b;

		if (t < 0 || (t > 0 && t != me && thread_alive(t)))
			continue;
		if (!atomic_compare_exchange_strong(&r->tid, &t, me))
			continue;
		b = atomic_load_explicit(&r->buf, memory_order_acquire);
		if (b && r->size == size) {
			r->gen = gen;
			return my_ring = r;
		}
		if (!b && ring_give_buf(r, size, gen))
			return my_ring = r;
		atomic_store_explicit(&r->tid, 0, memory_order_release);	/* not for us */
	}
	fresh = ring_new_struct();
	if (!fresh)
		return NULL;
	atomic_store_explicit(&fresh->tid, me, memory_order_relaxed);
	if (!ring_give_buf(fresh, size, gen)) {
		/* keep the struct: a later thread may give it a buffer */
		atomic_store_explicit(&fresh->tid, 0, memory_order_relaxed);
	}
	struct ring *h = atomic_load_explicit(&rings, memory_order_relaxed);

	do
		fresh->next = h;
	while (!atomic_compare_exchange_weak_explicit(&rings, &h, fresh, memory_order_release,
						      memory_order_relaxed));
	if (!atomic_load_explicit(&fresh->buf, memory_order_relaxed))
		return NULL;
	return my_ring = fresh;
}

/* ---- formats ---------------------------------------------------------------------------- */

/* (a conversion is parsed by kk_dd_tr_parse_conv(): printf_conv.c) */

/*
 * vbin_printf in two steps: compile() turns a format into a program of one
 * byte per thing to pack (a star argument, a conversion), and pack() runs
 * it over the arguments.  A ring keeps the programs of the formats its
 * thread used, so the format is parsed once, not at every event.
 */
enum {
	OP_END,
	OP_STAR,			/* int: a '*' width or precision */
	OP_STARP,			/* int: a '*' precision (it bounds a following %s) */
	OP_I4, OP_U4,			/* int, unsigned int (and smaller, and %c) */
	OP_L, OP_LL, OP_J, OP_Z, OP_T,	/* 8-byte integers by their type */
	OP_DBL, OP_LDBL, OP_PTR,
	OP_STR,				/* bounded by TR_STR_MAX */
	OP_STR_P,			/* bounded by the next byte pair (a literal precision) */
	OP_STR_SP,			/* bounded by the last OP_STARP */
	OP_N,				/* %n: the pointer is skipped */
	OP_ERRNO,			/* %m */
	OP_PCT,				/* %%: nothing */
	OP_STOP,			/* not recorded: packing stops (TR_INCOMPLETE) */
};

/* Compile @fmt into @ops (@cap bytes).  False when it needs more. */
static bool compile(const char *fmt, uint8_t *ops, size_t cap)
{
	const char *p = fmt;
	size_t n = 0;
	struct conv cv;

#define EMIT(o) do {								\
		if (n == cap)							\
			return false;						\
		ops[n++] = (uint8_t)(o);					\
	} while (0)
	for (;;) {
		while (*p && *p != '%')
			p++;
		if (!*p)
			break;
		p = kk_dd_tr_parse_conv(p, &cv);
		if (!cv.c) {
			EMIT(OP_STOP);
			break;
		}
		if (cv.width == -2)
			EMIT(OP_STAR);
		if (cv.prec == -2)
			EMIT(cv.c == 's' ? OP_STARP : OP_STAR);
		switch (cv.c) {
		case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
			switch (cv.lmod) {
			case LM_L: EMIT(OP_L); break;
			case LM_LL: EMIT(OP_LL); break;
			case LM_J: EMIT(OP_J); break;
			case LM_Z: EMIT(OP_Z); break;
			case LM_T: EMIT(OP_T); break;
			default: EMIT(cv.c == 'd' || cv.c == 'i' ? OP_I4 : OP_U4); break;
			}
			break;
		case 'c': EMIT(OP_I4); break;
		case 'p': EMIT(OP_PTR); break;
		case 'n': EMIT(OP_N); break;
		case 'm': EMIT(OP_ERRNO); break;
		case '%': EMIT(OP_PCT); break;
		case 's':
			if (cv.prec == -2) {
				EMIT(OP_STR_SP);
			} else if (cv.prec >= 0 && cv.prec < TR_STR_MAX) {
				EMIT(OP_STR_P);
				EMIT(cv.prec & 0xff);
				EMIT(cv.prec >> 8);
			} else {
				EMIT(OP_STR);
			}
			break;
		default:	/* floating point */
			EMIT(cv.lmod == LM_BIGL ? OP_LDBL : OP_DBL);
			break;
		}
	}
	EMIT(OP_END);
#undef EMIT
	return true;
}

/* A store; @checked: only where it fits the @room left (else packing stops). */
#define PUT(v) do {								\
		if (checked && room < sizeof(v))				\
			goto full;						\
		memcpy(w, &(v), sizeof(v));					\
		w += sizeof(v);							\
		room -= sizeof(v);						\
	} while (0)

/* Take the next argument as type T and store it as type S. */
#define PUT_ARG(T, S) do {							\
		S v_ = (S)va_arg(ap, T);					\
		PUT(v_);							\
	} while (0)

/* The most bytes of a string to copy: a literal precision, a '*' one, or TR_STR_MAX. */
static inline size_t str_max(const uint8_t *op, int starp)
{
	if (*op == OP_STR_P)
		return (size_t)op[1] | (size_t)op[2] << 8;
	if (*op == OP_STR_SP && starp >= 0 && starp < TR_STR_MAX)
		return (size_t)starp;
	return TR_STR_MAX;
}

/*
 * Store string @s as a 16-bit length and its bytes, at most @max of them
 * (fewer when the room is short); NULL as the length UINT16_MAX ("(null)",
 * as glibc prints it).  False when even that does not fit.  Inline: it is
 * part of pack(), on the path of every traced event.
 */
static inline __attribute__((always_inline)) bool put_str(unsigned char **w, size_t *room,
							   const char *s, size_t max, bool checked)
{
	uint16_t l = UINT16_MAX;

	if (!s) {
		if (checked && *room < sizeof(l))
			return false;
		memcpy(*w, &l, sizeof(l));
		*w += sizeof(l);
		*room -= sizeof(l);
		return true;
	}
	if (checked && *room < sizeof(l) + 1)
		return false;
	if (checked && max > *room - sizeof(l))
		max = *room - sizeof(l);
	/* strnlen: a precision may bound a string without a NUL */
	l = (uint16_t)strnlen(s, max);
	memcpy(*w, &l, sizeof(l));
	memcpy(*w + sizeof(l), s, l);
	*w += sizeof(l) + l;
	*room -= sizeof(l) + l;
	return true;
}

/*
 * Run @ops over @ap into @w (@room bytes).  Returns the bytes used;
 * *nconv the conversions packed, *flags TR_INCOMPLETE when packing stopped
 * before the end of the format.  8-byte integers are stored as long long
 * whatever their type, so format_msg() needs only their size.  %m stores
 * errno as it is now: nothing on the way here changes it (ring_attach()
 * and tr_kick() put it back).  @checked false: the caller knows that the
 * program packs at most @room bytes (prog_info()), so no store checks it;
 * the two variants are pack() and pack_unchecked().
 */
static inline __attribute__((always_inline)) size_t
pack_ops(const uint8_t *ops, unsigned char *w, size_t room, va_list ap, uint16_t *nconv,
	 uint16_t *flags, bool checked)
{
	unsigned char *w0 = w;
	unsigned int n = 0;
	int starp = -1;

	if (checked)
		*flags = 0;
	for (;; ops++) {
		switch (*ops) {
		case OP_END:
			if (checked)
				*nconv = (uint16_t)n;
			return (size_t)(w - w0);
		case OP_STAR:
			PUT_ARG(int, int);
			continue;	/* part of the next conversion */
		case OP_STARP:
			starp = va_arg(ap, int);
			PUT(starp);
			continue;
		case OP_I4: PUT_ARG(int, int); break;
		case OP_U4: PUT_ARG(unsigned int, unsigned int); break;
		case OP_L: PUT_ARG(long, long long); break;
		case OP_LL: PUT_ARG(long long, long long); break;
		case OP_J: PUT_ARG(intmax_t, long long); break;
		case OP_Z: PUT_ARG(size_t, long long); break;
		case OP_T: PUT_ARG(ptrdiff_t, long long); break;
		case OP_DBL: PUT_ARG(double, double); break;
		case OP_LDBL: PUT_ARG(long double, long double); break;
		case OP_PTR: PUT_ARG(void *, void *); break;
		case OP_STR: case OP_STR_P: case OP_STR_SP: {
			/* copied now: the caller may change or free it after the call */
			const char *s = va_arg(ap, const char *);
			size_t max = str_max(ops, starp);

			if (*ops == OP_STR_P)
				ops += 2;
			if (!put_str(&w, &room, s, max, checked))
				goto full;
			break;
		}
		case OP_N:
			(void)va_arg(ap, void *);	/* never written: the call is over */
			break;
		case OP_ERRNO: {
			int err = errno;

			PUT(err);
			break;
		}
		case OP_PCT:
			break;
		case OP_STOP:
			if (checked)
				goto full;
			__builtin_unreachable();	/* unchecked programs have none */
		default:	/* compile() emits nothing else */
			__builtin_unreachable();
		}
		if (checked) {	/* unchecked: the caller knows the count (prog_info()) */
			n++;
			starp = -1;
		}
	}
full:
	*nconv = (uint16_t)n;
	*flags = TR_INCOMPLETE;
	return (size_t)(w - w0);
}
#undef PUT_ARG
#undef PUT

static size_t pack(const uint8_t *ops, unsigned char *w, size_t room, va_list ap,
		   uint16_t *nconv, uint16_t *flags)
{
	return pack_ops(ops, w, room, ap, nconv, flags, true);
}

static size_t pack_unchecked(const uint8_t *ops, unsigned char *w, va_list ap)
{
	return pack_ops(ops, w, 0, ap, NULL, NULL, false);
}

/* Bytes each op packs at most (a string: its length and TR_STR_MAX bytes; %n, %%: none). */
static const uint16_t op_most[OP_STOP + 1] = {
	[OP_STAR] = sizeof(int), [OP_STARP] = sizeof(int),
	[OP_I4] = sizeof(int), [OP_U4] = sizeof(int),
	[OP_L] = sizeof(long long), [OP_LL] = sizeof(long long), [OP_J] = sizeof(long long),
	[OP_Z] = sizeof(long long), [OP_T] = sizeof(long long),
	[OP_DBL] = sizeof(double), [OP_LDBL] = sizeof(long double), [OP_PTR] = sizeof(void *),
	[OP_STR] = sizeof(uint16_t) + TR_STR_MAX, [OP_STR_P] = sizeof(uint16_t) + TR_STR_MAX,
	[OP_STR_SP] = sizeof(uint16_t) + TR_STR_MAX,
	[OP_ERRNO] = sizeof(int), [OP_N] = 0, [OP_PCT] = 0,
};

/*
 * What the event's packer need not find out: the most bytes @sg's program
 * packs (UINT16_MAX when it stops early, at OP_STOP: the checked packer
 * marks the record incomplete) and its count of conversions.  Decided once,
 * when the format is compiled, so that the event's packer checks no bounds
 * and counts nothing.
 */
static void prog_info(struct sig *sg)
{
	const uint8_t *ops = sg->ops;
	size_t most = 0;

	sg->nconv = 0;
	for (; *ops != OP_END; ops += *ops == OP_STR_P ? 3 : 1) {
		if (*ops == OP_STOP) {
			sg->most = UINT16_MAX;
			return;
		}
		most += op_most[*ops];
		sg->nconv += *ops != OP_STAR && *ops != OP_STARP;
	}
	sg->most = most < UINT16_MAX ? (uint16_t)most : UINT16_MAX;
}

/*
 * The cached program of @fmt, or NULL.  The event's path: a load of the
 * generation, the slot, one comparison.
 */
static inline const struct sig *sig_cached(struct ring *r, const char *fmt)
{
	unsigned int gen = atomic_load_explicit(&tr_fmt_gen, memory_order_acquire);
	const struct sig *sg = &r->sigs[((uintptr_t)fmt >> 3) % SIG_CACHE];

	if (__builtin_expect(r->fmt_gen == gen && sg->fmt == fmt, 1))
		return sg;
	return NULL;
}

/*
 * A format not in @r's cache: compile it into its slot, and pack @ap into
 * @w (@room bytes) by it, checked.  A format too long for a slot is
 * compiled into @tmp each time, what fits, then a stop.  Out of line: the
 * first event of a format, and very long formats.
 */
static __attribute__((noinline)) size_t pack_uncached(struct ring *r, const char *fmt,
						      unsigned char *w, size_t room, va_list ap,
						      uint16_t *nconv, uint16_t *flags)
{
	unsigned int gen = atomic_load_explicit(&tr_fmt_gen, memory_order_acquire);
	struct sig *sg = &r->sigs[((uintptr_t)fmt >> 3) % SIG_CACHE];
	uint8_t tmp[256];

	if (r->fmt_gen != gen) {
		/* an object was unloaded: a cached address may be another format now */
		for (size_t i = 0; i < SIG_CACHE; i++)
			r->sigs[i].fmt = NULL;
		r->fmt_gen = gen;
	}
	if (compile(fmt, sg->ops, SIG_OPS)) {
		prog_info(sg);
		sg->fmt = fmt;
		return pack(sg->ops, w, room, ap, nconv, flags);
	}
	sg->fmt = NULL;
	if (!compile(fmt, tmp, sizeof(tmp))) {	/* a very long format: what fits, then stop */
		tmp[sizeof(tmp) - 2] = OP_STOP;
		tmp[sizeof(tmp) - 1] = OP_END;
	}
	return pack(tmp, w, room, ap, nconv, flags);
}

void kk_dd_trace_forget_formats(void)
{
	atomic_fetch_add_explicit(&tr_fmt_gen, 1, memory_order_release);
}

static inline struct trec *rec_at(unsigned char *buf, uint64_t mask, uint64_t pos)
{
	return (struct trec *)(void *)(buf + (pos & mask));
}

/*
 * Wake a waiting trace_pipe reader: the first writer after it armed does
 * (one futex wake per wait, not one per record).  There is no fence between
 * the writer's head store and its load of tr_armed, so a writer can miss a
 * reader that is arming at that moment; the reader then wakes at the end of
 * its slice (TR_PIPE_SLICE_MS).  The hot path pays a load and a branch.
 * futex is async-signal-safe: a handler's record may kick.
 */
static __attribute__((noinline)) void tr_kick(void)
{
	int err = errno;	/* the writer's caller sees errno as it left it */

	if (!atomic_exchange(&tr_armed, 0))
		return;
	__atomic_fetch_add(&tr_wake, 1, __ATOMIC_RELEASE);
	kk_futex_wake(&tr_wake, INT32_MAX);
	errno = err;
}

/*
 * Make room up to @end (a record of up to TR_REC_MAX bytes and the padding
 * before it): forget the records about to be overwritten (readers count
 * them by their numbers), publish the end of the reservation, and only
 * then write.
 */
static inline void reserve(struct ring *r, unsigned char *buf, uint64_t end)
{
	uint64_t size = r->size, mask = size - 1;
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	while (tail + size < end)
		tail += rec_at(buf, mask, tail)->len;
	atomic_store_explicit(&r->tail, tail, memory_order_relaxed);
	atomic_store_explicit(&r->reserved, end, memory_order_release);
	atomic_thread_fence(memory_order_release);	/* reserved before the bytes */
}

/* The smallest ring holds a whole largest record at a quarter of it. */
_Static_assert(TR_MIN_KB * 1024 / 4 >= TR_REC_MAX, "a record in a quarter of the smallest ring");

/*
 * One record.  The reservation is TR_REC_MAX bytes, decided before the
 * format is looked at; a cached program that packs at most what is left
 * after the header (sig.most) packs without a bounds check per store.
 */
static inline void write_rec(struct ring *r, const struct _ddebug *d, const char *fmt, va_list ap)
{
	unsigned char *buf = atomic_load_explicit(&r->buf, memory_order_relaxed);
	uint64_t size = r->size, mask = size - 1;
	uint64_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
	uint64_t pad = size - (pos & mask) < TR_REC_MAX ? size - (pos & mask) : 0;
	uint64_t seq = atomic_load_explicit(&r->written, memory_order_relaxed);
	const struct sig *sg = sig_cached(r, fmt);
	unsigned char *data;
	struct trec *h;
	size_t dlen, len;

	reserve(r, buf, pos + pad + TR_REC_MAX);
	if (__builtin_expect(pad != 0, 0)) {
		h = rec_at(buf, mask, pos);
		h->len = (uint32_t)pad;
		h->flags = TR_PAD;
		pos += pad;
	}
	h = rec_at(buf, mask, pos);
	h->ts = now_stamp();
	h->tid = tr_gettid();
	h->desc = d;
	h->fmt = fmt;
	h->seq = (uint32_t)seq;
	data = (unsigned char *)(h + 1);
	if (__builtin_expect(sg && sg->most <= TR_REC_MAX - TR_HDR, 1)) {
		h->nconv = sg->nconv;
		h->flags = 0;
		dlen = pack_unchecked(sg->ops, data, ap);
	} else {
		dlen = pack_uncached(r, fmt, data, TR_REC_MAX - TR_HDR, ap, &h->nconv, &h->flags);
	}
	len = (TR_HDR + dlen + 7) & ~(size_t)7;
	h->len = (uint32_t)len;
	atomic_store_explicit(&r->written, seq + 1, memory_order_relaxed);
	atomic_store_explicit(&r->head, pos + len, memory_order_release);
	if (__builtin_expect(atomic_load_explicit(&tr_armed, memory_order_relaxed), 0))
		tr_kick();
}

/* ring_attach() for the writer: errno as it was (%m is packed after it). */
static __attribute__((noinline)) struct ring *ring_attach_keep_errno(void)
{
	int err = errno;
	struct ring *r = ring_attach();

	errno = err;
	return r;
}

/*
 * The writer's guard.  errno is not saved and restored around the fast
 * path: nothing on it can change errno (the slow paths put it back).
 */
void kk_dd_trace_record(const struct _ddebug *d, const char *fmt, va_list ap)
{
	struct ring *r;

	if (my_nest) {
		/* a signal handler interrupted this thread's writer: drop, never tear */
		atomic_fetch_add_explicit(&tr_nested, 1, memory_order_relaxed);
		return;
	}
	my_nest = 1;
	atomic_signal_fence(memory_order_seq_cst);
	r = my_ring;
	if (__builtin_expect(!r || r->gen != atomic_load_explicit(&tr_gen, memory_order_relaxed), 0))
		r = ring_attach_keep_errno();
	if (__builtin_expect(r != NULL, 1))
		write_rec(r, d, fmt, ap);
	else
		atomic_fetch_add_explicit(&tr_nobuf, 1, memory_order_relaxed);
	atomic_signal_fence(memory_order_seq_cst);
	my_nest = 0;
}

/* ---- formatting (bstr_printf) ------------------------------------------------------- */

size_t kk_dd_tr_snprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n < 0 ? 0 : (size_t)n;
}

static void out_str(struct out *o, const char *s)
{
	tr_out_mem(o, s, strlen(s));
}

/* One conversion through @snp into @o. */
#define OUT_SNP(...) do {							\
		size_t room_ = o->len < o->cap ? o->cap - o->len : 0;		\
		size_t n_ = snp(room_ ? o->buf + o->len : NULL, room_, __VA_ARGS__); \
		o->len += n_ < room_ ? n_ : (room_ ? room_ - 1 : 0);		\
	} while (0)

/* Take the next value of @c into v; the caller returns false when the data ends short. */
#define GET(v) do {								\
		if (!tr_take(c, &(v), sizeof(v)))					\
			return false;						\
	} while (0)

/* The '*' width and precision from the data; as printf, a negative width is '-'. */
static bool take_stars(struct conv *cv, struct cursor *c, int *width, int *prec)
{
	*width = cv->width;
	*prec = cv->prec;
	if (*width == -2) {
		GET(*width);
		if (*width < 0) {
			*width = -*width;
			if (strlen(cv->flags) < sizeof(cv->flags) - 1)
				strcat(cv->flags, "-");
		}
	}
	if (*prec == -2)
		GET(*prec);
	return true;
}

/* The modifier of an integer as packed: 4 bytes for int and below, else long long. */
static const char *packed_lmod(int lmod)
{
	switch (lmod) {
	case LM_HH: return "hh";
	case LM_H: return "h";
	case LM_BIGL: return "L";
	case LM_NONE: return "";
	default: return tr_int_size(lmod) == 8 ? "ll" : "";
	}
}

/*
 * The conversion @cv as a literal format for @snp: its flags, the width and
 * precision taken from the data, and the modifier of the value as packed.
 * %s takes its packed length as a '*' precision; %m prints the message as %s.
 */
static void build_spec(char *spec, const struct conv *cv, int width, int prec,
		       kk_dd_snprintf_fn snp)
{
	char *s = spec;

	*s++ = '%';
	s += strlen(strcpy(s, cv->flags));
	if (width >= 0)
		s += snp(s, 12, "%d", width);
	if (prec >= 0 && cv->c != 's')
		s += snp(s, 13, ".%d", prec);
	if (cv->c == 's') {
		strcpy(s, ".*s");
		return;
	}
	if (cv->c == 'm') {
		strcpy(s, "s");
		return;
	}
	if (strchr("fFeEgGaA", cv->c)) {
		if (cv->lmod == LM_BIGL)
			*s++ = 'L';
	} else if (cv->c != 'c' && cv->c != 'p') {
		s += strlen(strcpy(s, packed_lmod(cv->lmod)));
	}
	*s++ = cv->c;
	*s = '\0';
}

static bool out_str_arg(struct out *o, const char *spec, int prec, struct cursor *c,
			kk_dd_snprintf_fn snp)
{
	uint16_t l;

	GET(l);
	if (l == UINT16_MAX) {	/* glibc: "(null)", or nothing if cut */
		OUT_SNP(spec, prec >= 0 && prec < 6 ? 0 : 6, "(null)");
		return true;
	}
	if (c->left < l)
		return false;
	OUT_SNP(spec, (int)l, (const char *)c->d);
	c->d += l;
	c->left -= l;
	return true;
}

const char *kk_dd_tr_errno_text(int e, char *num, size_t n)
{
	const char *msg = strerrordesc_np(e);

	if (msg)
		return msg;
	/* an async-signal-safe "errno %d": the panic dump calls this too */
	char tmp[12], *t = tmp + sizeof(tmp);
	unsigned int u = e < 0 ? 0u - (unsigned int)e : (unsigned int)e;
	size_t k;

	*--t = '\0';
	do
		*--t = (char)('0' + u % 10);
	while (u /= 10);
	if (e < 0)
		*--t = '-';
	k = (size_t)(tmp + sizeof(tmp) - t);
	if (n < 7 + k)
		return "errno ?";
	memcpy(num, "errno ", 6);
	memcpy(num + 6, t, k);
	return num;
}

/* %m: the message of the errno packed at the call (strerror's text, no locale). */
static bool out_errno(struct out *o, const char *spec, struct cursor *c, kk_dd_snprintf_fn snp)
{
	char num[24];
	int e;

	GET(e);
	OUT_SNP(spec, kk_dd_tr_errno_text(e, num, sizeof(num)));
	return true;
}

/* One value of the type pack() stored it as, formatted by @spec. */
#define OUT_VALUE(type) do {							\
		type v_;							\
									\
		GET(v_);							\
		OUT_SNP(spec, v_);						\
	} while (0)

/* The value of conversion @cv (not %% or %n) from @c into @o.  False when the data ends short. */
static bool out_conv(struct out *o, const char *spec, const struct conv *cv, int prec,
		     struct cursor *c, kk_dd_snprintf_fn snp)
{
	switch (cv->c) {
	case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
		if (tr_int_size(cv->lmod) == 4)
			OUT_VALUE(int);
		else
			OUT_VALUE(long long);
		return true;
	case 'c':
		OUT_VALUE(int);
		return true;
	case 'p':
		OUT_VALUE(void *);
		return true;
	case 's':
		return out_str_arg(o, spec, prec, c, snp);
	case 'm':
		return out_errno(o, spec, c, snp);
	default:	/* floating point */
		if (cv->lmod == LM_BIGL)
			OUT_VALUE(long double);
		else
			OUT_VALUE(double);
		return true;
	}
}
#undef OUT_VALUE

/* An integer conversion's value as printf takes it (hh and h narrow it); *@neg if negative. */
static bool take_int(const struct conv *cv, struct cursor *c, unsigned long long *u, bool *neg)
{
	bool sign = cv->c == 'd' || cv->c == 'i';
	long long ll;
	int v;

	*neg = false;
	if (tr_int_size(cv->lmod) == 8) {
		GET(ll);
	} else {
		GET(v);
		if (cv->lmod == LM_HH)
			ll = sign ? (signed char)v : (unsigned char)v;
		else if (cv->lmod == LM_H)
			ll = sign ? (short)v : (unsigned short)v;
		else
			ll = sign ? v : (long long)(unsigned int)v;
	}
	if (sign && ll < 0) {
		*neg = true;
		*u = 0ull - (unsigned long long)ll;
	} else {
		*u = (unsigned long long)ll;
	}
	return true;
}

bool kk_dd_tr_int_value(const struct conv *cv, struct cursor *c, unsigned long long *u, bool *neg)
{
	return take_int(cv, c, u, neg);
}

/* A %s without width or flags: its packed bytes.  -1: NULL, which snprintf() prints. */
static int fast_str(struct out *o, struct cursor *c)
{
	uint16_t l;

	if (c->left < sizeof(l))
		return 0;
	memcpy(&l, c->d, sizeof(l));
	if (l == UINT16_MAX)
		return -1;
	if (c->left - sizeof(l) < l)
		return 0;
	tr_out_mem(o, (const char *)c->d + sizeof(l), l);
	c->d += sizeof(l) + l;
	c->left -= sizeof(l) + l;
	return 1;
}

/*
 * The conversions printf prints plainly (no flag, no width; no precision
 * but %s's, which packing applied), without @snp: one snprintf() costs
 * about 700 instructions, most of a record's text.  1 done, 0 the data
 * ends short, -1 not one of these (nothing taken).  Async-signal-safe.
 */
static int out_fast(struct out *o, const struct conv *cv, int width, int prec, struct cursor *c)
{
	char num[24], *end = num + sizeof(num), *d;
	unsigned long long u;
	bool neg;
	void *ptr;
	int v;

	if (cv->flags[0] || width >= 0)
		return -1;
	switch (cv->c) {
	case 's':
		return fast_str(o, c);
	case 'c':
		GET(v);
		num[0] = (char)(unsigned char)v;
		tr_out_mem(o, num, 1);
		return 1;
	case 'p':
		GET(ptr);
		if (!ptr) {
			tr_out_mem(o, "(nil)", 5);
			return 1;
		}
		d = kk_utoa(end, (uintptr_t)ptr, 'x');
		*--d = 'x';
		*--d = '0';
		break;
	case 'd': case 'i': case 'o': case 'u': case 'x': case 'X':
		if (prec >= 0)
			return -1;
		if (!take_int(cv, c, &u, &neg))
			return 0;
		d = kk_utoa(end, u, cv->c);
		if (neg)
			*--d = '-';
		break;
	default:	/* %m, floating point: snprintf()'s */
		return -1;
	}
	tr_out_mem(o, d, (size_t)(end - d));
	return 1;
}

/*
 * Conversion @cv (its copy: a '*' width may change its flags) of a record
 * into @o, its value taken from @c.  False when the data ends short.
 */
bool kk_dd_tr_out_conv(struct out *o, struct conv *cv, struct cursor *c, kk_dd_snprintf_fn snp)
{
	int width, prec, fast;
	char spec[40];

	if (!take_stars(cv, c, &width, &prec))
		return false;
	if (cv->c == '%') {
		tr_out_mem(o, "%", 1);
		return true;
	}
	if (cv->c == 'n')
		return true;
	fast = out_fast(o, cv, width, prec, c);
	if (fast >= 0)
		return fast;
	build_spec(spec, cv, width, prec, snp);
	return out_conv(o, spec, cv, prec, c, snp);
}

/*
 * The message of record @h (its packed data follows it) into @o.  @snp
 * formats what out_fast() does not, one conversion at a time, with its
 * flags, width and precision made literal.  False when the data does not
 * fit the format.
 */
bool kk_dd_tr_format_msg(const struct trec *h, struct out *o, kk_dd_snprintf_fn snp)
{
	struct cursor c = { (const unsigned char *)(h + 1), h->len - TR_HDR };
	const char *p = h->fmt, *q;
	unsigned int n = 0;

	for (;;) {
		struct conv cv;

		for (q = p; *q && *q != '%'; q++)
			;
		tr_out_mem(o, p, (size_t)(q - p));
		if (!*q)
			return true;
		if (n == h->nconv) {
			out_str(o, q);	/* not recorded: the rest as written */
			return true;
		}
		p = kk_dd_tr_parse_conv(q, &cv);
		n++;
		if (!kk_dd_tr_out_conv(o, &cv, &c, snp))
			return false;
	}
}
#undef GET

/* "TID [SEC.NSEC] mod:func:file:line: message\n", decorated as the site's flags say now. */
static size_t format_line(const struct trec *h, const struct tr_conv *tc, char *buf, size_t cap,
			  kk_dd_snprintf_fn snp)
{
	uint64_t ns = kk_dd_tr_conv_ns(tc, h->ts) + (uint64_t)(tc->realtime ? tc->real_off : 0);
	struct out ob = { buf, cap, 0 }, *o = &ob;
	const struct _ddebug *dp = h->desc;
	unsigned int f = __atomic_load_n(&dp->flags, __ATOMIC_RELAXED);
	size_t before;

	OUT_SNP("%6d [%5" PRIu64 ".%09" PRIu64 "] ", (int)h->tid, ns / 1000000000u,
		ns % 1000000000u);
	before = o->len;
	if (f & _DPRINTK_FLAGS_INCL_MODNAME)
		OUT_SNP("%s:", dp->modname ? dp->modname : "?");
	if (f & _DPRINTK_FLAGS_INCL_FUNCNAME)
		OUT_SNP("%s:", dp->function);
	if (f & _DPRINTK_FLAGS_INCL_SOURCENAME)
		OUT_SNP("%s:", kk_dd_rel_name(dp->filename));
	if (f & _DPRINTK_FLAGS_INCL_LINENO)
		OUT_SNP("%u:", (unsigned int)dp->lineno);
	if (o->len != before)
		tr_out_mem(o, " ", 1);
	if (!kk_dd_tr_format_msg(h, o, snp))
		out_str(o, " <bad record>");
	if (o->len > cap - 1)
		o->len = cap - 1;	/* the line is cut; it still ends in '\n' */
	if (!o->len || buf[o->len - 1] != '\n')
		buf[o->len++] = '\n';
	return o->len;
}

/* ---- readers ----------------------------------------------------------------------------- */

/* A sane record of at most @room bytes (a padding record is 8 bytes or more). */
static bool rec_ok(const struct trec *h, uint64_t room)
{
	if (h->len % 8 || h->len > room)
		return false;
	return (h->flags & TR_PAD) ? h->len >= 8 : h->len >= TR_HDR;
}

void kk_dd_tr_snap_free(struct snap *s)
{
	for (size_t i = 0; i < s->nrings; i++)
		free(s->copies[i]);
	free(s->copies);
	free(s->rings);
	free(s->v);
}

/* Unmap the buffers of free rings whose size is not the current one.  Under trace_lock. */
static void sweep_locked(void)
{
	size_t size = atomic_load(&tr_size);

	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		int t = atomic_load(&r->tid);
		unsigned char *b = atomic_load(&r->buf);

		if (!b || r->size == size || t < 0 || (t > 0 && thread_alive(t)))
			continue;
		if (!atomic_compare_exchange_strong(&r->tid, &t, -1))
			continue;
		atomic_store(&r->buf, NULL);
		munmap(b, r->size);
		atomic_fetch_sub(&tr_total, r->size);
		r->clear_pos = r->pipe_pos = r->clear_seq = r->pipe_seq = 0;
		atomic_store(&r->tid, 0);
	}
}

/*
 * A record's number from its low 32 bits: @w, the ring's count of records
 * loaded after its head, is above the number of every record a read copies,
 * and by far less than 2^32 above it.
 */
static uint64_t full_seq(uint64_t w, uint32_t seq)
{
	return w - (uint32_t)((uint32_t)w - seq);
}

/* One ring's copy: its bytes [start, head), and its whole records' numbers. */
struct ring_copy {
	unsigned char *c;
	uint64_t start, head, from;	/* from: where the records not overwritten begin */
	uint64_t top;			/* the ring's head (above head: a bounded copy) */
	uint64_t w;			/* the ring's count of records, loaded after head */
	uint64_t first, last, n;	/* the numbers of the records copied, and how many */
	uint64_t end;			/* the end of the last whole record */
	uint64_t last_ts;		/* its time, ordered (see walk_copy()) */
	bool busy;			/* a record was being written when head was loaded */
};

/*
 * Copy @r's bytes from @start_min (or its tail, if later) up to its head,
 * at most @limit of them (0: no limit).  0; 1 when they were all
 * overwritten while copied; -ENOMEM.
 */
static int copy_once(struct ring *r, uint64_t start_min, uint64_t limit, struct ring_copy *rc)
{
	unsigned char *buf = atomic_load_explicit(&r->buf, memory_order_acquire);
	uint64_t size = r->size, mask = size - 1, tail, res, p;

	rc->top = rc->head = atomic_load_explicit(&r->head, memory_order_acquire);
	/*
	 * A write under way: reserve() publishes TR_REC_MAX bytes past the
	 * record's start before it stamps it, and a whole record is shorter,
	 * so reserved - head >= TR_REC_MAX only between the two.  (reserved is
	 * loaded after head: a write begun since counts as under way too.)
	 */
	rc->busy = atomic_load_explicit(&r->reserved, memory_order_acquire) - rc->top >= TR_REC_MAX;
	rc->w = atomic_load_explicit(&r->written, memory_order_relaxed);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	rc->start = rc->from = tail > start_min ? tail : start_min;
	if (rc->head <= rc->start)
		return 0;
	if (limit && rc->head - rc->start > limit)
		rc->head = rc->start + limit;
	rc->c = malloc(rc->head - rc->start);
	if (!rc->c)
		return -ENOMEM;
	for (p = rc->start; p < rc->head;) {	/* at most two pieces: the buffer wraps */
		uint64_t off = p & mask, n = size - off < rc->head - p ? size - off : rc->head - p;

		memcpy(rc->c + (p - rc->start), buf + off, n);
		p += n;
	}
	atomic_thread_fence(memory_order_acquire);
	res = atomic_load_explicit(&r->reserved, memory_order_acquire);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* what was overwritten while we copied is below tail (the seqlock rule) */
	if (tail > rc->from)
		rc->from = tail;
	return res > rc->from + size || (rc->from >= rc->head && rc->head < rc->top);
}

/* copy_once(), again while a writer overwrote the whole copy (a slow reader, a tiny ring). */
static int copy_ring(struct ring *r, uint64_t start_min, uint64_t limit, struct ring_copy *rc)
{
	int ret;

	for (int tries = 0;; tries++) {
		memset(rc, 0, sizeof(*rc));
		ret = copy_once(r, start_min, limit, rc);
		if (ret <= 0 || tries == 3)
			return ret < 0 ? ret : 0;
		free(rc->c);
	}
}

/* @sr's thread set to @tid: its name now, and whether the thread filter shows it. */
static void ring_thread(struct snap_ring *sr, pid_t tid)
{
	if (sr->known && sr->tid == tid)
		return;
	sr->known = true;
	sr->tid = tid;
	sr->comm[0] = '\0';
	if (tid > 0)
		kk_task_comm(tid, sr->comm, sizeof(sr->comm));
	sr->shown = kk_dd_tr_thread_shown(tid, sr->comm);
}

static int snap_push(struct snap *s, const struct trec *h, unsigned int ri, unsigned int seq,
		     const struct ring_copy *rc)
{
	if (s->n == s->cap) {
		size_t ncap = s->cap ? 2 * s->cap : 256;
		struct snap_rec *v = realloc(s->v, ncap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = ncap;
	}
	s->v[s->n++] = (struct snap_rec){ rc->last_ts, ri, seq, h, { rc->end, rc->last + 1 } };
	return 0;
}

/*
 * Number the whole records of @rc; add those the filter shows to @s (if
 * any) as ring @ri.  A record is ordered by its time, or by its ring's
 * previous record's if that is later (a stamp may step back a little
 * across CPUs): so a ring's records stay in their order, and a bounded
 * read that shows the first K records in time order shows a prefix of
 * every ring.  (h->ts, the time shown, is left as it is.)
 */
static int walk_copy(struct ring_copy *rc, struct snap *s, unsigned int ri)
{
	struct snap_ring *sr = s ? &s->rings[ri] : NULL;
	uint64_t p = rc->from;
	unsigned int k = 0;

	rc->end = rc->from;
	while (p < rc->head) {
		struct trec *h = (void *)(rc->c + (p - rc->start));

		if (!rec_ok(h, rc->head - p))
			break;	/* the end of a bounded copy, or a record cut: stop */
		p += h->len;
		rc->end = p;
		if (h->flags & TR_PAD)
			continue;
		rc->last = full_seq(rc->w, h->seq);
		if (!rc->n++)
			rc->first = rc->last;
		if (h->ts > rc->last_ts)
			rc->last_ts = h->ts;
		if (!s)
			continue;
		ring_thread(sr, h->tid);
		if (s->whole_rings) {	/* (the copy is ours: the mark is not the ring's) */
			k += sr->shown;
			h->flags |= sr->shown ? 0 : TR_HIDDEN;
		} else if (sr->shown && snap_push(s, h, ri, k++, rc)) {
			return -ENOMEM;
		}
	}
	if (sr)
		sr->nshown = k;
	return 0;
}

/*
 * The ring's numbers since the last clear, by the records' own numbers, so
 * that shown + overwritten == written exactly, also while a writer runs; a
 * consuming read moves the ring's pipe position past what it copied.
 */
static void count_ring(struct ring *r, const struct ring_copy *rc, struct snap_ring *sr,
		       bool consume)
{
	uint64_t first, end;

	if (rc->n) {
		first = rc->last + 1 - rc->n;
		end = rc->last + 1;
	} else if (rc->head <= rc->start) {	/* nothing after the read position */
		first = end = consume ? r->pipe_seq : r->clear_seq;
	} else {				/* all overwritten while copied */
		first = end = rc->w;
	}
	sr->in_buffer = rc->n;
	sr->written = end - r->clear_seq;
	sr->overwritten = first - r->clear_seq;
	if (!consume)
		return;
	sr->lost = first - r->pipe_seq;
	if (rc->head > rc->start) {
		r->pipe_pos = rc->head;
		r->pipe_seq = end;
	}
}

/*
 * A bounded read's positions in @r, to be taken by kk_dd_tr_consume():
 * nothing moves now.  "skip" passes the records overwritten (said lost),
 * "all" every whole record copied.
 */
static void pipe_marks(struct ring *r, const struct ring_copy *rc, struct snap_ring *sr)
{
	sr->ring = r;
	sr->buf = atomic_load_explicit(&r->buf, memory_order_relaxed);
	sr->base = (struct pipe_at){ r->pipe_pos, r->pipe_seq };
	sr->more = rc->head < rc->top;
	sr->busy = rc->busy;
	sr->last_ts = rc->last_ts;
	sr->in_buffer = rc->n;
	if (rc->n) {
		uint64_t first = rc->last + 1 - rc->n;

		sr->lost = first - r->pipe_seq;
		sr->skip = (struct pipe_at){ rc->from, first };
		sr->all = (struct pipe_at){ rc->end, rc->last + 1 };
		sr->all_ok = true;
	} else if (rc->head > rc->start && !sr->more) {	/* all overwritten while copied */
		sr->lost = rc->w - r->pipe_seq;
		sr->skip = sr->all = (struct pipe_at){ rc->head, rc->w };
		sr->all_ok = true;
	}
}

static int snap_grow(struct snap *s)
{
	unsigned char **nc = realloc(s->copies, (s->nrings + 1) * sizeof(*nc));
	struct snap_ring *nr;

	if (!nc)
		return -ENOMEM;
	s->copies = nc;
	nr = realloc(s->rings, (s->nrings + 1) * sizeof(*nr));
	if (!nr)
		return -ENOMEM;
	s->rings = nr;
	memset(&nr[s->nrings], 0, sizeof(*nr));
	s->copies[s->nrings] = NULL;
	return 0;
}

/* The read positions of @r, from 0 again if a buffer was given since they were set. */
static void check_positions_locked(struct ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);

	if (r->clear_pos > head || r->pipe_pos > head)
		r->clear_pos = r->pipe_pos = r->clear_seq = r->pipe_seq = 0;
}

/* Ring @r into @s (at most @limit bytes of it: a bounded read, which consumes later).  Under trace_lock. */
static int snap_ring_locked(struct snap *s, struct ring *r, bool consume, uint64_t limit)
{
	struct ring_copy rc;
	struct snap_ring *sr;
	int ret;

	check_positions_locked(r);
	if (snap_grow(s))
		return -ENOMEM;
	ret = copy_ring(r, consume ? r->pipe_pos : r->clear_pos, limit, &rc);
	if (ret)
		return ret;
	s->copies[s->nrings] = rc.c;
	sr = &s->rings[s->nrings++];
	sr->copy_pos = rc.start;
	sr->copy_len = rc.c ? rc.head - rc.start : 0;
	ret = walk_copy(&rc, s, (unsigned int)(s->nrings - 1));
	if (ret)
		return ret;
	if (rc.n && rc.last_ts > tr_read_newest)	/* (the read's knot comes after it) */
		tr_read_newest = rc.last_ts;
	if (!sr->known)
		ring_thread(sr, atomic_load(&r->tid));
	if (limit)
		pipe_marks(r, &rc, sr);
	else
		count_ring(r, &rc, sr, consume);
	return 0;
}

static int rec_cmp(const void *a, const void *b)
{
	const struct snap_rec *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Merge the sorted runs a[r[0]..r[1]) and a[r[1]..r[2]) into @to. */
static void merge_two(const struct snap_rec *a, const size_t *r, struct snap_rec *to)
{
	size_t i = r[0], j = r[1], k = r[0];

	while (i < r[1] && j < r[2])
		to[k++] = rec_cmp(&a[j], &a[i]) < 0 ? a[j++] : a[i++];
	while (i < r[1])
		to[k++] = a[i++];
	while (j < r[2])
		to[k++] = a[j++];
}

/*
 * s->v in time order.  Each ring's records are in order already (see
 * walk_copy()) and next to each other, so the rings' runs are merged
 * pairwise: a comparison a record a level, where qsort() spent about 160
 * instructions a record.  qsort() when there is no memory for it.
 */
static void sort_snap(struct snap *s)
{
	size_t *run = malloc((s->nrings + 1) * sizeof(*run)), nrun = 0;
	struct snap_rec *tmp = s->nrings > 1 ? malloc(s->n * sizeof(*tmp)) : NULL;

	if (!run || (s->nrings > 1 && !tmp)) {
		qsort(s->v, s->n, sizeof(*s->v), rec_cmp);
	} else {
		for (size_t i = 0; i < s->n; i++)
			if (!i || s->v[i].ring != s->v[i - 1].ring)
				run[nrun++] = i;
		run[nrun] = s->n;
		while (nrun > 1) {
			size_t k = 0;

			for (size_t i = 0; i < nrun; i += 2, k++) {
				if (i + 1 < nrun)
					merge_two(s->v, &run[i], tmp);
				else
					memcpy(tmp + run[i], s->v + run[i], (s->n - run[i]) * sizeof(*tmp));
				run[k] = run[i];
			}
			run[k] = s->n;
			nrun = k;
			struct snap_rec *t = s->v;

			s->v = tmp;
			tmp = t;
		}
	}
	free(run);
	free(tmp);
}

/* Does @r have bytes after its pipe position?  Under trace_lock. */
static bool ring_pending_locked(struct ring *r)
{
	uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);

	check_positions_locked(r);
	return head > r->pipe_pos && head > atomic_load_explicit(&r->tail, memory_order_relaxed);
}

/*
 * Lower @s->complete to what ring @sr leaves for a later read: a ring whose
 * copy stopped short, or whose owner was writing a record, may still give
 * records stamped from its last copied one on (a record is stamped after
 * the previous one is committed, by the same thread); with none copied,
 * that time is not known.
 */
static void complete_ring(struct snap *s, const struct snap_ring *sr)
{
	uint64_t from = sr->in_buffer ? sr->last_ts : 0;

	if ((sr->busy || sr->more) && from < s->complete)
		s->complete = from;
}

/*
 * A whole-rings read's share of @limit for each ring: what is left, divided
 * by the rings with records not copied yet (a ring with fewer leaves the
 * rest to the later ones), at least one record's room.  Under trace_lock.
 * s->read_stamp: the time before any copy (a record reserved later is
 * stamped later); s->complete: what the rings' order says (see complete_ring()).
 */
static int read_shared_locked(struct snap *s, uint64_t limit)
{
	uint64_t left = limit;
	size_t nleft = 0;
	int ret = 0;

	/* (the clock is chosen before a stamp of the read: a read before any record chooses it) */
	clock_ready();
	s->read_stamp = now_stamp();
	s->complete = UINT64_MAX;

	for (struct ring *r = atomic_load(&rings); r; r = r->next)
		nleft += atomic_load_explicit(&r->buf, memory_order_acquire) && ring_pending_locked(r);
	for (struct ring *r = atomic_load(&rings); r && !ret; r = r->next) {
		uint64_t share = left / (nleft ? nleft : 1), got;
		bool pending;

		if (!atomic_load_explicit(&r->buf, memory_order_acquire))
			continue;
		pending = ring_pending_locked(r);
		ret = snap_ring_locked(s, r, true, share > TR_REC_MAX ? share : TR_REC_MAX);
		got = ret ? 0 : s->rings[s->nrings - 1].copy_len;
		if (!ret)
			complete_ring(s, &s->rings[s->nrings - 1]);
		left -= got < left ? got : left;
		nleft -= pending && nleft;
	}
	return ret;
}

static int read_rings(struct snap *s, bool consume, uint64_t limit, bool whole)
{
	int ret = 0;

	memset(s, 0, sizeof(*s));
	s->whole_rings = whole;
	pthread_mutex_lock(&trace_lock);
	sweep_locked();
	if (whole)
		ret = read_shared_locked(s, limit);
	for (struct ring *r = atomic_load(&rings); r && !ret && !whole; r = r->next)
		if (atomic_load_explicit(&r->buf, memory_order_acquire))
			ret = snap_ring_locked(s, r, consume, limit);
	pthread_mutex_unlock(&trace_lock);
	if (!ret && s->n)	/* s->v is NULL when the trace is empty */
		sort_snap(s);
	s->ready = s->n;
	return ret;
}

int kk_dd_tr_read(struct snap *s, bool consume)
{
	return read_rings(s, consume, 0, false);
}

/*
 * A ring whose copy stopped short has records after its last copied one,
 * none earlier (its order is kept: see walk_copy()): the records of the
 * other rings up to that time may be shown, not after it.
 */
int kk_dd_tr_read_pipe(struct snap *s, size_t limit)
{
	uint64_t cut = UINT64_MAX;
	int ret = read_rings(s, true, limit, false);

	for (size_t i = 0; i < s->nrings; i++)
		if (s->rings[i].more && s->rings[i].last_ts < cut)
			cut = s->rings[i].last_ts;
	s->ready = 0;
	while (s->ready < s->n && s->v[s->ready].ts <= cut)
		s->ready++;
	return ret;
}

int kk_dd_tr_read_rings(struct snap *s, size_t limit)
{
	return read_rings(s, true, limit, true);
}

/* Move @sr's ring to @to, unless it was cleared, resized or consumed by another read since. */
static void consume_ring_locked(const struct snap_ring *sr, const struct pipe_at *to)
{
	struct ring *r = sr->ring;

	if (atomic_load_explicit(&r->buf, memory_order_relaxed) != sr->buf ||
	    r->pipe_pos != sr->base.pos || r->pipe_seq != sr->base.seq)
		return;
	r->pipe_pos = to->pos;
	r->pipe_seq = to->seq;
}

/* Where a bounded read moves @sr's ring, or NULL: nowhere. */
static const struct pipe_at *consume_to(const struct snap_ring *sr)
{
	if (sr->took)			/* past its last record shown (and the lost before it) */
		return &sr->upto;
	if (!sr->nshown && sr->all_ok)	/* none to show (the filter hides them): all copied */
		return &sr->all;
	if (sr->lost && sr->shown)	/* its lost said, its records left for the next read */
		return &sr->skip;
	return NULL;
}

/*
 * v[0..k) of a bounded read were shown: each ring moves past its last one
 * shown (a prefix of the ring: see walk_copy()), or as consume_to() says;
 * what is left is the next read's.
 */
void kk_dd_tr_consume(struct snap *s, size_t k)
{
	for (size_t i = 0; i < k && i < s->n; i++) {
		struct snap_ring *sr = &s->rings[s->v[i].ring];

		sr->upto = s->v[i].next;
		sr->took = true;
	}
	pthread_mutex_lock(&trace_lock);
	for (size_t i = 0; i < s->nrings; i++) {
		const struct snap_ring *sr = &s->rings[i];
		const struct pipe_at *to = sr->ring ? consume_to(sr) : NULL;

		if (to)
			consume_ring_locked(sr, to);
	}
	pthread_mutex_unlock(&trace_lock);
}

/* The header of dynamic_debug/trace: the numbers of the rings whose thread is shown. */
static void text_header(struct kk_buf *out, const struct snap *s)
{
	unsigned long entries = 0, written = 0, over = 0;
	size_t nr = 0;

	for (size_t i = 0; i < s->nrings; i++) {
		const struct snap_ring *sr = &s->rings[i];

		if (!sr->shown)
			continue;
		entries += sr->in_buffer;
		written += sr->written;
		over += sr->overwritten;
		nr += sr->written > 0;
	}
	kk_buf_printf(out, "# tracer: dyndbg\n"
		      "# entries-in-buffer/entries-written: %lu/%lu   rings: %zu\n"
		      "# lost: overwritten %lu, nested %lu, no buffer %lu\n"
		      "#\n#    TID [     TIMESTAMP    ] MESSAGE\n",
		      entries, written, nr, over, atomic_load(&tr_nested), atomic_load(&tr_nobuf));
}

static int show_records(struct kk_buf *out, bool consume, bool header)
{
	struct snap s;
	unsigned long skipped = 0;
	struct tr_conv tc;
	char line[2048];
	int ret;

	ret = kk_dd_tr_read(&s, consume);
	if (ret) {
		kk_dd_tr_snap_free(&s);
		return ret;
	}
	kk_dd_tr_conv_setup(&tc);
	if (header)
		text_header(out, &s);
	/* a site's strings are read only while its object is loaded */
	kk_dd_sites_lock();
	for (size_t i = 0; i < s.n; i++) {
		if (!kk_dd_site_known_locked(s.v[i].h->desc)) {
			skipped++;
			continue;
		}
		kk_buf_write(out, line,
			     format_line(s.v[i].h, &tc, line, sizeof(line), kk_dd_tr_snprintf));
	}
	kk_dd_sites_unlock();
	if (skipped && header)
		kk_buf_printf(out, "# %lu records of unloaded objects not shown\n", skipped);
	kk_dd_tr_snap_free(&s);
	return out->error;
}

/* ---- the flight recorder ----------------------------------------------------------------- */

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* The next record of @r at or after its dump cursor, or NULL. */
static const struct trec *dump_peek(struct ring *r)
{
	unsigned char *buf = atomic_load(&r->buf);
	uint64_t mask = r->size - 1;

	while (r->dump_pos < r->dump_end) {
		const struct trec *h = rec_at(buf, mask, r->dump_pos);

		if (!rec_ok(h, r->dump_end - r->dump_pos)) {
			r->dump_pos = r->dump_end;
			return NULL;
		}
		if (!(h->flags & TR_PAD))
			return h;
		r->dump_pos += h->len;	/* padding */
	}
	return NULL;
}

/* The oldest record of all rings, by time; its ring in *which. */
static const struct trec *dump_next(struct ring **which)
{
	const struct trec *best = NULL;

	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		const struct trec *h;

		if (!atomic_load(&r->buf) || !(h = dump_peek(r)))
			continue;
		if (!best || h->ts < best->ts) {
			best = h;
			*which = r;
		}
	}
	return best;
}

static void dump_reset(void)
{
	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		uint64_t tail = atomic_load(&r->tail);

		r->dump_pos = tail > r->clear_pos ? tail : r->clear_pos;
		r->dump_end = atomic_load(&r->head);
		if (r->dump_pos > r->dump_end)
			r->dump_pos = r->dump_end;
	}
}

void kk_dd_trace_dump_fd(int fd, unsigned int max, kk_dd_snprintf_fn snp)
{
	unsigned long total = 0, skip;
	struct ring *r = NULL;
	const struct trec *h;
	struct tr_conv tc;
	char line[512];
	size_t n;

	if (!atomic_load(&rings))
		return;
	conv_setup(&tc, false);
	dump_reset();
	while ((h = dump_next(&r))) {
		total++;
		r->dump_pos += h->len;
	}
	if (!total)
		return;
	skip = total > max ? total - max : 0;
	n = snp(line, sizeof(line), "kernelkit: dynamic debug trace, last %lu of %lu records:\n",
		total - skip, total);
	write_all(fd, line, n < sizeof(line) ? n : sizeof(line) - 1);
	dump_reset();
	while ((h = dump_next(&r))) {
		r->dump_pos += h->len;
		if (skip) {
			skip--;
			continue;
		}
		write_all(fd, line, format_line(h, &tc, line, sizeof(line), snp));
	}
	write_all(fd, "kernelkit: end of trace\n", 24);
}

/* ---- settings and control files ---------------------------------------------------------- */

static void clear_locked(void);

static size_t pow2_up(size_t v)
{
	size_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

KK_EXPORT int kk_dyndbg_trace_set_size(size_t bytes)
{
	if (bytes < ((size_t)TR_MIN_KB << 10) || bytes > ((size_t)TR_MAX_KB << 10))
		return -EINVAL;
	pthread_mutex_lock(&trace_lock);
	atomic_store(&tr_size, pow2_up(bytes));
	/* each thread takes a ring of the new size at its next event */
	atomic_fetch_add_explicit(&tr_gen, 1, memory_order_release);
	/* and what the old rings hold is cleared, so a read shows one size's records */
	clear_locked();
	sweep_locked();
	pthread_mutex_unlock(&trace_lock);
	return 0;
}

KK_EXPORT size_t kk_dyndbg_trace_get_size(void)
{
	return atomic_load(&tr_size);
}

/*
 * Clear @r as ftrace clears its buffer: trace shows what is written after
 * this, and counts from zero.  The clear position is the end of the last
 * record copied, numbered by that record (the head and the count cannot be
 * loaded together while the owner writes).
 */
static void clear_ring_locked(struct ring *r)
{
	struct ring_copy rc;

	check_positions_locked(r);
	if (copy_ring(r, r->pipe_pos, 0, &rc)) {	/* no memory: near enough */
		r->clear_pos = atomic_load_explicit(&r->head, memory_order_acquire);
		r->clear_seq = atomic_load_explicit(&r->written, memory_order_relaxed);
	} else if (rc.head > rc.start) {
		walk_copy(&rc, NULL, 0);
		r->clear_pos = rc.head;
		r->clear_seq = rc.n ? rc.last + 1 : rc.w;
	} else {
		r->clear_pos = r->pipe_pos;
		r->clear_seq = r->pipe_seq;
	}
	free(rc.c);
	r->pipe_pos = r->clear_pos;
	r->pipe_seq = r->clear_seq;
}

static void clear_locked(void)
{
	for (struct ring *r = atomic_load(&rings); r; r = r->next)
		if (atomic_load_explicit(&r->buf, memory_order_acquire))
			clear_ring_locked(r);
	atomic_store(&tr_nested, 0);
	atomic_store(&tr_nobuf, 0);
}

KK_EXPORT void kk_dyndbg_trace_clear(void)
{
	pthread_mutex_lock(&trace_lock);
	clear_locked();
	pthread_mutex_unlock(&trace_lock);
}

static int trace_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return show_records(out, false, true);
}

static size_t trim(const char *buf, size_t len)
{
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	return len;
}

/* Only comment lines ("# ...") and empty ones: the text of an empty trace. */
static bool only_comments(const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n')
			continue;
		if (buf[i] != '#')
			return false;
		while (i < len && buf[i] != '\n')
			i++;
	}
	return true;
}

/* As the kernel's: a write of nothing clears ("> trace"); so do "0" and the
 * header of an empty trace written back. */
static int trace_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	len = trim(buf, len);
	if ((len == 1 && buf[0] == '0') || only_comments(buf, len)) {
		kk_dyndbg_trace_clear();
		return 0;
	}
	kk_buf_printf(out, "write nothing (or 0) to clear the trace\n");
	return -EINVAL;
}

static const struct kk_control_file_ops trace_fops = {
	.show = trace_show,
	.write = trace_write,
	.max_write = 4096,
};
KK_CONTROL_LIB_FILE(trace_file, "dynamic_debug/trace", &trace_fops);

/* Is there a record trace_pipe has not shown? */
static bool pipe_has_data(void)
{
	bool any = false;

	pthread_mutex_lock(&trace_lock);
	for (struct ring *r = atomic_load(&rings); r && !any; r = r->next) {
		uint64_t head = atomic_load_explicit(&r->head, memory_order_acquire);

		any = atomic_load_explicit(&r->buf, memory_order_acquire) && head > r->pipe_pos &&
		      head > r->clear_pos;
	}
	pthread_mutex_unlock(&trace_lock);
	return any;
}

/* Wait (bounded) until a record may be there to show. */
void kk_dd_tr_pipe_wait(void)
{
	uint64_t end = kk_now_ns() + TR_PIPE_WAIT_MS * 1000000ull;

	if (pipe_has_data())
		return;
	for (;;) {
		int seen = __atomic_load_n(&tr_wake, __ATOMIC_ACQUIRE);
		uint64_t now = kk_now_ns(), slice = now + TR_PIPE_SLICE_MS * 1000000ull;

		atomic_store(&tr_armed, 1);
		if (pipe_has_data() || now >= end)
			break;
		kk_futex_wait(&tr_wake, seen, slice < end ? slice : end);
	}
	atomic_store(&tr_armed, 0);
}

/*
 * At most this much text a trace_pipe read, as trace_pipe_json sends (see
 * JSON_READ_MAX in trace_json.c): a full ring is 16 MiB, and a read that
 * sent it all would be past the endpoint's deadline.  A read takes a prefix
 * of the records in time order (kk_dd_tr_read_pipe()) and consumes only the
 * lines it sent; the rest stays for the next read.
 */
#define PIPE_READ_MAX	(128u << 10)

static int pipe_show(struct kk_buf *out, void *priv)
{
	size_t start = out->len, i;
	struct tr_conv tc;
	char line[2048];
	struct snap s;
	int ret;

	(void)priv;
	kk_dd_tr_pipe_wait();
	/* a line is about as long as its record: a ring's copy need not be longer than a read */
	ret = kk_dd_tr_read_pipe(&s, PIPE_READ_MAX);
	if (ret) {
		kk_dd_tr_snap_free(&s);
		return ret;
	}
	kk_dd_tr_conv_setup(&tc);
	/* a site's strings are read only while its object is loaded */
	kk_dd_sites_lock();
	for (i = 0; i < s.ready; i++) {
		size_t n;

		if (!kk_dd_site_known_locked(s.v[i].h->desc))
			continue;
		n = format_line(s.v[i].h, &tc, line, sizeof(line), kk_dd_tr_snprintf);
		if (out->len - start + n > PIPE_READ_MAX)
			break;	/* the next read's (a line is shorter than the bound) */
		kk_buf_write(out, line, n);
	}
	kk_dd_sites_unlock();
	if (!out->error)	/* a reply that cannot be made consumes nothing */
		kk_dd_tr_consume(&s, i);
	kk_dd_tr_snap_free(&s);
	return out->error;
}

static const struct kk_control_file_ops pipe_fops = {
	.show = pipe_show,
};
KK_CONTROL_LIB_FILE(pipe_file, "dynamic_debug/trace_pipe", &pipe_fops);

static int size_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%zu\n", kk_dyndbg_trace_get_size() >> 10) < 0 ? -ENOMEM : 0;
}

static int size_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	unsigned long kb = 0;
	size_t i;

	(void)priv;
	len = trim(buf, len);
	for (i = 0; i < len && buf[i] >= '0' && buf[i] <= '9' && kb <= TR_MAX_KB; i++)
		kb = kb * 10 + (unsigned long)(buf[i] - '0');
	if (!len || i != len || kb < TR_MIN_KB || kb > TR_MAX_KB) {
		kk_buf_printf(out, "expected a size in KiB per thread, %u to %u\n", TR_MIN_KB,
			      TR_MAX_KB);
		return -EINVAL;
	}
	return kk_dyndbg_trace_set_size((size_t)kb << 10);
}

static const struct kk_control_file_ops size_fops = {
	.show = size_show,
	.write = size_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(size_file, "dynamic_debug/buffer_size_kb", &size_fops);

static int total_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%zu\n", atomic_load(&tr_total) >> 10) < 0 ? -ENOMEM : 0;
}

static const struct kk_control_file_ops total_fops = {
	.show = total_show,
};
KK_CONTROL_LIB_FILE(total_file, "dynamic_debug/buffer_total_size_kb", &total_fops);

void kk_dd_tr_lock(void)
{
	pthread_mutex_lock(&trace_lock);
}

void kk_dd_tr_unlock(void)
{
	pthread_mutex_unlock(&trace_lock);
}

static void tr_prepare(void)
{
	pthread_mutex_lock(&trace_lock);
}

static void tr_parent(void)
{
	pthread_mutex_unlock(&trace_lock);
}

static void tr_child(void)
{
	/* only the forking thread exists here: its ring stays, the others are free */
	my_tid = 0;
	for (struct ring *r = atomic_load(&rings); r; r = r->next) {
		if (r == my_ring) {
			atomic_store(&r->tid, tr_gettid());
			continue;
		}
		atomic_store(&r->tid, 0);
		if (atomic_load(&r->buf)) {
			r->clear_pos = r->pipe_pos = atomic_load(&r->head);
			r->clear_seq = r->pipe_seq = atomic_load(&r->written);
		}
	}
	pthread_mutex_unlock(&trace_lock);
}

static const struct kk_fork_ops tr_fork_ops = {
	KK_INIT_DYNDBG, tr_prepare, tr_parent, tr_child
};

void kk_dd_trace_init(void)
{
	kk_fork_register(&tr_fork_ops);
	kk_control_add_lib_file(&trace_file);
	kk_control_add_lib_file(&pipe_file);
	kk_control_add_lib_file(&size_file);
	kk_control_add_lib_file(&total_file);
	kk_dd_tr_threads_init();
	kk_dd_tr_json_init();
	kk_dd_tr_raw_init();
	kk_dd_print_time_init();
	kk_dd_tr_clock_init();
}
