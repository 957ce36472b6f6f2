// SPDX-License-Identifier: MIT
/*
 * x86_64 cross-modifying code, the way the kernel's text_poke batch does it:
 *
 *   0. write every page the batch touches with its own bytes (the dry run)
 *   1. write INT3 over the first byte of every site in the batch;   sync
 *   2. write the new bytes 1..n-1 of every site;                      sync
 *   3. write the new first byte of every site;                        sync
 *
 * "sync" is kk_sync_round() (src/text_sync.c): every CPU that runs a thread
 * of this process executes a core-serializing instruction, which is what the
 * SDM asks for before another CPU may run modified code.  A thread that
 * reaches a site between steps 1 and 3 traps on the INT3; our SIGTRAP handler
 * finds the site by binary search in the sorted batch and resumes it where
 * the old instruction would have sent it, or, once step 3 has begun (the
 * batch is "committed"), where the new one does.  So a change that fails is
 * never observed, and one batch costs three syncs however many sites it holds.
 *
 * Failure changes nothing.  The dry run proves, before the first INT3, that
 * every page of the batch can be written.  If a write still fails after
 * that (a descriptor closed under us, out of memory), the batch is not
 * abandoned: it stays published as "stuck", the trap handler keeps emulating
 * its sites (old instruction, or new if committed), and it is repaired at
 * once if the text can be written another way, else before the next batch.
 * A site never executes half-written bytes, and never differs from its key.
 *
 * Under a tracer, under valgrind, or when a thread blocks SIGTRAP (a blocked
 * synchronous trap kills the process), kk_sync_plan() says so and the batch
 * is written whole under kk_stop_machine() instead: no INT3 at all.
 *
 * The trap handler knows its own traps only: the trapping address must be a
 * site of the batch in flight (or stuck), or a site this process patched
 * before whose bytes are a valid instruction again (the batch finished while
 * the trapping thread was on its way to the handler).  Anything else, such
 * as a program's own `int3` or `int $3`, goes to the handler that was there
 * before us, and a handler that calls us back cannot make that loop.
 *
 * Text is never writable and executable at once.  Bytes are written through
 * /proc/self/mem (FOLL_FORCE writes into a private copy of the page while the
 * mapping stays r-x).  Where that is refused, each touched page is rebuilt in
 * a fresh anonymous page, sealed r-x and swapped in with mremap(), which other
 * threads see atomically.  Writes are grouped per page: one write per page per
 * step, not one per site.  Under valgrind each write discards the translations
 * of the range it wrote.
 *
 * Pages that hold sites stay shared with the file (and other processes) until
 * a site on them first changes; see cow_prepare() for how the first batch
 * breaks copy-on-write on many pages with one TLB flush.
 *
 * Nothing here runs at load time.  Membarrier registration happens when the
 * first object with sites registers (kk_text_arm), the SIGTRAP handler and
 * /proc/self/mem with the first batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef VALGRIND_DISCARD_TRANSLATIONS
#define VALGRIND_DISCARD_TRANSLATIONS(a, l) ((void)(a), (void)(l))
#endif

#include "common.h"
#include "internal.h"
#include "text_patch.h"
#include "text_sync.h"

#define INT3 0xcc
#define JMP32 0xe9
static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

enum method { M_UNKNOWN, M_PROC_MEM, M_REMAP, M_NONE };

/*
 * A batch, from its first INT3 until every site holds its final bytes.  The
 * trap handler reads it; it is freed only once no trap handler is inside
 * (traps_inflight) and it is no longer published.
 */
struct batch {
	struct kk_poke *v;	/* sorted by address, owned */
	size_t n;
	atomic_int committed;	/* step 3 began: emulate the new instructions */
	int stuck;		/* a write failed: awaiting repair */
	pthread_t owner;	/* the patching thread (a fork child may be it) */
};

/*
 * Every address this process ever put an INT3 on (sorted): a thread may
 * reach the handler for one of our traps after its batch ended, and must
 * then be told apart from a foreign trap.  Replaced, never edited in place;
 * an old copy is freed once no trap handler can be reading it.
 */
struct history {
	size_t n;
	uintptr_t a[];
};

static _Atomic(struct batch *) cur_batch;
static _Atomic(struct history *) history;
static atomic_int traps_inflight;

/* The handler we chain to: two copies, so that a trap on another thread
 * never reads one half-written (updated only under the jump-label lock). */
static struct sigaction prev_traps[2];
static atomic_int prev_idx;

/*
 * The threads (tid, and the stack address of our frame) chaining a trap now:
 * a handler that calls us back deeper on the same thread's stack is a loop
 * (a crash reporter that saved us as "previous"), whatever siginfo it
 * passes.  A slot whose frame is not above ours is stale: the handler we
 * chained to left with longjmp, and the slot is taken over.
 */
#define CHAIN_SLOTS 32
static _Atomic(pid_t) chaining[CHAIN_SLOTS];
static _Atomic(uintptr_t) chain_sp[CHAIN_SLOTS];

static int armed;		/* kk_text_arm() ran (under the registry lock) */
static enum method method = M_UNKNOWN;
static struct kk_fd mem = KK_FD_INIT;	/* /proc/self/mem */
static long page_size;

int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len);

static atomic_ullong n_syncs, n_batches, n_pokes, n_traps, n_stopped, n_repairs;

/* ---- telling our traps from others ---------------------------------------------- */

static struct kk_poke *poke_find(struct kk_poke *v, size_t n, uintptr_t ip)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].addr == ip)
			return &v[mid];
		if (v[mid].addr < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool history_has(const struct history *h, uintptr_t ip)
{
	size_t lo = 0, hi = h ? h->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (h->a[mid] == ip)
			return true;
		if (h->a[mid] < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static int insn_ok(const uint8_t *insn, uint8_t len)
{
	return len == 5 && (insn[0] == JMP32 || !memcmp(insn, nop5, 5));
}

/* Where a thread trapping on site @p continues. */
static uintptr_t poke_resume(const struct batch *b, const struct kk_poke *p)
{
	return atomic_load(&b->committed) ? p->resume : p->resume_old;
}

/*
 * The resume address for a trap whose INT3 is at @ip, or 0 if it is not
 * ours.  @rewound: the kernel's pc points at the INT3 itself (gdb rewinds it
 * for a SIGTRAP it passes on), so only an INT3 still in place counts.
 */
static uintptr_t our_trap(uintptr_t ip, bool rewound)
{
	struct batch *b = atomic_load(&cur_batch);
	const volatile uint8_t *code = (const volatile uint8_t *)ip;
	struct kk_poke *p = b ? poke_find(b->v, b->n, ip) : NULL;
	uint8_t now[5];

	if (p && code[0] == INT3)
		return poke_resume(b, p);
	if (!p && !history_has(atomic_load(&history), ip))
		return 0;
	/* Rewound, and the INT3 is gone already (the batch went on while a
	 * debugger looked at the stop): ours only if no trap instruction ends
	 * just before @ip, which would be a foreign trap to the program, and a
	 * tracer is attached to have rewound it. */
	if (rewound && (code[-1] == INT3 || (code[-2] == 0xcd && code[-1] == 0x03) ||
			kk_tracer_pid() <= 0))
		return 0;
	/* One of ours whose INT3 is gone (written over by step 3, or its batch
	 * has ended): run what the site holds now, provided it is a site
	 * instruction again. */
	for (int i = 0; i < 5; i++)
		now[i] = code[i];
	return insn_ok(now, 5) ? ip : 0;
}

/* ---- the trap handler ---------------------------------------------------------- */

static bool chain_enter(pid_t tid, uintptr_t sp, int *slot)
{
	*slot = -1;
	for (int i = 0; i < CHAIN_SLOTS; i++) {
		if (atomic_load(&chaining[i]) != tid)
			continue;
		if (atomic_load(&chain_sp[i]) > sp)
			return false;		/* our own frame is above: a loop */
		atomic_store(&chain_sp[i], sp);	/* stale: ours now */
		*slot = i;
		return true;
	}
	for (int i = 0; i < CHAIN_SLOTS; i++) {
		pid_t none = 0;

		if (atomic_compare_exchange_strong(&chaining[i], &none, tid)) {
			atomic_store(&chain_sp[i], sp);
			*slot = i;
			break;
		}
	}
	return true;
}

/* The default action of SIGTRAP, now: terminate with a core dump. */
static void trap_default(void)
{
	struct sigaction dfl;
	sigset_t s;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigaction(SIGTRAP, &dfl, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGTRAP);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	syscall(SYS_tgkill, getpid(), (pid_t)syscall(SYS_gettid), SIGTRAP);
	/* Not reached unless a tracer discarded the signal: then run on. */
}

/* Not our trap: what the process would have done without us. */
static void chain_trap(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *prev = &prev_traps[atomic_load(&prev_idx)];
	int slot;

	if (!chain_enter((pid_t)syscall(SYS_gettid), (uintptr_t)&slot, &slot)) {
		/* The handler we chained to called us back: it took us for its
		 * "previous" handler.  What comes after us is the default. */
		trap_default();
		return;
	}
	if (prev->sa_flags & SA_SIGINFO)
		prev->sa_sigaction(sig, si, uc);
	else if (prev->sa_handler == SIG_IGN && si->si_code != SI_KERNEL)
		;	/* an ignored trap someone sent: ignored */
	else if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN)
		trap_default();	/* a real trap is never ignored by the kernel either */
	else
		prev->sa_handler(sig);
	if (slot >= 0)
		atomic_store(&chaining[slot], 0);
}

static void trap_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP], to = 0;

	/* Sent by the kernel (SI_KERNEL for int3; valgrind says TRAP_BRKPT),
	 * not by raise() or kill(); the address decides the rest. */
	if (si->si_code > 0) {
		/* Count ourselves in before looking: the patcher frees a batch
		 * only once nobody is in here (see wait_for_traps()). */
		atomic_fetch_add(&traps_inflight, 1);
		to = our_trap(rip - 1, false);
		if (!to)
			to = our_trap(rip, true);
		atomic_fetch_sub(&traps_inflight, 1);
	}
	if (!to) {
		chain_trap(sig, si, ucv);
		return;
	}
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)to;
	atomic_fetch_add_explicit(&n_traps, 1, memory_order_relaxed);
}

/*
 * Install the handler, or put it back in front if the program replaced it
 * (a handler that is not ours would take our traps for crashes).  Every
 * signal is blocked while it runs: a program handler that interrupted it
 * and ran a site would trap with SIGTRAP blocked, which the kernel punishes
 * with death.
 */
static int trap_install(void)
{
	struct sigaction sa, cur;
	int next;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigfillset(&sa.sa_mask);
	next = !atomic_load(&prev_idx);
	prev_traps[next] = cur;
	atomic_store(&prev_idx, next);
	if (sigaction(SIGTRAP, &sa, NULL))
		return -errno;
	return 0;
}

static void wait_for_traps(void)
{
	while (atomic_load(&traps_inflight))
		sched_yield();
}

/* ---- the history of our sites ---------------------------------------------------- */

/* Publish @h and free the copy it replaces once no handler reads it. */
static void history_publish(struct history *h)
{
	struct history *old = atomic_exchange(&history, h);

	wait_for_traps();
	free(old);
}

/* Add the sites of @v (sorted) to the history; -ENOMEM changes nothing. */
static int history_add(const struct kk_poke *v, size_t n)
{
	struct history *old = atomic_load(&history), *h;
	size_t on = old ? old->n : 0, i = 0, j = 0, k = 0;

	for (size_t m = 0; m < n; m++)
		if (!history_has(old, v[m].addr))
			k++;
	if (!k)
		return 0;
	if (!(h = malloc(sizeof(*h) + (on + k) * sizeof(h->a[0]))))
		return -ENOMEM;
	for (k = 0; i < on || j < n;) {
		uintptr_t x = i < on ? old->a[i] : UINTPTR_MAX, y = j < n ? v[j].addr : UINTPTR_MAX;

		if (x <= y)
			i++;
		if (y <= x)
			j++;
		h->a[k++] = x < y ? x : y;
	}
	h->n = k;
	history_publish(h);
	return 0;
}

static void batch_retire(struct batch *b);
static void batch_free(struct batch *b);

/* A stuck batch loses the sites in [lo, hi): that text is going away. */
static void stuck_forget(uintptr_t lo, uintptr_t hi)
{
	struct batch *b = atomic_load(&cur_batch), *nb;
	size_t k = 0;

	if (!b || !b->stuck)
		return;
	if (!(nb = calloc(1, sizeof(*nb))) || !(nb->v = malloc(b->n * sizeof(*nb->v)))) {
		free(nb);
		return;
	}
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].addr < lo || b->v[i].addr >= hi)
			nb->v[k++] = b->v[i];
	nb->n = k;
	nb->stuck = 1;
	nb->owner = b->owner;
	atomic_store(&nb->committed, atomic_load(&b->committed));
	if (k) {
		atomic_store(&cur_batch, nb);
		wait_for_traps();
		batch_free(b);
	} else {
		batch_free(nb);
		batch_retire(b);
	}
}

void kk_text_forget(uintptr_t lo, uintptr_t hi)
{
	struct history *old = atomic_load(&history), *h;
	size_t k = 0;

	stuck_forget(lo, hi);
	if (!old)
		return;
	if (!(h = malloc(sizeof(*h) + old->n * sizeof(h->a[0]))))
		return;		/* a stale entry only matters for a foreign trap there */
	for (size_t i = 0; i < old->n; i++)
		if (old->a[i] < lo || old->a[i] >= hi)
			h->a[k++] = old->a[i];
	h->n = k;
	history_publish(h);
}

/* ---- writing text --------------------------------------------------------------- */

/*
 * /proc/self/mem, checked before every batch: the program may have closed
 * our descriptor (closefrom, close_range) or put a file of its own on the
 * number (dup2), and a descriptor inherited across fork points at the
 * parent's memory.  Such a number is forgotten, closed only if still ours,
 * and the file opened again.
 */
static int mem_open(void)
{
	int fd;

	if (mem.fd >= 0 && mem.pid == getpid() && kk_fd_ours(&mem))
		return 0;
	if (mem.fd >= 0)
		kk_fd_release(&mem);
	fd = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	fd = kk_fd_adopt(&mem, fd);
	return fd < 0 ? fd : 0;
}

static int write_proc_mem(uintptr_t addr, const uint8_t *buf, size_t len)
{
	/* Every write re-checks the number: never pwrite() into a file the
	 * program put there meanwhile. */
	int ret;

	if ((mem.fd < 0 || mem.pid != getpid() || !kk_fd_ours(&mem)) && (ret = mem_open()))
		return ret;
	while (len) {
		ssize_t w = pwrite(mem.fd, buf, len, (off_t)addr);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		addr += (size_t)w;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

/*
 * The protection of the mapping that holds @page (1), from /proc/self/maps read
 * with plain read(2) into a stack buffer (no stdio, no malloc: this also
 * runs under stop_machine, where another thread may hold malloc's lock);
 * where that cannot be read, from the ELF program header of the segment,
 * which is what the loader mapped text with.
 */
static int maps_prot(uintptr_t page, int *prot)
{
	char buf[4096];
	size_t have = 0;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line = buf, *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		while ((nl = strchr(line, '\n'))) {
			char *end;
			unsigned long lo = strtoul(line, &end, 16), hi;

			*nl = 0;
			if (*end == '-') {
				hi = strtoul(end + 1, &end, 16);
				if (*end == ' ' && page >= lo && page < hi && strlen(end) >= 4) {
					*prot = (end[1] == 'r' ? PROT_READ : 0) |
						(end[2] == 'w' ? PROT_WRITE : 0) |
						(end[3] == 'x' ? PROT_EXEC : 0);
					close(fd);
					return 1;
				}
			}
			line = nl + 1;
		}
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* a line longer than the buffer: not ours */
	}
	close(fd);
	return 0;
}

/* -ENOENT: @page is not mapped. */
static int page_prot(uintptr_t page)
{
	int prot = 0, ret = maps_prot(page, &prot);

	if (ret > 0)
		return prot;
	if (ret == 0)
		return -ENOENT;
	prot = kk_addr_segment_prot((const void *)page);
	if (prot < 0)
		return ret;
	kk_warn_once(maps_warned, "cannot read /proc/self/maps (%s): page protections "
		     "come from the ELF program headers", strerror(-ret));
	return prot;
}

/* Rewrite [addr, addr+len) inside one page by swapping in a rebuilt copy. */
static int write_remap(uintptr_t addr, const uint8_t *buf, size_t len)
{
	uintptr_t page = addr & ~(uintptr_t)(page_size - 1);
	int prot = page_prot(page);
	void *copy;

	if (prot < 0)
		return prot;
	if (prot & PROT_WRITE)
		prot &= ~PROT_EXEC;	/* never produce a W+X page */
	copy = mmap(NULL, (size_t)page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (copy == MAP_FAILED)
		return -errno;
	memcpy(copy, (const void *)page, (size_t)page_size);
	memcpy((uint8_t *)copy + (addr - page), buf, len);
	if (mprotect(copy, (size_t)page_size, prot) ||
	    mremap(copy, (size_t)page_size, (size_t)page_size, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)page) == MAP_FAILED) {
		int e = -errno;

		munmap(copy, (size_t)page_size);
		return e;
	}
	return 0;
}

static int write_span(int step, uintptr_t addr, const uint8_t *buf, size_t len)
{
	int ret = 0;

	if (kk_text_write_hook && (ret = kk_text_write_hook(step, addr, len)))
		return ret;
	if (method == M_PROC_MEM) {
		ret = write_proc_mem(addr, buf, len);
	} else {
		/* remap works page by page */
		for (size_t done = 0; done < len && !ret;) {
			uintptr_t a = addr + done;
			size_t room = (size_t)page_size - (a & (uintptr_t)(page_size - 1));
			size_t n = len - done < room ? len - done : room;

			ret = write_remap(a, buf + done, n);
			done += n;
		}
	}
	/* valgrind runs translations of the old bytes until told. */
	if (!ret && kk_under_valgrind())
		VALGRIND_DISCARD_TRANSLATIONS(addr, len);
	return ret;
}

/* KK_TEXT_POKE=auto (the default)|proc-mem|remap. */
static enum method forced_method(void)
{
	static const char *const how[] = { "auto", "proc-mem", "remap", NULL };
	static const enum method m[] = { M_UNKNOWN, M_PROC_MEM, M_REMAP };
	static int warned;

	return m[kk_env_choice("KK_TEXT_POKE", how, &warned)];
}

/*
 * Pick the write method on first use: /proc/self/mem unless the kernel
 * refuses it (proc_mem.force_override=never) or KK_TEXT_POKE=remap.  The
 * probe writes the byte @old over itself at @probe, a site of the batch:
 * @old comes from the caller because reading the text here could map back a
 * page that cow_prepare() just unmapped.
 */
static int choose_method(uintptr_t probe, uint8_t old, char *err, size_t errlen)
{
	enum method force;

	if (method == M_PROC_MEM && mem_open())
		method = M_UNKNOWN;
	if (method != M_UNKNOWN)
		goto out;
	force = forced_method();
	if (force != M_REMAP) {
		int ret = mem_open();

		if (!ret)
			ret = write_proc_mem(probe, &old, 1);
		if (!ret) {
			method = M_PROC_MEM;
			goto out;
		}
		if (force == M_PROC_MEM) {
			snprintf(err, errlen, "KK_TEXT_POKE=proc-mem, but /proc/self/mem refused "
				 "the write (%s)", strerror(-ret));
			return -EPERM;
		}
		kk_warn_once(mem_warned, "cannot write code through /proc/self/mem (%s): "
			     "patching by remapping pages instead", strerror(-ret));
	}
	method = M_REMAP;
	if (write_remap(probe, &old, 1))
		method = M_NONE;
out:
	if (method == M_NONE) {
		/* Not for good: the next change tries again (descriptors may
		 * be free again, a sandbox may have been lifted). */
		method = M_UNKNOWN;
		snprintf(err, errlen, "text cannot be written: /proc/self/mem and mremap both refused");
		return -EPERM;
	}
	return 0;
}

/*
 * What one write of a step puts on each site: STEP_DRY its current bytes,
 * STEP_INT3 an INT3 over the first byte, STEP_TAIL bytes 1..len-1 of the
 * target instruction, STEP_HEAD its first byte, STEP_ALL all of it (under
 * stop_machine).  The target is the new instruction, or the old one when a
 * failed batch is undone.  Sites are sorted, so the writes that start in one
 * page go out as one span; the bytes between them are rewritten with their
 * current value.
 */
enum step { STEP_DRY, STEP_INT3, STEP_TAIL, STEP_HEAD, STEP_ALL };

static void step_bytes(const struct kk_poke *p, enum step s, uintptr_t *lo, uintptr_t *hi)
{
	*lo = p->addr + (s == STEP_TAIL);
	*hi = (s == STEP_INT3 || s == STEP_HEAD) ? p->addr + 1 : p->addr + p->len;
}

/*
 * The span of step @s that starts with site @i: every site whose bytes of
 * this step start in the same page.  Returns the index after the last one.
 */
static size_t step_span(const struct kk_poke *v, size_t n, size_t i, enum step s,
			uintptr_t *lo, uintptr_t *hi)
{
	const uintptr_t mask = ~(uintptr_t)(page_size - 1);
	uintptr_t a, b;
	size_t j;

	step_bytes(&v[i], s, lo, hi);
	for (j = i + 1; j < n; j++) {
		step_bytes(&v[j], s, &a, &b);
		if ((a & mask) != (*lo & mask))
			break;
		*hi = b;
	}
	return j;
}

/* The bytes of span [lo, hi) of sites i..j-1 after step @s: reads the text. */
static void fill_span(uint8_t *span, const struct kk_poke *v, size_t i, size_t j, enum step s,
		      bool to_old, uintptr_t lo, uintptr_t hi)
{
	memcpy(span, (const void *)lo, hi - lo);
	for (size_t k = i; k < j && s != STEP_DRY; k++) {
		const uint8_t *insn = to_old ? v[k].old : v[k].new;
		uintptr_t a, b;

		step_bytes(&v[k], s, &a, &b);
		if (s == STEP_INT3)
			span[a - lo] = INT3;
		else
			memcpy(span + (a - lo), insn + (a - v[k].addr), b - a);
	}
}

/* Every span of step @s, computed now, back to back (see snapshot use). */
static uint8_t *snapshot_step(const struct kk_poke *v, size_t n, enum step s)
{
	size_t total = 0, i, off = 0;
	uint8_t *buf;

	for (i = 0; i < n;) {
		uintptr_t lo, hi;

		i = step_span(v, n, i, s, &lo, &hi);
		total += hi - lo;
	}
	if (!(buf = malloc(total)))
		return NULL;
	for (i = 0; i < n;) {
		uintptr_t lo, hi;
		size_t j = step_span(v, n, i, s, &lo, &hi);

		fill_span(buf + off, v, i, j, s, false, lo, hi);
		off += hi - lo;
		i = j;
	}
	return buf;
}

/* A buffer for one span: a page plus the tail of a site that crosses it. */
static uint8_t *span_buf(void)
{
	return malloc((size_t)page_size + KK_POKE_MAX);
}

/*
 * Write step @s for every site, one write per span, from @span (a span_buf)
 * or, with @pre, from the bytes snapshot_step() computed earlier.  @hook_step
 * is what the test hook sees.  Stops at the first failure.
 */
static int write_step(const struct kk_poke *v, size_t n, enum step s, bool to_old,
		      uint8_t *span, const uint8_t *pre, int hook_step)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret;) {
		uintptr_t lo, hi;
		size_t j = step_span(v, n, i, s, &lo, &hi);

		if (pre) {
			ret = write_span(hook_step, lo, pre, hi - lo);
			pre += hi - lo;
		} else {
			fill_span(span, v, i, j, s, to_old, lo, hi);
			ret = write_span(hook_step, lo, span, hi - lo);
		}
		i = j;
	}
	return ret;
}

/* ---- breaking copy-on-write in bulk ---------------------------------------------- */

/*
 * The first write to a page of a private file mapping copies the page.  When
 * the old page is mapped, the kernel must flush it from the TLB of every CPU
 * that runs the process: one IPI per page, 216 for the first +p over dynamic
 * debug's 16154 sites.  When the page is not mapped, the copy is made by the
 * fault and needs no flush.
 *
 * So before the first step, the pages the batch writes that still hold the
 * file's bytes (pagemap: present, file page, not swapped) are unmapped with
 * one process_madvise(MADV_DONTNEED) over all of them: one flush (Linux 6.16
 * batches the flush over the vector; 6.13 lets a process advise itself any
 * advice).  Unmapping such a page loses nothing, it faults back from the file
 * with the same bytes.  A page that is already private (an earlier patch, a
 * debugger's breakpoint, a text relocation) is never unmapped.  The dry run's
 * bytes are computed before the unmap, so that this thread reads no text
 * until the dry run has written its private copies.
 *
 * The limit: a thread that runs code on such a page between the unmap and
 * our write maps it back (fault-around maps 16 pages at a time), and our write
 * then pays the flush after all.  Where the site pages are cold, as debug
 * prints mostly are, the batch costs one flush; where other threads keep
 * running them, as in the dynamic-debug demo, it costs about what it did.
 *
 * Without process_madvise, pagemap or /proc, nothing is unmapped: the writes
 * break copy-on-write page by page as before.
 */
#define COW_MIN_PAGES	3	/* below this the flushes saved do not pay the syscalls */
#define PM_PRESENT	(1ull << 63)
#define PM_SWAP		(1ull << 62)
#define PM_FILE		(1ull << 61)
#define PIDFD_SELF_THREAD_ (-10000)	/* Linux 6.14: the calling thread (its mm) */

static long process_madvise_self(const struct iovec *iov, size_t n, int advice)
{
	long r = syscall(SYS_process_madvise, PIDFD_SELF_THREAD_, iov, n, advice, 0);
	int fd;

	if (r >= 0 || (errno != EBADF && errno != EINVAL))
		return r;
	fd = (int)syscall(SYS_pidfd_open, getpid(), 0);		/* before 6.14 */
	if (fd < 0)
		return -1;
	r = syscall(SYS_process_madvise, fd, iov, n, advice, 0);
	close(fd);
	return r;
}

/* Append page @pg to the ranges in @iov, merging with the last one. */
static void add_range(struct iovec *iov, size_t *n, uintptr_t pg)
{
	if (*n && (uintptr_t)iov[*n - 1].iov_base + iov[*n - 1].iov_len == pg) {
		iov[*n - 1].iov_len += (size_t)page_size;
		return;
	}
	iov[*n].iov_base = (void *)pg;
	iov[*n].iov_len = (size_t)page_size;
	(*n)++;
}

/*
 * The distinct pages that the batch writes, in order (v is sorted).  A site
 * that crosses a page boundary writes both pages.
 */
static uintptr_t *batch_pages(const struct kk_poke *v, size_t n, size_t *np)
{
	const uintptr_t mask = ~(uintptr_t)(page_size - 1);
	uintptr_t *pg = malloc(2 * n * sizeof(*pg));

	*np = 0;
	if (!pg)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		uintptr_t a = v[i].addr & mask, b = (v[i].addr + v[i].len - 1) & mask;

		if (!*np || pg[*np - 1] != a)
			pg[(*np)++] = a;
		if (b != a)
			pg[(*np)++] = b;
	}
	return pg;
}

/* Which of @pg[0..n) still hold the file's bytes, as ranges in @iov.  0 or -errno. */
static int file_pages(const uintptr_t *pg, size_t n, struct iovec *iov, size_t *niov)
{
	struct kk_fd pm = KK_FD_INIT;
	uint64_t ent[64];
	int ret = 0;

	*niov = 0;
	if ((ret = kk_fd_adopt(&pm, open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC))) < 0)
		return ret;
	ret = 0;
	for (size_t i = 0; i < n && !ret;) {
		size_t run = 1;		/* consecutive pages: one read */
		ssize_t got;

		while (i + run < n && run < 64 && pg[i + run] == pg[i] + run * (size_t)page_size)
			run++;
		got = pread(pm.fd, ent, run * sizeof(ent[0]),
			    (off_t)(pg[i] / (uintptr_t)page_size * sizeof(ent[0])));
		if (got != (ssize_t)(run * sizeof(ent[0]))) {
			ret = got < 0 ? -errno : -EIO;
			break;
		}
		for (size_t k = 0; k < run; k++)
			if ((ent[k] & (PM_PRESENT | PM_SWAP | PM_FILE)) == (PM_PRESENT | PM_FILE))
				add_range(iov, niov, pg[i + k]);
		i += run;
	}
	/* The reads count only if the number was ours all along. */
	if (!ret && !kk_fd_ours(&pm))
		ret = -EBADF;
	kk_fd_release(&pm);
	if (ret)
		*niov = 0;
	return ret;
}

/*
 * Unmap the batch's pages that still hold the file's bytes (see above).
 * Returns the dry run's bytes (or NULL: compute them as usual).
 */
static uint8_t *cow_prepare(const struct kk_poke *v, size_t n)
{
	size_t npg = 0, niov = 0;
	uintptr_t *pg = batch_pages(v, n, &npg);
	struct iovec *iov = NULL;
	uint8_t *pre = NULL;

	if (!pg || npg < COW_MIN_PAGES)
		goto out;
	if (!(iov = malloc(npg * sizeof(*iov))) || file_pages(pg, npg, iov, &niov) || !niov)
		goto out;
	if (!(pre = snapshot_step(v, n, STEP_DRY)))
		goto out;
	for (size_t i = 0; i < niov; i += 1024) {	/* UIO_MAXIOV per call */
		size_t k = niov - i < 1024 ? niov - i : 1024;

		if (process_madvise_self(iov + i, k, MADV_DONTNEED) < 0)
			break;
	}
out:
	free(pg);
	free(iov);
	return pre;
}

void kk_text_prepare(const uintptr_t *addrs, size_t n)
{
	const uintptr_t mask = ~(uintptr_t)(page_size - 1);
	uintptr_t last = 0;
	char err[200];

	kk_text_arm();
	if (!n || choose_method(addrs[0], *(volatile const uint8_t *)addrs[0], err, sizeof(err)) ||
	    method != M_PROC_MEM)
		return;		/* remap rebuilds pages on every write anyway */
	for (size_t i = 0; i < n; i++) {
		uint8_t b;

		if ((addrs[i] & mask) == last)
			continue;
		last = addrs[i] & mask;
		b = *(volatile const uint8_t *)addrs[i];
		write_proc_mem(addrs[i], &b, 1);
	}
}

/* ---- the batch -------------------------------------------------------------------- */

static int sync_round(void)
{
	atomic_fetch_add_explicit(&n_syncs, 1, memory_order_relaxed);
	return kk_sync_round();
}

static int poke_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct kk_poke *)a)->addr, y = ((const struct kk_poke *)b)->addr;

	return x < y ? -1 : x > y;
}

static uintptr_t insn_resume(uintptr_t addr, const uint8_t *insn)
{
	int32_t rel;

	if (insn[0] != JMP32)
		return addr + 5;
	memcpy(&rel, insn + 1, 4);
	return addr + 5 + (intptr_t)rel;
}

void kk_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	const volatile uint8_t *p = (const volatile uint8_t *)code;
	pid_t tracer;

	if (p[0] != INT3) {
		snprintf(buf, len, "does not hold a jump-label instruction: %02x %02x %02x %02x "
			 "%02x is neither a NOP nor a JMP to its target", p[0], p[1], p[2], p[3], p[4]);
		return;
	}
	tracer = kk_tracer_pid();
	if (tracer > 0)
		snprintf(buf, len, "does not hold a jump-label instruction: it holds int3 (0xcc), "
			 "which kernelkit did not write: a breakpoint of the debugger attached "
			 "as pid %d; delete it and retry", (int)tracer);
	else
		snprintf(buf, len, "does not hold a jump-label instruction: it holds int3 (0xcc), "
			 "which kernelkit did not write: a debugger breakpoint? (no tracer is "
			 "attached now)");
}

static int batch_check(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		if (!insn_ok(v[i].old, v[i].len) || !insn_ok(v[i].new, v[i].len)) {
			snprintf(err, errlen, "site %#lx: only 5-byte NOP <-> JMP rel32 can be patched",
				 (unsigned long)v[i].addr);
			return -EINVAL;
		}
		if (i && v[i - 1].addr + v[i - 1].len > v[i].addr) {
			snprintf(err, errlen, "sites %#lx and %#lx overlap",
				 (unsigned long)v[i - 1].addr, (unsigned long)v[i].addr);
			return -EINVAL;
		}
		if (memcmp((const void *)v[i].addr, v[i].old, v[i].len)) {
			char why[160];

			kk_text_site_problem(v[i].addr, why, sizeof(why));
			snprintf(err, errlen, "site %#lx %s", (unsigned long)v[i].addr, why);
			return -EILSEQ;
		}
		v[i].resume = insn_resume(v[i].addr, v[i].new);
		v[i].resume_old = insn_resume(v[i].addr, v[i].old);
	}
	return 0;
}

static struct batch *batch_new(const struct kk_poke *v, size_t n)
{
	struct batch *b = calloc(1, sizeof(*b));

	if (b && !(b->v = malloc(n * sizeof(*v)))) {
		free(b);
		return NULL;
	}
	if (b) {
		memcpy(b->v, v, n * sizeof(*v));
		b->n = n;
		b->owner = pthread_self();
	}
	return b;
}

static void batch_free(struct batch *b)
{
	if (b)
		free(b->v);
	free(b);
}

/* Unpublish @b and free it once no trap handler can be reading it. */
static void batch_retire(struct batch *b)
{
	atomic_store(&cur_batch, NULL);
	wait_for_traps();
	batch_free(b);
}

/*
 * Bring every site of @b to its final bytes, whatever a failed step left:
 * the new instruction if the batch committed, else the old one.  Tails
 * first, then heads, a sync after each, as in a batch: until the head is
 * written a thread traps (emulated) or runs the intact old instruction.
 */
static int batch_repair(struct batch *b, char *err, size_t errlen)
{
	bool to_old = !atomic_load(&b->committed);
	uint8_t *span = span_buf();
	int ret;

	if (!span)
		return -ENOMEM;
	ret = choose_method(b->v[0].addr, *(volatile const uint8_t *)b->v[0].addr, err, errlen);
	if (!ret)
		ret = write_step(b->v, b->n, STEP_TAIL, to_old, span, NULL, KK_STEP_REPAIR);
	if (!ret)
		ret = sync_round();
	if (!ret)
		ret = write_step(b->v, b->n, STEP_HEAD, to_old, span, NULL, KK_STEP_REPAIR);
	if (!ret)
		ret = sync_round();
	free(span);
	if (!ret)
		atomic_fetch_add_explicit(&n_repairs, 1, memory_order_relaxed);
	return ret;
}

/* A stuck batch from an earlier call is repaired before anything else. */
static int repair_stuck(char *err, size_t errlen)
{
	struct batch *b = atomic_load(&cur_batch);
	int ret;

	if (!b || !b->stuck)
		return 0;
	if ((ret = batch_repair(b, err, errlen))) {
		snprintf(err, errlen, "an earlier change could not finish writing its %zu sites (%s); "
			 "they are emulated until the text can be written again", b->n, strerror(-ret));
		return -EIO;
	}
	batch_retire(b);
	return 0;
}

/*
 * A write or sync failed after the first INT3.  Repair now if the text can
 * be written (another descriptor, the other method); else leave the batch
 * published as stuck: its sites keep being emulated.  The change took
 * effect if and only if it had committed.
 */
static int batch_failed(struct batch *b, int why, char *err, size_t errlen)
{
	bool took = atomic_load(&b->committed);
	char rerr[160] = "";

	if (!batch_repair(b, rerr, sizeof(rerr))) {
		batch_retire(b);
		if (took)
			return 0;
		snprintf(err, errlen, "writing text failed (%s); nothing changed", strerror(-why));
		return -EIO;
	}
	b->stuck = 1;
	if (took) {
		kk_warn("writing text failed (%s) after a change took effect: its %zu sites are "
			"emulated until the text can be written again", strerror(-why), b->n);
		return 0;
	}
	snprintf(err, errlen, "writing text failed (%s); nothing changed, and %zu sites are "
		 "emulated until the text can be written again", strerror(-why), b->n);
	return -EIO;
}

/* The int3 protocol (see the top of the file). */
static int patch_int3(struct batch *b, char *err, size_t errlen)
{
	uint8_t *span = span_buf();
	int ret;

	if (!span) {
		batch_free(b);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	atomic_store(&cur_batch, b);
	ret = write_step(b->v, b->n, STEP_INT3, false, span, NULL, KK_STEP_INT3);
	if (!ret)
		ret = sync_round();
	if (!ret)
		ret = write_step(b->v, b->n, STEP_TAIL, false, span, NULL, KK_STEP_TAIL);
	if (!ret)
		ret = sync_round();
	if (!ret) {
		/* The point where the change takes effect: traps emulate the new
		 * instruction from now on, and a failure finishes, not undoes. */
		atomic_store(&b->committed, 1);
		ret = write_step(b->v, b->n, STEP_HEAD, false, span, NULL, KK_STEP_HEAD);
	}
	if (!ret)
		ret = sync_round();
	free(span);
	if (ret)
		return batch_failed(b, ret, err, errlen);
	batch_retire(b);
	return 0;
}

/* stop_machine: nobody else runs, so whole instructions go out at once. */
struct stop_args {
	struct batch *b;
	uint8_t *span;
	int undo_failed;
};

static int stop_write(void *arg)
{
	struct stop_args *a = arg;
	int ret = write_step(a->b->v, a->b->n, STEP_ALL, false, a->span, NULL, KK_STEP_STOP);

	if (ret && write_step(a->b->v, a->b->n, STEP_ALL, true, a->span, NULL, KK_STEP_REPAIR))
		a->undo_failed = 1;
	return ret;
}

static int patch_stopped(struct batch *b, char *err, size_t errlen)
{
	struct stop_args a = { b, span_buf(), 0 };
	int ret;

	if (!a.span) {
		batch_free(b);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = kk_stop_machine(stop_write, &a, err, errlen);
	if (ret > 0)
		ret = -EIO;
	if (ret && a.undo_failed)
		snprintf(err, errlen, "writing text failed (%s) with other threads stopped, and so "
			 "did undoing it: some of %zu sites changed", strerror(-ret), b->n);
	else if (ret && !err[0])
		snprintf(err, errlen, "writing text failed (%s); nothing changed", strerror(-ret));
	if (!ret)
		atomic_fetch_add_explicit(&n_stopped, 1, memory_order_relaxed);
	free(a.span);
	batch_free(b);
	return ret;
}

/* Step 0: every page of the batch, written with its own bytes. */
static int dry_run(struct batch *b, const uint8_t *pre, char *err, size_t errlen)
{
	uint8_t *span = pre ? NULL : span_buf();
	int ret;

	if (!pre && !span)
		ret = -ENOMEM;
	else
		ret = write_step(b->v, b->n, STEP_DRY, false, span, pre, KK_STEP_DRY);
	free(span);
	if (ret)
		snprintf(err, errlen, "text cannot be written (%s); nothing changed", strerror(-ret));
	return ret == -EACCES ? -EPERM : ret == -EPERM || ret == -ENOMEM ? ret : ret ? -EIO : 0;
}

int kk_text_poke_batch(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	struct batch *b;
	uint8_t *pre = NULL;
	int how, ret;

	if (!n)
		return 0;
	kk_text_arm();
	if ((ret = repair_stuck(err, errlen)))
		return ret;
	qsort(v, n, sizeof(*v), poke_cmp);
	if ((ret = batch_check(v, n, err, errlen)))
		return ret;
	if ((how = kk_sync_plan(err, errlen)) < 0)
		return how;
	if (how == KK_PATCH_INT3 && (ret = trap_install())) {
		snprintf(err, errlen, "cannot install the SIGTRAP handler (%s)", strerror(-ret));
		return ret;
	}
	if (!(b = batch_new(v, n)) || (how == KK_PATCH_INT3 && history_add(b->v, n))) {
		batch_free(b);
		snprintf(err, errlen, "out of memory for a batch of %zu sites", n);
		return -ENOMEM;
	}
	/* From here this thread reads no text until the dry run wrote it. */
	if ((method == M_PROC_MEM || method == M_UNKNOWN) && !kk_under_valgrind())
		pre = cow_prepare(v, n);	/* valgrind knows no process_madvise */
	ret = choose_method(v[0].addr, v[0].old[0], err, errlen);
	if (!ret)
		ret = dry_run(b, pre, err, errlen);
	free(pre);
	if (ret) {
		batch_free(b);
		return ret;
	}
	ret = how == KK_PATCH_STOP ? patch_stopped(b, err, errlen) : patch_int3(b, err, errlen);
	if (!ret) {
		atomic_fetch_add_explicit(&n_batches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&n_pokes, n, memory_order_relaxed);
	}
	return ret;
}

/* ---- sites ------------------------------------------------------------------------ */

/* The bytes site @code behaves as: a stuck batch's sites as their final bytes. */
static void site_bytes(uintptr_t code, uint8_t out[5])
{
	struct batch *b = atomic_load(&cur_batch);
	struct kk_poke *p = b && b->stuck ? poke_find(b->v, b->n, code) : NULL;

	if (p)
		memcpy(out, atomic_load(&b->committed) ? p->new : p->old, 5);
	else
		memcpy(out, (const void *)code, 5);
}

int kk_arch_site_state(uintptr_t code, uintptr_t target)
{
	uint8_t p[5];
	int32_t rel;

	site_bytes(code, p);
	if (!memcmp(p, nop5, 5))
		return 0;
	memcpy(&rel, p + 1, 4);
	if (p[0] == JMP32 && code + 5 + (intptr_t)rel == target)
		return 1;
	return -EILSEQ;
}

static void make_insn(uint8_t *out, uintptr_t code, uintptr_t target, bool jump)
{
	int32_t rel = (int32_t)(target - (code + 5));

	if (!jump) {
		memcpy(out, nop5, 5);
		return;
	}
	out[0] = JMP32;
	memcpy(out + 1, &rel, 4);
}

void kk_arch_site_poke(struct kk_poke *p, uintptr_t code, uintptr_t target, bool jump)
{
	memset(p, 0, sizeof(*p));
	p->addr = code;
	p->len = 5;
	make_insn(p->old, code, target, !jump);
	make_insn(p->new, code, target, jump);
}

/* ---- setup ------------------------------------------------------------------------ */

void kk_text_arm(void)
{
	if (armed)
		return;
	armed = 1;
	page_size = sysconf(_SC_PAGESIZE);	/* from the auxiliary vector */
	kk_sync_arm();
}

void kk_text_atfork_child(void)
{
	struct batch *b = atomic_load(&cur_batch);
	char err[160];

	/* The child has a new mm: membarrier registers again with its first
	 * batch, and the parent's /proc/self/mem descriptor points at the
	 * parent: closed now, if the number is still ours, so that no child
	 * (an unprivileged one included) keeps a way to write its parent's
	 * memory.  Threads in our handlers did not come along. */
	armed = 0;
	kk_sync_atfork_child();
	kk_fd_release_inherited(&mem);
	atomic_store(&traps_inflight, 0);
	for (int i = 0; i < CHAIN_SLOTS; i++)
		atomic_store(&chaining[i], 0);
	/*
	 * A batch in flight stays published: its INT3s are in the child's text
	 * too.  If this thread is its patcher (fork() from a signal handler
	 * that interrupted it), the batch goes on when the handler returns;
	 * a stuck batch waits for the next change, as in the parent.  Else the
	 * patcher stayed behind: finish here, alone, where no sync is needed.
	 */
	if (b && !b->stuck && !pthread_equal(b->owner, pthread_self())) {
		kk_text_arm();
		if (batch_repair(b, err, sizeof(err)))
			b->stuck = 1;
		else
			batch_retire(b);
	}
}

void kk_text_get_stats(struct kk_text_stats *st)
{
	struct batch *b = atomic_load(&cur_batch);

	st->syncs = atomic_load(&n_syncs);
	st->batches = atomic_load(&n_batches);
	st->pokes = atomic_load(&n_pokes);
	st->traps = atomic_load(&n_traps);
	st->stopped = atomic_load(&n_stopped);
	st->repairs = atomic_load(&n_repairs);
	st->stuck = b && b->stuck ? b->n : 0;
}

const char *kk_text_method(void)
{
	switch (method) {
	case M_PROC_MEM: return "proc-mem";
	case M_REMAP: return "remap";
	case M_NONE: return "none";
	default: return "unused";
	}
}
