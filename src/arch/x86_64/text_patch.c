// SPDX-License-Identifier: MIT
/*
 * x86_64 cross-modifying code, the way the kernel's text_poke batch does it:
 *
 *   1. write INT3 over the first byte of every site in the batch;   sync
 *   2. write the new bytes 1..n-1 of every site;                      sync
 *   3. write the new first byte of every site;                        sync
 *
 * "sync" is membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE): every CPU
 * that runs a thread of this process executes a core-serializing instruction,
 * which is what the SDM asks for before another CPU may run modified code.
 * A thread that reaches a site between steps 1 and 3 traps on the INT3; our
 * SIGTRAP handler finds the site by binary search in the sorted batch and
 * resumes it where the new instruction would have sent it.  So one batch costs
 * three syncs however many sites it holds.
 *
 * Text is never writable and executable at once.  Bytes are written through
 * /proc/self/mem (FOLL_FORCE writes into a private copy of the page while the
 * mapping stays r-x).  Where that is refused, each touched page is rebuilt in
 * a fresh anonymous page, sealed r-x and swapped in with mremap(), which other
 * threads see atomically.  Writes are grouped per page: one write per page per
 * step, not one per site.
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
#include <linux/membarrier.h>
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

#include "common.h"
#include "internal.h"
#include "text_patch.h"

#define INT3 0xcc
#define JMP32 0xe9
static const uint8_t nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };

enum method { M_UNKNOWN, M_PROC_MEM, M_REMAP, M_NONE };

/* The batch in flight, read by the trap handler. */
struct batch {
	const struct kk_poke *v;
	size_t n;
};

static _Atomic(const struct batch *) cur_batch;
static atomic_int traps_inflight;
static struct sigaction prev_trap;	/* the handler we chain to */

static int armed;		/* kk_text_arm() ran (under the registry lock) */
static int membarrier_ok;
static enum method method = M_UNKNOWN;
static struct kk_fd mem = KK_FD_INIT;	/* /proc/self/mem */
static long page_size;

static atomic_ullong n_syncs, n_batches, n_pokes, n_traps;

/* ---- the trap handler ---------------------------------------------------------- */

static const struct kk_poke *batch_find(const struct batch *b, uintptr_t ip)
{
	size_t lo = 0, hi = b->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->v[mid].addr == ip)
			return &b->v[mid];
		if (b->v[mid].addr < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void chain_trap(int sig, siginfo_t *si, void *uc)
{
	if (prev_trap.sa_flags & SA_SIGINFO) {
		prev_trap.sa_sigaction(sig, si, uc);
	} else if (prev_trap.sa_handler == SIG_IGN && si->si_code != SI_KERNEL) {
		return;
	} else if (prev_trap.sa_handler == SIG_DFL || prev_trap.sa_handler == SIG_IGN) {
		/* Not ours: die the way the process would have without us. */
		signal(SIGTRAP, SIG_DFL);
		raise(SIGTRAP);	/* delivered as this handler returns */
	} else {
		prev_trap.sa_handler(sig);
	}
}

static void trap_handler(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t ip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP] - 1;
	const struct kk_poke *p = NULL;
	const struct batch *b;

	if (si->si_code != SI_KERNEL) {		/* raise(), kill(), single-step ... */
		chain_trap(sig, si, ucv);
		return;
	}
	/* Count ourselves in before looking at the batch: the patcher frees it
	 * only once nobody is in here (see wait_for_traps()). */
	atomic_fetch_add(&traps_inflight, 1);
	b = atomic_load(&cur_batch);
	if (b)
		p = batch_find(b, ip);
	if (p) {
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)p->resume;
		atomic_fetch_add_explicit(&n_traps, 1, memory_order_relaxed);
	} else if (*(volatile const uint8_t *)ip != INT3) {
		/* Our INT3, but its batch finished before this thread got here:
		 * the site holds its new instruction now, so run that. */
		uc->uc_mcontext.gregs[REG_RIP] = (greg_t)ip;
		atomic_fetch_add_explicit(&n_traps, 1, memory_order_relaxed);
	} else {
		atomic_fetch_sub(&traps_inflight, 1);
		chain_trap(sig, si, ucv);
		return;
	}
	atomic_fetch_sub(&traps_inflight, 1);
}

/* Install the handler, or put it back in front if the program replaced it. */
static int trap_install(void)
{
	struct sigaction sa, cur;

	if (sigaction(SIGTRAP, NULL, &cur))
		return -errno;
	if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == trap_handler)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = trap_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	prev_trap = cur;
	if (sigaction(SIGTRAP, &sa, NULL))
		return -errno;
	return 0;
}

static void wait_for_traps(void)
{
	while (atomic_load(&traps_inflight))
		sched_yield();
}

/* ---- syncs --------------------------------------------------------------------- */

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void membarrier_register(void)
{
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);

	membarrier_ok = cmds > 0 && (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE) == 0;
}

static int nr_threads(void)
{
	char line[256];
	int n = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %d", &n) == 1)
			break;
	fclose(f);
	return n;
}

static int text_sync(void)
{
	if (!membarrier_ok)
		return 0;	/* only reached single-threaded, see can_sync() */
	atomic_fetch_add_explicit(&n_syncs, 1, memory_order_relaxed);
	if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return -errno;
	return 0;
}

static int can_sync(char *err, size_t errlen)
{
	if (membarrier_ok || nr_threads() == 1)
		return 0;
	snprintf(err, errlen, "membarrier SYNC_CORE is unavailable and other threads run: "
		 "cannot patch code safely");
	return -ENOTSUP;
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
 * The protection of the mapping that holds @page, from /proc/self/maps; where
 * that cannot be read (no /proc, no descriptor to spare), from the ELF program
 * header of the segment, which is what the loader mapped text with.
 */
static int page_prot(uintptr_t page)
{
	char line[512], perm[5];
	unsigned long lo, hi;
	int prot = -ENOENT;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f) {
		int e = errno;

		prot = kk_addr_segment_prot((const void *)page);
		if (prot < 0)
			return -e;
		kk_warn_once(maps_warned, "cannot read /proc/self/maps (%s): page protections "
			     "come from the ELF program headers", strerror(e));
		return prot;
	}
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perm) != 3)
			continue;
		if (page >= lo && page < hi) {
			prot = (perm[0] == 'r' ? PROT_READ : 0) | (perm[1] == 'w' ? PROT_WRITE : 0) |
			       (perm[2] == 'x' ? PROT_EXEC : 0);
			break;
		}
	}
	fclose(f);
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

static int write_span(uintptr_t addr, const uint8_t *buf, size_t len)
{
	if (method == M_PROC_MEM)
		return write_proc_mem(addr, buf, len);
	/* remap works page by page */
	while (len) {
		size_t room = (size_t)page_size - (addr & (uintptr_t)(page_size - 1));
		size_t n = len < room ? len : room;
		int ret = write_remap(addr, buf, n);

		if (ret)
			return ret;
		addr += n;
		buf += n;
		len -= n;
	}
	return 0;
}

/* KK_TEXT_POKE=proc-mem|remap|auto (the default). */
static enum method forced_method(void)
{
	const char *v = kk_getenv("KK_TEXT_POKE");

	if (!v || !*v || !strcmp(v, "auto"))
		return M_UNKNOWN;
	if (!strcmp(v, "proc-mem"))
		return M_PROC_MEM;
	if (!strcmp(v, "remap"))
		return M_REMAP;
	kk_warn_once(kk_text_poke_warned, "ignoring KK_TEXT_POKE=%.32s: use proc-mem, remap or auto",
		     v);
	return M_UNKNOWN;
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
	if (write_span(probe, &old, 1))
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
 * One step of the protocol for every site: STEP_INT3 writes INT3 over the
 * first byte, STEP_TAIL the new bytes 1..len-1, STEP_HEAD the new first byte.
 * Sites are sorted, so the writes that start in one page go out as one span;
 * the bytes between them are rewritten with their current value.
 */
enum step { STEP_INT3, STEP_TAIL, STEP_HEAD };

static void step_bytes(const struct kk_poke *p, enum step s, uintptr_t *lo, uintptr_t *hi)
{
	*lo = p->addr + (s == STEP_TAIL);
	*hi = s == STEP_TAIL ? p->addr + p->len : p->addr + 1;
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
		      uintptr_t lo, uintptr_t hi)
{
	memcpy(span, (const void *)lo, hi - lo);
	for (size_t k = i; k < j; k++) {
		uintptr_t a, b;

		step_bytes(&v[k], s, &a, &b);
		if (s == STEP_INT3)
			span[a - lo] = INT3;
		else
			memcpy(span + (a - lo), v[k].new + (a - v[k].addr), b - a);
	}
}

/*
 * Write step @s for every site, one write per span.  With @pre, the spans'
 * bytes come from there (see snapshot_step) instead of from the text.
 */
static int write_step(const struct kk_poke *v, size_t n, enum step s, const uint8_t *pre)
{
	uint8_t *span = pre ? NULL : malloc((size_t)page_size + KK_POKE_MAX);
	size_t i = 0;
	int ret = 0;

	if (!pre && !span)
		return -ENOMEM;
	while (i < n && !ret) {
		uintptr_t lo, hi;
		size_t j = step_span(v, n, i, s, &lo, &hi);

		if (pre) {
			ret = write_span(lo, pre, hi - lo);
			pre += hi - lo;
		} else {
			fill_span(span, v, i, j, s, lo, hi);
			ret = write_span(lo, span, hi - lo);
		}
		i = j;
	}
	free(span);
	return ret;
}

/* Every span of step @s, computed now, back to back: input for write_step. */
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

		fill_span(buf + off, v, i, j, s, lo, hi);
		off += hi - lo;
		i = j;
	}
	return buf;
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
 * debugger's breakpoint, a text relocation) is never unmapped.  The step-1
 * bytes are computed before the unmap, so that this thread reads no text
 * until step 1 has written its private copies.
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
 * Returns the step-1 bytes to write (or NULL: compute them as usual).
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
	if (!(pre = snapshot_step(v, n, STEP_INT3)))
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

static int insn_ok(const uint8_t *insn, uint8_t len)
{
	return len == 5 && (insn[0] == JMP32 || !memcmp(insn, nop5, 5));
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
			snprintf(err, errlen, "site %#lx does not hold the expected instruction",
				 (unsigned long)v[i].addr);
			return -EILSEQ;
		}
		v[i].resume = insn_resume(v[i].addr, v[i].new);
	}
	return 0;
}

/* Put every site back to its old bytes after a failed step (best effort). */
static void batch_undo(struct kk_poke *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint8_t t[KK_POKE_MAX];

		memcpy(t, v[i].new, v[i].len);
		memcpy(v[i].new, v[i].old, v[i].len);
		memcpy(v[i].old, t, v[i].len);
		__atomic_store_n(&v[i].resume, insn_resume(v[i].addr, v[i].new), __ATOMIC_RELEASE);
	}
	write_step(v, n, STEP_INT3, NULL);
	text_sync();
	write_step(v, n, STEP_TAIL, NULL);
	text_sync();
	write_step(v, n, STEP_HEAD, NULL);
	text_sync();
}

int kk_text_poke_batch(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	struct batch b = { v, n };
	uint8_t *pre = NULL;
	int ret;

	if (!n)
		return 0;
	kk_text_arm();
	qsort(v, n, sizeof(*v), poke_cmp);
	ret = batch_check(v, n, err, errlen);
	if (!ret)
		ret = can_sync(err, errlen);
	if (!ret && (ret = trap_install()))
		snprintf(err, errlen, "cannot install the SIGTRAP handler");
	if (ret)
		return ret;
	/* From here this thread reads no text until step 1 is written. */
	if (method == M_PROC_MEM || method == M_UNKNOWN)
		pre = cow_prepare(v, n);
	if ((ret = choose_method(v[0].addr, v[0].old[0], err, errlen))) {
		free(pre);
		return ret;
	}

	atomic_store(&cur_batch, &b);
	ret = write_step(v, n, STEP_INT3, pre);
	if (!ret)
		ret = text_sync();
	if (!ret)
		ret = write_step(v, n, STEP_TAIL, NULL);
	if (!ret)
		ret = text_sync();
	if (!ret)
		ret = write_step(v, n, STEP_HEAD, NULL);
	if (!ret)
		ret = text_sync();
	if (ret) {
		snprintf(err, errlen, "writing text failed (%s); sites restored", strerror(-ret));
		batch_undo(v, n);
		ret = -EIO;
	}
	atomic_store(&cur_batch, NULL);
	wait_for_traps();
	free(pre);
	if (!ret) {
		atomic_fetch_add_explicit(&n_batches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&n_pokes, n, memory_order_relaxed);
	}
	return ret;
}

/* ---- sites ------------------------------------------------------------------------ */

int kk_arch_site_state(uintptr_t code, uintptr_t target)
{
	const uint8_t *p = (const uint8_t *)code;
	int32_t rel;

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
	membarrier_register();
}

void kk_text_atfork_child(void)
{
	/* The child has a new mm: its membarrier state starts unregistered
	 * (registered again with its first batch, if it ever patches), and the
	 * parent's /proc/self/mem descriptor points at the parent: closed now,
	 * if the number is still ours, so that no child (an unprivileged one
	 * included) keeps a way to write its parent's memory. */
	armed = 0;
	membarrier_ok = 0;
	kk_fd_release_inherited(&mem);
	atomic_store(&cur_batch, NULL);
	atomic_store(&traps_inflight, 0);
}

void kk_text_get_stats(struct kk_text_stats *st)
{
	st->syncs = atomic_load(&n_syncs);
	st->batches = atomic_load(&n_batches);
	st->pokes = atomic_load(&n_pokes);
	st->traps = atomic_load(&n_traps);
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
