// SPDX-License-Identifier: MIT
/*
 * Debug objects: reports, the stack depot for init/activate backtraces, the
 * on-stack check and the report of objects still active at exit.
 *
 * Reports are formatted into a buffer on the stack and written with write(2)
 * (or handed to the printer callback), never with a lock held, so that they
 * work from inside the preload library's free(), also in a signal handler:
 * the printer and the stack depot are read without a lock, and a nested
 * report (see internal.h) skips the backtrace of where it was made.
 *
 * The report at exit needs no syscall but write(2): its buffer is static, and
 * the symbol names of recorded backtraces come from dladdr() (no file access).
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/internal.h"
#include "debugobjects/internal.h"

unsigned long odebug_warnings, odebug_fixups, odebug_maxchain, odebug_maxchecked;
unsigned long odebug_stack_warnings, odebug_oom_count;
int odebug_backtraces;
int odebug_exit_report = 1;

static unsigned long print_limit, stack_limit;

static const char *const obj_states[ODEBUG_STATE_MAX] = {
	[ODEBUG_STATE_NONE]		= "none",
	[ODEBUG_STATE_INIT]		= "initialized",
	[ODEBUG_STATE_INACTIVE]		= "inactive",
	[ODEBUG_STATE_ACTIVE]		= "active",
	[ODEBUG_STATE_DESTROYED]	= "destroyed",
	[ODEBUG_STATE_NOTAVAILABLE]	= "not available",
};

/* ---- output ---------------------------------------------------------------------- */

/*
 * The printer: written under printer_lock, read locklessly (a sequence count:
 * odd while a writer is changing it), so that a report in a signal handler
 * never waits for the code it interrupted.
 */
static odebug_spin_t printer_lock;
static unsigned int printer_seq;
static kk_odebug_printer_fn printer_fn;
static void *printer_arg;

KK_EXPORT void kk_debug_objects_set_printer(kk_odebug_printer_fn fn, void *arg)
{
	odebug_enter();
	odebug_spin_lock(&printer_lock);
	__atomic_store_n(&printer_seq, printer_seq + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&printer_fn, fn, __ATOMIC_RELAXED);
	__atomic_store_n(&printer_arg, arg, __ATOMIC_RELAXED);
	__atomic_store_n(&printer_seq, printer_seq + 1, __ATOMIC_RELEASE);
	odebug_spin_unlock(&printer_lock);
	odebug_leave();
}

/* The printer, or NULL for stderr (also when nested and a change is half done). */
static kk_odebug_printer_fn get_printer(void **arg)
{
	for (;;) {
		unsigned int seq = __atomic_load_n(&printer_seq, __ATOMIC_ACQUIRE);

		if (!(seq & 1)) {
			kk_odebug_printer_fn fn = __atomic_load_n(&printer_fn, __ATOMIC_RELAXED);
			void *a = __atomic_load_n(&printer_arg, __ATOMIC_RELAXED);

			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			if (__atomic_load_n(&printer_seq, __ATOMIC_RELAXED) == seq) {
				*arg = a;
				return fn;
			}
		}
		if (odebug_nested()) {	/* the writer may be the code we interrupted */
			*arg = NULL;
			return NULL;
		}
		odebug_cpu_relax();
	}
}

void odebug_print_text(const char *text)
{
	kk_odebug_printer_fn fn;
	void *arg;
	size_t len = strlen(text);

	fn = get_printer(&arg);
	if (fn) {
		fn(text, arg);
		return;
	}
	while (len) {
		ssize_t w = write(STDERR_FILENO, text, len);

		if (w <= 0)
			break;
		text += w;
		len -= (size_t)w;
	}
}

struct tbuf {
	char buf[8192];
	size_t len;
};

static void __attribute__((format(printf, 2, 3))) tb_printf(struct tbuf *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->len >= sizeof(t->buf) - 1)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf + t->len, sizeof(t->buf) - t->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		t->len += (size_t)n;
	if (t->len >= sizeof(t->buf))
		t->len = sizeof(t->buf) - 1;
}

static __attribute__((format(printf, 1, 2))) void odebug_printf(const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	odebug_print_text(buf);
}

/* "symbol+0xoff/0xsize", as the kernel's %pS, or the bare address. */
static void sym_name(const void *addr, char *out, size_t n)
{
	Dl_info info;
	const ElfW(Sym) *sym = NULL;

	if (!addr) {
		snprintf(out, n, "0x0");
		return;
	}
	if (dladdr1(addr, &info, (void **)&sym, RTLD_DL_SYMENT) && info.dli_sname &&
	    info.dli_saddr) {
		snprintf(out, n, "%s+0x%lx/0x%lx", info.dli_sname,
			 (unsigned long)((const char *)addr - (const char *)info.dli_saddr),
			 sym ? (unsigned long)sym->st_size : 0ul);
		return;
	}
	snprintf(out, n, "%p", addr);
}

static void tb_frames(struct tbuf *t, void *const *frames, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		char sym[256];
		const char *mod = "?";
		Dl_info info;

		sym_name(frames[i], sym, sizeof(sym));
		if (dladdr(frames[i], &info) && info.dli_fname && *info.dli_fname) {
			const char *s = strrchr(info.dli_fname, '/');

			mod = s ? s + 1 : info.dli_fname;
		}
		tb_printf(t, "ODEBUG:   #%u %s (%s)\n", i, sym, mod);
	}
}

/* ---- the stack depot ---------------------------------------------------------------- */

#define DEPOT_FRAMES	16
#define DEPOT_SKIP	2	/* odebug_stack_capture() and the hook */
#define DEPOT_CAP	(1u << 15)
#define DEPOT_HASH	(1u << 13)

struct depot_rec {
	uint32_t next;		/* handle of the next record in the hash chain */
	uint32_t hash;
	uint32_t n;
	void *frames[DEPOT_FRAMES];
};

/*
 * Records are added under depot_lock and never change afterwards: a record
 * is complete before depot_used (store-release) counts it, so reports read
 * the depot without the lock.
 */
static pthread_mutex_t depot_lock = PTHREAD_MUTEX_INITIALIZER;
static struct depot_rec *depot;
static uint32_t depot_used;
static uint32_t depot_heads[DEPOT_HASH];

KK_EXPORT void kk_debug_objects_set_backtraces(bool on)
{
	if (on) {
		void *f[2];

		kk_backtrace(f, 2);	/* glibc loads libgcc_s on first use: not later */
	}
	ODEBUG_WRITE(odebug_backtraces, on ? 1 : 0);
}

__attribute__((noinline)) uint32_t odebug_stack_capture(void)
{
	void *frames[DEPOT_FRAMES + DEPOT_SKIP];
	uint32_t h = 2166136261u, handle = 0;
	int n = kk_backtrace(frames, DEPOT_FRAMES + DEPOT_SKIP);
	unsigned int cnt;

	if (n <= DEPOT_SKIP)
		return 0;
	cnt = (unsigned int)(n - DEPOT_SKIP);
	for (unsigned int i = 0; i < cnt; i++) {
		uintptr_t v = (uintptr_t)frames[i + DEPOT_SKIP];

		for (int b = 0; b < 8; b++, v >>= 8)
			h = (h ^ (uint32_t)(v & 0xff)) * 16777619u;
	}
	pthread_mutex_lock(&depot_lock);
	if (!depot) {
		void *p = mmap(NULL, DEPOT_CAP * sizeof(struct depot_rec), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			goto out;
		__atomic_store_n(&depot, (struct depot_rec *)p, __ATOMIC_RELEASE);
	}
	for (uint32_t x = depot_heads[h % DEPOT_HASH]; x; x = depot[x - 1].next) {
		struct depot_rec *r = &depot[x - 1];

		if (r->hash == h && r->n == cnt &&
		    !memcmp(r->frames, frames + DEPOT_SKIP, cnt * sizeof(void *))) {
			handle = x;
			goto out;
		}
	}
	if (depot_used < DEPOT_CAP) {
		struct depot_rec *r = &depot[depot_used];

		r->hash = h;
		r->n = cnt;
		memcpy(r->frames, frames + DEPOT_SKIP, cnt * sizeof(void *));
		r->next = depot_heads[h % DEPOT_HASH];
		handle = depot_used + 1;
		__atomic_store_n(&depot_used, handle, __ATOMIC_RELEASE);
		depot_heads[h % DEPOT_HASH] = handle;
	}
out:
	pthread_mutex_unlock(&depot_lock);
	return handle;
}

static void tb_stack(struct tbuf *t, const char *what, uint32_t handle)
{
	const struct depot_rec *d = __atomic_load_n(&depot, __ATOMIC_ACQUIRE), *r;

	if (!handle || !d || handle > __atomic_load_n(&depot_used, __ATOMIC_ACQUIRE))
		return;
	r = &d[handle - 1];
	tb_printf(t, "ODEBUG:  %s backtrace:\n", what);
	tb_frames(t, r->frames, r->n);
}

static void tb_here(struct tbuf *t)
{
	void *frames[DEPOT_FRAMES + 2];
	int n = kk_backtrace(frames, DEPOT_FRAMES + 2);

	if (n > 2) {
		tb_printf(t, "ODEBUG:  reported at:\n");
		tb_frames(t, frames + 2, (unsigned int)(n - 2));
	}
}

/* ---- reports ------------------------------------------------------------------------ */

void odebug_print_object(const struct debug_obj *o, const char *msg)
{
	const struct debug_obj_descr *descr = o->descr;
	struct tbuf t;
	char hint[256];

	/* tracking was switched off under us (out of trackers): stay quiet */
	if (!ODEBUG_READ(odebug_enabled))
		return;
	ODEBUG_ADD(odebug_warnings, 1);
	if (ODEBUG_ADD(print_limit, 1) >= ODEBUG_PRINT_LIMIT)
		return;
	sym_name(descr->debug_hint ? descr->debug_hint(o->object) : NULL, hint, sizeof(hint));
	t.len = 0;
	tb_printf(&t, "ODEBUG: %s %s (active state %u) object: %p object type: %s hint: %s\n",
		  msg, o->state < ODEBUG_STATE_MAX ? obj_states[o->state] : "?", o->astate,
		  o->object, descr->name ? descr->name : "(null)", hint);
	if (ODEBUG_READ(odebug_backtraces)) {
		tb_stack(&t, "init", o->init_stack);
		tb_stack(&t, "activate", o->act_stack);
		/* the unwinder may take a lock the interrupted code holds */
		if (!odebug_nested())
			tb_here(&t);
	}
	odebug_print_text(t.buf);
}

/* ---- the calling thread's stack --------------------------------------------------------- */

static ODEBUG_TLS uintptr_t stk_lo, stk_hi;

bool odebug_on_stack(const void *addr)
{
	if (odebug_unlikely(!stk_hi)) {
		pthread_attr_t a;
		void *base;
		size_t size;

		if (!pthread_getattr_np(pthread_self(), &a)) {
			if (!pthread_attr_getstack(&a, &base, &size)) {
				stk_lo = (uintptr_t)base;
				stk_hi = (uintptr_t)base + size;
			}
			pthread_attr_destroy(&a);
		}
		if (!stk_hi)
			stk_hi = 1;	/* unknown: nothing is on the stack */
	}
	return (uintptr_t)addr >= stk_lo && (uintptr_t)addr < stk_hi;
}

void odebug_stack_warning(const void *addr, bool is_on_stack)
{
	ODEBUG_ADD(odebug_stack_warnings, 1);
	if (ODEBUG_ADD(stack_limit, 1) >= ODEBUG_PRINT_LIMIT)
		return;
	if (is_on_stack)
		odebug_printf("ODEBUG: object %p is on stack %p, but NOT annotated.\n", addr,
			      (void *)stk_lo);
	else
		odebug_printf("ODEBUG: object %p is NOT on stack %p, but annotated.\n", addr,
			      (void *)stk_lo);
}

/* ---- objects still active ------------------------------------------------------------------ */

void odebug_for_each_object(void (*fn)(const struct debug_obj *obj, void *arg), void *arg);

#define TALLY_TYPES	32
#define TALLY_SAMPLES	5

struct tally {
	const struct debug_obj_descr *descr[TALLY_TYPES];
	unsigned long cnt[TALLY_TYPES];
	unsigned int ntypes;
	unsigned long other, total;
	struct debug_obj sample[TALLY_SAMPLES];
	unsigned int nsamples;
};

static void tally_one(const struct debug_obj *obj, void *arg)
{
	struct tally *t = arg;
	unsigned int i;

	if (obj->state != ODEBUG_STATE_ACTIVE)
		return;
	t->total++;
	if (t->nsamples < TALLY_SAMPLES)
		t->sample[t->nsamples++] = *obj;
	for (i = 0; i < t->ntypes; i++) {
		if (t->descr[i] == obj->descr) {
			t->cnt[i]++;
			return;
		}
	}
	if (i < TALLY_TYPES) {
		t->descr[i] = obj->descr;
		t->cnt[i] = 1;
		t->ntypes++;
	} else
		t->other++;
}

/*
 * Static buffers (under the lock): big for the stack, and the report at exit
 * must not allocate (a sandbox may refuse mmap, and malloc may fail).
 */
static struct tally report_tally;
static struct tbuf report_buf;

static unsigned long report_active(const char *when)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct tally *tp = &report_tally;
	struct tbuf *tb = &report_buf;
	unsigned long total = 0;
	bool nested = odebug_enter();

	if (nested ? pthread_mutex_trylock(&lock) : pthread_mutex_lock(&lock))
		goto out;
	memset(tp, 0, sizeof(*tp));
	odebug_for_each_object(tally_one, tp);
	total = tp->total;
	if (!total) {
		pthread_mutex_unlock(&lock);
		goto out;
	}
	tb->len = 0;
	tb_printf(tb, "ODEBUG: %lu active object%s%s, by type:\n", total, total == 1 ? "" : "s",
		  when);
	for (unsigned int i = 0; i < tp->ntypes; i++)
		tb_printf(tb, "ODEBUG:   %-24s %lu\n",
			  tp->descr[i]->name ? tp->descr[i]->name : "(null)", tp->cnt[i]);
	if (tp->other)
		tb_printf(tb, "ODEBUG:   %-24s %lu\n", "(other types)", tp->other);
	if (ODEBUG_READ(odebug_backtraces)) {
		for (unsigned int i = 0; i < tp->nsamples; i++) {
			tb_printf(tb, "ODEBUG:  object %p object type: %s\n", tp->sample[i].object,
				  tp->sample[i].descr->name ? tp->sample[i].descr->name : "(null)");
			tb_stack(tb, "init", tp->sample[i].init_stack);
			tb_stack(tb, "activate", tp->sample[i].act_stack);
		}
	}
	odebug_print_text(tb->buf);
	pthread_mutex_unlock(&lock);
out:
	odebug_leave();
	return total;
}

KK_EXPORT unsigned long kk_debug_objects_report_active(void)
{
	return report_active("");
}

/* Only write(2) (or the printer): see the top of this file. */
KK_EXIT(KK_INIT_ODEBUG) static void odebug_exit(void)
{
	if (ODEBUG_READ(odebug_enabled) && ODEBUG_READ(odebug_exit_report))
		report_active(" at exit");
}

void odebug_report_reset(void)
{
	ODEBUG_WRITE(print_limit, 0);
	ODEBUG_WRITE(stack_limit, 0);
	ODEBUG_WRITE(odebug_warnings, 0);
	ODEBUG_WRITE(odebug_fixups, 0);
	ODEBUG_WRITE(odebug_stack_warnings, 0);
	ODEBUG_WRITE(odebug_oom_count, 0);
}

void odebug_report_atfork_prepare(void)
{
	pthread_mutex_lock(&depot_lock);
}

void odebug_report_atfork_parent(void)
{
	pthread_mutex_unlock(&depot_lock);
}

void odebug_report_atfork_child(void)
{
	pthread_mutex_unlock(&depot_lock);
}
