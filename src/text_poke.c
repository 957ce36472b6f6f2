// SPDX-License-Identifier: MIT
/*
 * Text poking, the generic half (the kernel's text_poke_queue() and
 * text_poke_finish(), with what a process needs around them):
 *
 *   0. check every site's old bytes and new instruction (the arch says which
 *      instructions it can swap), plan how other threads will be reached
 *      (kk_sync_plan: membarrier, signals, or stop_machine);
 *   1. the dry run: write every page the batch touches with its own bytes,
 *      which proves, before anything changes, that every write will work;
 *   2. the arch's live protocol (src/arch/<arch>/text_patch.c) writes the
 *      batch with kk_text_write() and kk_text_sync(): x86 puts int3 on every
 *      site first, aarch64 writes each site's word whole; or, under
 *      stop_machine, every site is written at once while nobody runs.
 *
 * Failure changes nothing.  If a write still fails after the dry run (a
 * descriptor closed under us, out of memory), the arch repairs the batch at
 * once, to its new bytes if the change had taken effect and to its old ones
 * if not; if the text cannot be written even then, the batch stays
 * published as "stuck" (x86's trap handler keeps emulating its sites), and
 * is repaired before the next batch.
 *
 * Text is never writable and executable at once.  Bytes are written through
 * /proc/self/mem (FOLL_FORCE writes into a private copy of the page while the
 * mapping stays r-x).  Where that is refused, each touched page is rebuilt in
 * a fresh private mapping of its file (copy_map()), sealed r-x and swapped in
 * with mremap(), which other threads see atomically.  Under valgrind each write discards the
 * translations of the range it wrote.
 *
 * Pages that hold sites stay shared with the file (and other processes) until
 * a site on them first changes; see cow_prepare() for how the first batch
 * breaks copy-on-write on many pages with one TLB flush.
 *
 * Nothing here runs at load time.  Membarrier registration happens when the
 * first object with sites registers (kk_text_arm), /proc/self/mem is opened
 * with the first batch.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif
#ifndef VALGRIND_DISCARD_TRANSLATIONS
#define VALGRIND_DISCARD_TRANSLATIONS(a, l) ((void)(a), (void)(l))
#endif
#if defined(__has_include)
#if __has_include(<valgrind/helgrind.h>)
#include <valgrind/helgrind.h>
#endif
#endif
#ifndef VALGRIND_HG_DISABLE_CHECKING
#define VALGRIND_HG_DISABLE_CHECKING(a, l) ((void)(a), (void)(l))
#endif

#include "common/internal.h"
#include "text_poke.h"
#include "text_sync.h"

enum method { M_UNKNOWN, M_PROC_MEM, M_REMAP, M_NONE };

_Atomic(struct kk_text_batch *) kk_text_cur;

static int armed;		/* kk_text_arm() ran (under the registry lock) */
static enum method forced_method(void);
static enum method method = M_UNKNOWN;
static struct kk_fd mem = KK_FD_INIT;	/* /proc/self/mem */
static long page_size;

int (*kk_text_write_hook)(int step, unsigned long addr, unsigned long len);
void (*kk_text_trap_hook)(int stage);

static atomic_ullong n_syncs, n_batches, n_pokes, n_stopped, n_swapped, n_repairs;

/*
 * The trap handler's hooks, for a protocol that has none (aarch64, and the
 * generic stubs): weak, as the kernel's __weak arch hooks, so that only an
 * arch with traps (x86_64) defines them.
 */
__attribute__((__weak__)) int kk_arch_text_begin(struct kk_text_batch *b, char *err,
						 size_t errlen)
{
	(void)b;
	(void)err;
	(void)errlen;
	return 0;
}

__attribute__((__weak__)) void kk_arch_text_quiesce(void) {}

__attribute__((__weak__)) void kk_arch_text_forget(uintptr_t lo, uintptr_t hi)
{
	(void)lo;
	(void)hi;
}

__attribute__((__weak__)) void kk_arch_text_atfork_child(void) {}

__attribute__((__weak__)) unsigned long long kk_arch_text_traps_taken(void)
{
	return 0;
}

/* No traps, so no window and nothing handed back. */
__attribute__((__weak__)) int kk_arch_trap_handler_ready(void)
{
	return -ENOTSUP;
}

__attribute__((__weak__)) bool kk_arch_trap_chains_program(void)
{
	return false;
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
 * One line of /proc/self/maps: the mapping [lo, hi), its protection, and
 * what it maps (ino 0: anonymous).  @path, if not NULL, gets the file's
 * name (PATH_MAX bytes of room), "" if the line names none.
 */
struct maps_ent {
	uintptr_t lo, hi;
	int prot;
	unsigned long long off, ino;
	unsigned int dev_major, dev_minor;
	char *path;
};

/* A line of maps against [@from, @to): -1 before it, 0 past it, 1 overlapping
 * (then parsed into @e). */
static int maps_parse(char *line, uintptr_t from, uintptr_t to, struct maps_ent *e)
{
	char *p;

	e->lo = strtoul(line, &p, 16);
	if (*p != '-')
		return -1;
	e->hi = strtoul(p + 1, &p, 16);
	if (*p != ' ' || e->hi <= from || strlen(p) < 5)
		return -1;
	if (e->lo >= to)
		return 0;
	e->prot = (p[1] == 'r' ? PROT_READ : 0) | (p[2] == 'w' ? PROT_WRITE : 0) |
		  (p[3] == 'x' ? PROT_EXEC : 0);
	e->off = strtoull(p + 5, &p, 16);
	e->dev_major = (unsigned int)strtoul(p, &p, 16);
	e->dev_minor = (unsigned int)strtoul(*p == ':' ? p + 1 : p, &p, 16);
	e->ino = strtoull(p, &p, 10);
	if (e->path) {
		while (*p == ' ')
			p++;
		snprintf(e->path, PATH_MAX, "%s", p);
	}
	return 1;
}

/* The lines of @text (NUL-terminated, each put back as it was) against
 * [@from, @to), to @fn; sets *@found; false once the scan is over.  Returns
 * where the last whole line ended. */
static char *maps_lines(char *text, uintptr_t from, uintptr_t to, struct maps_ent *e,
			bool (*fn)(const struct maps_ent *e, void *arg), void *arg, int *found,
			bool *more)
{
	char *line = text, *nl;

	while (*more && (nl = strchr(line, '\n'))) {
		int at;

		*nl = 0;
		at = maps_parse(line, from, to, e);
		*nl = '\n';
		if (at > 0)
			*found = 1;
		*more = at < 0 || (at > 0 && fn(e, arg));
		line = nl + 1;
	}
	return line;
}

/*
 * A page swap reads the maps once for its batch (maps_snapshot()): each
 * read formats lines, file names included (the kernel's mangle_path() was
 * the first cost of a swap in a profile), and a text split by many swaps
 * has many lines.  Only the lines up to the batch's last page are read;
 * text is mapped low, so that is often the first few.  The batch builds
 * every copy before it moves any, so the snapshot holds until the first
 * mremap().
 */
static char *maps_snap;

/* Whether @buf[from..to) holds the end of a line that starts at or past @until. */
static bool maps_past(const char *buf, size_t from, size_t to, uintptr_t until)
{
	for (size_t i = from; i < to; i++) {
		if (buf[i] != '\n')
			continue;
		/* the line that ends here starts after the previous newline */
		size_t st = i;

		while (st > 0 && buf[st - 1] != '\n')
			st--;
		if (strtoul(buf + st, NULL, 16) >= until)
			return true;
	}
	return false;
}

static char *maps_snapshot(uintptr_t until)
{
	size_t cap = 1 << 14, have = 0;
	char *buf = malloc(cap), *nb;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	while (buf && fd >= 0) {
		ssize_t r = read(fd, buf + have, cap - 1 - have);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		if (maps_past(buf, have - (size_t)r, have, until))
			break;
		if (have == cap - 1) {
			nb = realloc(buf, cap *= 2);
			if (!nb)
				free(buf);
			buf = nb;
		}
	}
	if (fd >= 0)
		close(fd);
	if (buf && fd < 0) {
		free(buf);
		return NULL;
	}
	if (buf)
		buf[have] = 0;
	return buf;
}

static void maps_snapshot_drop(void)
{
	free(maps_snap);
	maps_snap = NULL;
}

/*
 * Each line of /proc/self/maps that overlaps [@from, @to), in address
 * order, to @fn until it returns false (@e->path as the caller set it).
 * From the batch's snapshot if there is one, else read with plain read(2)
 * into a stack buffer (no stdio, no malloc: this also runs under
 * stop_machine, where another thread may hold malloc's lock).  1 if a line
 * overlapped, 0 if none, or -errno.
 */
static int maps_scan(uintptr_t from, uintptr_t to, struct maps_ent *e,
		     bool (*fn)(const struct maps_ent *e, void *arg), void *arg)
{
	char buf[4096];
	size_t have = 0;
	int fd, found = 0;
	bool more = true;

	if (maps_snap) {
		maps_lines(maps_snap, from, to, e, fn, arg, &found, &more);
		return found;
	}
	if ((fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	while (more) {
		ssize_t r = read(fd, buf + have, sizeof(buf) - 1 - have);
		char *line;

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		have += (size_t)r;
		buf[have] = 0;
		line = maps_lines(buf, from, to, e, fn, arg, &found, &more);
		have = (size_t)(buf + have - line);
		memmove(buf, line, have);
		if (have == sizeof(buf) - 1)
			have = 0;	/* a line longer than the buffer: not ours */
	}
	close(fd);
	return found;
}

static bool maps_first(const struct maps_ent *e, void *arg)
{
	(void)e;
	(void)arg;
	return false;
}

/* The protection of the mapping that holds @page (1), and where it ends. */
static int maps_prot(uintptr_t page, int *prot, uintptr_t *mend)
{
	struct maps_ent e = { .path = NULL };
	int ret = maps_scan(page, page + 1, &e, maps_first, NULL);

	if (ret > 0) {
		*prot = e.prot;
		*mend = e.hi;
	}
	return ret;
}

/* Where the copy of a range comes from: one file, mapped whole by mappings
 * that follow on in address and offset (each swap splits one). */
struct copy_src {
	unsigned long long ino, off;	/* the file offset of the range's start */
	unsigned int dev_major, dev_minor;
	uintptr_t lo, next;		/* the range; where the next line must start */
	bool ok;
	char path[PATH_MAX];
	int fd;				/* open on it, or -1 */
};

static bool src_line(const struct maps_ent *e, void *arg)
{
	struct copy_src *s = arg;

	if (s->next == 0) {	/* the first line */
		s->ok = e->ino && e->path[0] == '/';
		s->ino = e->ino;
		s->dev_major = e->dev_major;
		s->dev_minor = e->dev_minor;
		s->off = e->off + (s->lo - e->lo);
		snprintf(s->path, sizeof(s->path), "%s", e->path);
	} else {
		s->ok = s->ok && e->lo == s->next && e->ino == s->ino &&
			e->dev_major == s->dev_major && e->dev_minor == s->dev_minor &&
			e->off == s->off + (e->lo - s->lo) && !strcmp(e->path, s->path);
	}
	s->next = e->hi;
	return s->ok;
}

/* Fill @s for [@lo, @lo+@len): true if one file maps it whole. */
static bool copy_src_find(struct copy_src *s, uintptr_t lo, size_t len)
{
	char path[PATH_MAX];
	struct maps_ent e = { .path = path };

	s->lo = lo;
	s->next = 0;
	s->ok = false;
	return maps_scan(lo, lo + len, &e, src_line, s) > 0 && s->ok && s->next >= lo + len;
}

/* A descriptor on @s's file, checked to be the very inode that maps it. */
static int copy_src_open(struct copy_src *s)
{
	struct stat st;

	s->fd = open(s->path, O_RDONLY | O_CLOEXEC);
	if (s->fd >= 0 && (fstat(s->fd, &st) || (unsigned long long)st.st_ino != s->ino ||
			   major(st.st_dev) != s->dev_major || minor(st.st_dev) != s->dev_minor)) {
		close(s->fd);
		s->fd = -1;
	}
	return s->fd;
}

/*
 * A private writable mapping of @len bytes that becomes the text at @lo
 * once filled and moved there: mapped from the file that maps @lo now, at
 * the same offset, where that file can be opened as the same inode, so
 * that the pages moved in are still that file's.  /proc/self/maps then
 * still names it (perf and symbolizers read it), and a uprobe's int3
 * (bpftrace, USDT, perf probe) copied along stays the kernel's to handle
 * and to remove; in an anonymous copy it was a foreign trap, and killed the
 * process with SIGTRAP at the next call of the probed function.  Anonymous
 * where the file is gone or replaced (an upgrade), or cannot be opened.
 */
static void *copy_map(uintptr_t lo, size_t len, bool file, int prot)
{
	struct copy_src s;
	void *c = MAP_FAILED;

	if (file && copy_src_find(&s, lo, len) && copy_src_open(&s) >= 0) {
		c = mmap(NULL, len, prot, MAP_PRIVATE, s.fd, (off_t)s.off);
		close(s.fd);
	}
	if (c == MAP_FAILED)
		c = mmap(NULL, len, prot, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return c;
}

/* -ENOENT: @page is not mapped.  @end: where its mapping ends (or
 * UINTPTR_MAX where the ELF headers had to answer). */
static int page_prot_end(uintptr_t page, uintptr_t *end)
{
	int prot = 0, ret = maps_prot(page, &prot, end);

	if (ret > 0)
		return prot;
	if (ret == 0)
		return -ENOENT;
	prot = kk_addr_segment_prot((const void *)page);
	if (prot < 0)
		return ret;
	kk_warn_once(maps_warned, "cannot read /proc/self/maps (%s): page protections "
		     "come from the ELF program headers", strerror(-ret));
	*end = UINTPTR_MAX;
	return prot;
}

static int page_prot(uintptr_t page)
{
	uintptr_t end;

	return page_prot_end(page, &end);
}

/*
 * copy_build() where /proc/self/mem writes: the copy is mapped with its final
 * protection and filled through /proc/self/mem, as the text itself is.  A
 * writable copy made read-only afterwards costs a TLB flush of every CPU that
 * runs the process (mprotect() of present pages), one IPI each per run of a
 * page swap; a copy that was never writable needs none.  MAP_FAILED with
 * -errno in *@err: copy_build() then makes the copy as before.
 */
static void *copy_sealed(uintptr_t lo, size_t len, int prot,
			 void (*fill)(uint8_t *copy, uintptr_t lo, const void *arg),
			 const void *arg, int *err)
{
	uint8_t *buf = malloc(len), *c;

	if (!buf) {
		*err = -ENOMEM;
		return MAP_FAILED;
	}
	memcpy(buf, (const void *)lo, len);
	fill(buf, lo, arg);
	c = copy_map(lo, len, true, prot);
	if (c == MAP_FAILED)
		*err = errno == EACCES ? -EPERM : -errno;
	else if ((*err = write_proc_mem((uintptr_t)c, buf, len))) {
		munmap(c, len);
		c = MAP_FAILED;
	}
	free(buf);
	return c;
}

/*
 * The copy of [@lo, @lo+@len) that will be moved over it: its bytes now, then
 * @fill's changes, then the mapping's protection (never W+X: a writable
 * mapping loses exec).  A policy may refuse exec to a written copy of a
 * file where it allows an anonymous one (SELinux: execmod, execmem): then
 * anonymous.  MAP_FAILED with -errno in *@err.
 */
static void *copy_build(uintptr_t lo, size_t len, int prot,
			void (*fill)(uint8_t *copy, uintptr_t lo, const void *arg), const void *arg,
			int *err)
{
	if (prot & PROT_WRITE)
		prot &= ~PROT_EXEC;
	if (method != M_REMAP && forced_method() != M_REMAP && !(prot & PROT_WRITE)) {
		void *c = copy_sealed(lo, len, prot, fill, arg, err);

		if (c != MAP_FAILED)
			return c;
	}
	for (int file = 1; file >= 0; file--) {
		uint8_t *c = copy_map(lo, len, file, PROT_READ | PROT_WRITE);

		if (c == MAP_FAILED) {
			*err = -errno;
			return MAP_FAILED;
		}
		memcpy(c, (const void *)lo, len);
		fill(c, lo, arg);
		kk_arch_text_flush((uintptr_t)c, len);
		if (!mprotect(c, len, prot))
			return c;
		*err = -errno;
		munmap(c, len);
	}
	return MAP_FAILED;
}

struct remap_bytes {
	uintptr_t addr;
	const uint8_t *buf;
	size_t len;
};

static void remap_fill(uint8_t *copy, uintptr_t lo, const void *arg)
{
	const struct remap_bytes *b = arg;

	memcpy(copy + (b->addr - lo), b->buf, b->len);
}

/* Rewrite [addr, addr+len) inside one page by swapping in a rebuilt copy. */
static int write_remap(uintptr_t addr, const uint8_t *buf, size_t len)
{
	const struct remap_bytes b = { addr, buf, len };
	uintptr_t page = addr & ~(uintptr_t)(page_size - 1);
	int prot = page_prot(page), ret = 0;
	void *copy;

	if (prot < 0)
		return prot;
	copy = copy_build(page, (size_t)page_size, prot, remap_fill, &b, &ret);
	if (copy == MAP_FAILED)
		return ret;
	if (mremap(copy, (size_t)page_size, (size_t)page_size, MREMAP_MAYMOVE | MREMAP_FIXED,
		   (void *)page) == MAP_FAILED) {
		ret = -errno;
		munmap(copy, (size_t)page_size);
	}
	return ret;
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
	if (ret)
		return ret;
	kk_arch_text_flush(addr, len);
	/* valgrind runs translations of the old bytes until told. */
	if (kk_under_valgrind())
		VALGRIND_DISCARD_TRANSLATIONS(addr, len);
	return 0;
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
 * What one write of a step puts on each site (enum kk_text_span).  Sites are
 * sorted, so in the per-page steps the writes that start in one page go out
 * as one span; the bytes between them are rewritten with their current
 * value.
 */
static void step_bytes(const struct kk_poke *p, enum kk_text_span s, uintptr_t *lo, uintptr_t *hi)
{
	*lo = p->addr + (s == KK_SPAN_TAIL);
	*hi = (s == KK_SPAN_TRAP || s == KK_SPAN_HEAD) ? p->addr + 1 : p->addr + p->len;
}

/*
 * The span of step @s that starts with site @i: every site whose bytes of
 * this step start in the same page (only site @i for KK_SPAN_EACH).
 * Returns the index after the last one.
 */
static size_t step_span(const struct kk_poke *v, size_t n, size_t i, enum kk_text_span s,
			uintptr_t *lo, uintptr_t *hi)
{
	const uintptr_t mask = ~(uintptr_t)(page_size - 1);
	uintptr_t a, b;
	size_t j;

	step_bytes(&v[i], s, lo, hi);
	for (j = i + 1; j < n && s != KK_SPAN_EACH; j++) {
		step_bytes(&v[j], s, &a, &b);
		if ((a & mask) != (*lo & mask))
			break;
		*hi = b;
	}
	return j;
}

/* The bytes of span [lo, hi) of sites i..j-1 after step @s: reads the text. */
static void fill_span(uint8_t *span, const struct kk_poke *v, size_t i, size_t j,
		      enum kk_text_span s, bool to_old, uintptr_t lo, uintptr_t hi)
{
	memcpy(span, (const void *)lo, hi - lo);
	for (size_t k = i; k < j && s != KK_SPAN_DRY; k++) {
		const uint8_t *insn = to_old ? v[k].old : v[k].new;
		uintptr_t a, b;

		step_bytes(&v[k], s, &a, &b);
		if (s == KK_SPAN_TRAP)
			span[a - lo] = kk_arch_trap_byte;
		else
			memcpy(span + (a - lo), insn + (a - v[k].addr), b - a);
	}
}

/* Every span of step @s, computed now, back to back (see snapshot use). */
static uint8_t *snapshot_step(const struct kk_poke *v, size_t n, enum kk_text_span s)
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

/*
 * Write step @s for every site, one write per span, from b->span or, with
 * @pre, from the bytes snapshot_step() computed earlier.
 */
static int write_step(const struct kk_text_batch *b, enum kk_text_span s, bool to_old,
		      const uint8_t *pre, int hook_step)
{
	int ret = 0;

	for (size_t i = 0; i < b->n && !ret;) {
		uintptr_t lo, hi;
		size_t j = step_span(b->v, b->n, i, s, &lo, &hi);

		if (pre) {
			ret = write_span(hook_step, lo, pre, hi - lo);
			pre += hi - lo;
		} else {
			fill_span(b->span, b->v, i, j, s, to_old, lo, hi);
			ret = write_span(hook_step, lo, b->span, hi - lo);
		}
		i = j;
	}
	return ret;
}

int kk_text_write(const struct kk_text_batch *b, enum kk_text_span s, bool to_old, int hook_step)
{
	return write_step(b, s, to_old, NULL, hook_step);
}

int kk_text_sync(void)
{
	atomic_fetch_add_explicit(&n_syncs, 1, memory_order_relaxed);
	return kk_sync_round();
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

/* What cow_prepare() unmapped, for cow_hot(). */
struct cow {
	struct iovec *iov;	/* the ranges unmapped */
	size_t niov, runs;	/* runs: of consecutive pages the batch writes */
};

static void cow_free(struct cow *c)
{
	free(c->iov);
	*c = (struct cow){ 0 };
}

/*
 * Unmap the batch's pages that still hold the file's bytes (see above), and
 * remember them in @c.  Returns the dry run's bytes (or NULL: compute them as
 * usual).
 */
static uint8_t *cow_prepare(const struct kk_poke *v, size_t n, struct cow *c)
{
	size_t npg = 0, niov = 0;
	uintptr_t *pg = batch_pages(v, n, &npg);
	struct iovec *iov = NULL;
	uint8_t *pre = NULL;

	if (!pg || npg < COW_MIN_PAGES)
		goto out;
	if (!(iov = malloc(npg * sizeof(*iov))) || file_pages(pg, npg, iov, &niov) || !niov)
		goto out;
	if (!(pre = snapshot_step(v, n, KK_SPAN_DRY)))
		goto out;
	for (size_t i = 0; i < niov; i += 1024) {	/* UIO_MAXIOV per call */
		size_t k = niov - i < 1024 ? niov - i : 1024;

		/* Before Linux 6.13 a process may not advise itself this:
		 * nothing was unmapped, so nothing can be seen coming back. */
		if (process_madvise_self(iov + i, k, MADV_DONTNEED) < 0)
			goto out;
	}
	c->runs = 1;
	for (size_t i = 1; i < npg; i++)
		c->runs += pg[i] != pg[i - 1] + (size_t)page_size;
	c->iov = iov;
	c->niov = niov;
	iov = NULL;
out:
	free(pg);
	free(iov);
	return pre;
}

/*
 * Called by the plan once it has listed the threads: whether the pages
 * cow_prepare() unmapped came back mapped (other threads run them) on more
 * pages than a page swap would flush, two flushes per run (the run it
 * replaces, and the copy it moves).  Each such page costs its own TLB flush
 * of every CPU that runs the process when it is written; cold pages cost
 * none.  So the first change of pages that threads keep running goes by page
 * swap, and of cold ones by the live protocol.
 */
static bool cow_hot(void *arg)
{
	struct cow *c = arg;
	size_t npg = 0, nback = 0, back = 0;
	uintptr_t *pg;
	struct iovec *iov = NULL;

	for (size_t i = 0; i < c->niov; i++)
		npg += c->iov[i].iov_len / (size_t)page_size;
	if (npg <= 2 * c->runs || !(pg = malloc(npg * sizeof(*pg))))
		return false;
	npg = 0;
	for (size_t i = 0; i < c->niov; i++)
		for (size_t off = 0; off < c->iov[i].iov_len; off += (size_t)page_size)
			pg[npg++] = (uintptr_t)c->iov[i].iov_base + off;
	if ((iov = malloc(npg * sizeof(*iov))) && !file_pages(pg, npg, iov, &nback))
		for (size_t i = 0; i < nback; i++)
			back += iov[i].iov_len / (size_t)page_size;
	free(pg);
	free(iov);
	return back > 2 * c->runs;
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

int kk_text_poke_queue(struct kk_text_queue *q, uintptr_t addr, const void *old,
		       const void *new, size_t len)
{
	struct kk_poke *p;

	if (q->n >= q->cap)
		return -ENOSPC;
	if (len > KK_POKE_MAX)
		return -EINVAL;
	p = &q->v[q->n++];
	memset(p, 0, sizeof(*p));
	p->addr = addr;
	p->len = (uint8_t)len;
	memcpy(p->old, old, len);
	memcpy(p->new, new, len);
	return 0;
}

static int poke_cmp(const void *a, const void *b)
{
	uintptr_t x = ((const struct kk_poke *)a)->addr, y = ((const struct kk_poke *)b)->addr;

	return x < y ? -1 : x > y;
}

void kk_text_site_problem(uintptr_t code, char *buf, size_t len)
{
	kk_arch_text_site_problem(code, buf, len);
}

static int batch_check(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		int ret = kk_arch_text_check(&v[i], err, errlen);

		if (ret)
			return ret;
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
	}
	return 0;
}

static void batch_free(struct kk_text_batch *b)
{
	if (b) {
		free(b->v);
		free(b->span);
	}
	free(b);
}

/* A batch of @n sites with its scratch span: a page plus the tail of a site
 * that crosses it. */
static struct kk_text_batch *batch_new(const struct kk_poke *v, size_t n)
{
	struct kk_text_batch *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->v = malloc(n * sizeof(*v));
	b->span = malloc((size_t)page_size + KK_POKE_MAX);
	if (!b->v || !b->span) {
		batch_free(b);
		return NULL;
	}
	memcpy(b->v, v, n * sizeof(*v));
	b->n = n;
	b->owner = pthread_self();
	return b;
}

/* Unpublish @b and free it once no trap handler can be reading it. */
static void batch_retire(struct kk_text_batch *b)
{
	atomic_store(&kk_text_cur, NULL);
	kk_arch_text_quiesce();
	batch_free(b);
}

/* Bring @b to its final bytes: the arch's repair, counted. */
static int batch_repair(struct kk_text_batch *b, char *err, size_t errlen)
{
	int ret = choose_method(b->v[0].addr, *(volatile const uint8_t *)b->v[0].addr, err, errlen);

	if (!ret)
		ret = kk_arch_text_repair(b);
	if (!ret)
		atomic_fetch_add_explicit(&n_repairs, 1, memory_order_relaxed);
	return ret;
}

/* What the sites of a stuck batch do meanwhile, for messages. */
static const char *stuck_how(void)
{
	return kk_arch_text_traps ? "are emulated" : "may run the old or the new instruction";
}

/* A stuck batch from an earlier call is repaired before anything else. */
static int repair_stuck(char *err, size_t errlen)
{
	struct kk_text_batch *b = atomic_load(&kk_text_cur);
	int ret;

	if (!b || !b->stuck)
		return 0;
	if ((ret = batch_repair(b, err, errlen))) {
		snprintf(err, errlen, "an earlier change could not finish writing its %zu sites (%s); "
			 "they %s until the text can be written again", b->n, strerror(-ret),
			 stuck_how());
		return -EIO;
	}
	batch_retire(b);
	return 0;
}

/*
 * A write or sync of the live protocol failed.  Repair now if the text can
 * be written (another descriptor, the other method); else leave the batch
 * published as stuck.  The change took effect if and only if it had
 * committed.
 */
static int batch_failed(struct kk_text_batch *b, int why, char *err, size_t errlen)
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
		kk_warn("writing text failed (%s) after a change took effect: its %zu sites %s "
			"until the text can be written again", strerror(-why), b->n, stuck_how());
		return 0;
	}
	snprintf(err, errlen, "writing text failed (%s); nothing changed, and %zu sites %s "
		 "until the text can be written again", strerror(-why), b->n, stuck_how());
	return -EIO;
}

/* The arch's live protocol, on the published batch. */
static int patch_live(struct kk_text_batch *b, char *err, size_t errlen)
{
	int ret;

	atomic_store(&kk_text_cur, b);
	if ((ret = kk_arch_text_apply(b)))
		return batch_failed(b, ret, err, errlen);
	batch_retire(b);
	return 0;
}

/* ---- the page swap ------------------------------------------------------------ */

/*
 * KK_PATCH_SWAP: no thread ever sees a byte of text change.  Each run of
 * pages that the batch touches (touched pages of one mapping that follow
 * each other, so that a site across a page boundary moves with both of its
 * pages) is copied into a fresh private mapping of its file (copy_map()),
 * the new instructions go into the copy, the copy gets the run's
 * protection, and mremap(MREMAP_FIXED) moves it over the run.  The kernel unmaps the run and
 * flushes it from every TLB before it maps the copy, all under the mmap
 * lock that a fault takes: a thread runs the old pages (which nobody
 * writes) or the new ones, never a mix, and one that faults in between waits
 * for the lock.  No trap and no signal: nothing a thread that blocks every
 * signal can die of, nothing a debugger, strace or valgrind stops on.  One
 * sync afterwards (membarrier) serializes the CPUs that run the process.
 *
 * The price: every batch copies the pages it touches.  The copies are
 * private mappings of the same file at the same offset (copy_map()), as
 * the pages that /proc/self/mem writes into are, so maps, perf and uprobes
 * still see the file there.
 */
struct swap_run {
	uintptr_t lo, hi;
	size_t first, last;	/* the sites, v[first..last) */
	int prot;
	void *copy;
};

/*
 * The runs of @v[0..n), in @r (room for n).  Returns how many, or -errno:
 * -EINVAL for a site whose bytes lie in two mappings of different
 * protections.
 */
static ssize_t swap_runs(const struct kk_poke *v, size_t n, struct swap_run *r, char *err,
			 size_t errlen)
{
	const uintptr_t pg = (uintptr_t)page_size, mask = ~(pg - 1);
	uintptr_t end = 0;
	ssize_t k = -1;

	for (size_t i = 0; i < n; i++) {
		uintptr_t lo = v[i].addr & mask, hi = ((v[i].addr + v[i].len - 1) & mask) + pg;

		if (k < 0 || lo > r[k].hi || lo >= end) {
			int prot = page_prot_end(lo, &end);

			if (prot < 0) {
				snprintf(err, errlen, "site %#lx: cannot read its mapping (%s)",
					 (unsigned long)v[i].addr, strerror(-prot));
				return prot;
			}
			r[++k] = (struct swap_run){ .lo = lo, .hi = lo, .first = i, .prot = prot };
		}
		/* Across into the next mapping (an earlier swap split the text
		 * there): one run still, if the protection is the same. */
		while (hi > end) {
			if (page_prot_end(end, &end) != r[k].prot) {
				snprintf(err, errlen, "site %#lx lies across two mappings",
					 (unsigned long)v[i].addr);
				return -EINVAL;
			}
		}
		if (hi > r[k].hi)
			r[k].hi = hi;
		r[k].last = i + 1;
	}
	return k + 1;
}

struct swap_fill {
	const struct swap_run *r;
	const struct kk_poke *v;
	bool to_old;
};

static void swap_fill(uint8_t *copy, uintptr_t lo, const void *arg)
{
	const struct swap_fill *f = arg;

	for (size_t i = f->r->first; i < f->r->last; i++)
		memcpy(copy + (f->v[i].addr - lo), f->to_old ? f->v[i].old : f->v[i].new,
		       f->v[i].len);
}

/* The copy of run @r with its sites' new (or, @to_old, old) bytes. */
static int swap_build(struct swap_run *r, const struct kk_poke *v, bool to_old)
{
	const struct swap_fill f = { r, v, to_old };
	int ret = 0;
	void *c = copy_build(r->lo, r->hi - r->lo, r->prot, swap_fill, &f, &ret);

	if (c == MAP_FAILED)
		return ret;
	r->copy = c;
	return 0;
}

static void swap_drop(struct swap_run *r, size_t n)
{
	for (size_t k = 0; k < n; k++)
		if (r[k].copy)
			munmap(r[k].copy, r[k].hi - r[k].lo);
}

/* Build every copy of runs r[0..n), then move them in.  Returns how many runs
 * were swapped in, and sets *ret to 0 or the -errno that stopped it. */
static size_t swap_in(struct swap_run *r, size_t n, const struct kk_poke *v, bool to_old,
		      int step, int *ret)
{
	size_t k;

	for (k = 0; k < n; k++)
		r[k].copy = NULL;
	for (k = 0, *ret = 0; k < n && !*ret; k++)
		*ret = swap_build(&r[k], v, to_old);
	maps_snapshot_drop();	/* the maps change from here on */
	for (k = 0; k < n && !*ret; k++) {
		size_t len = r[k].hi - r[k].lo;

		if (kk_text_write_hook && (*ret = kk_text_write_hook(step, r[k].lo, len)))
			break;
		if (mremap(r[k].copy, len, len, MREMAP_MAYMOVE | MREMAP_FIXED,
			   (void *)r[k].lo) == MAP_FAILED) {
			*ret = -errno;
			break;
		}
		r[k].copy = NULL;
		/* valgrind runs translations of the old bytes until told.
		 * helgrind takes the copy's bytes for this thread's writes, and
		 * valgrind's check of code on written pages for other threads'
		 * unsynchronised reads of them: text is read-only to the
		 * program, mremap() handed a whole page over, nothing to check. */
		if (kk_under_valgrind()) {
			VALGRIND_DISCARD_TRANSLATIONS(r[k].lo, len);
			VALGRIND_HG_DISABLE_CHECKING(r[k].lo, len);
		}
	}
	swap_drop(r, n);
	return *ret ? k : n;
}

/*
 * The batch @b by page swaps.  A swap that fails puts the runs swapped so
 * far back to their old bytes, the same way.  mremap() refused for good
 * (EPERM, EACCES: a seccomp filter, a sealed mapping) is told to the plan,
 * which then stops the machine instead where it can; *@refused says that
 * nothing changed, so the batch may be planned again.
 */
static int patch_swapped(struct kk_text_batch *b, bool *refused, char *err, size_t errlen)
{
	struct swap_run *r = malloc(b->n * sizeof(*r));
	ssize_t nr;
	size_t done = 0;
	int ret, undo = 0;

	/* dropped by swap_in() before it moves a run */
	maps_snap = maps_snapshot(b->v[b->n - 1].addr + b->v[b->n - 1].len + (size_t)page_size);
	nr = r ? swap_runs(b->v, b->n, r, err, errlen) : -ENOMEM;
	ret = (int)nr;
	if (nr <= 0)
		maps_snapshot_drop();
	if (nr > 0) {
		done = swap_in(r, (size_t)nr, b->v, false, KK_STEP_SWAP, &ret);
		if (ret && done)
			swap_in(r, done, b->v, true, KK_STEP_REPAIR, &undo);
		/* Cannot fail after a swap: without membarrier the swap's
		 * TLB shootdown was the sync (kk_sync_round()). */
		if (!ret)
			kk_text_sync();
	}
	*refused = (ret == -EPERM || ret == -EACCES) && !undo;
	if (ret == -EPERM || ret == -EACCES)
		kk_sync_swap_refused();
	if (ret && undo)
		snprintf(err, errlen, "swapping in rebuilt text failed (%s), and so did undoing "
			 "it: some of %zu sites changed", strerror(-ret), b->n);
	else if (ret && !err[0])
		snprintf(err, errlen, "swapping in rebuilt text failed (%s); nothing changed",
			 strerror(-ret));
	if (!ret)
		atomic_fetch_add_explicit(&n_swapped, 1, memory_order_relaxed);
	free(r);
	batch_free(b);
	return ret == -ENOMEM || ret == -EPERM || ret == -EINVAL ? ret : ret ? -EIO : 0;
}

/* stop_machine: nobody else runs, so whole instructions go out at once. */
struct stop_args {
	struct kk_text_batch *b;
	int undo_failed;
};

/*
 * Per page where the protocol has traps (x86: a site is never written in
 * one store anyway); one aligned store per site where a site is one word,
 * since a thread that blocks the park signal is not stopped.
 */
static int stop_write(void *arg)
{
	struct stop_args *a = arg;
	enum kk_text_span s = kk_arch_text_traps ? KK_SPAN_ALL : KK_SPAN_EACH;
	int ret = write_step(a->b, s, false, NULL, KK_STEP_STOP);

	if (ret && write_step(a->b, s, true, NULL, KK_STEP_REPAIR))
		a->undo_failed = 1;
	return ret;
}

static int patch_stopped(struct kk_text_batch *b, char *err, size_t errlen)
{
	struct stop_args a = { b, 0 };
	int ret = kk_stop_machine(stop_write, &a, err, errlen);

	if (ret > 0)
		ret = -EIO;
	if (ret && a.undo_failed)
		snprintf(err, errlen, "writing text failed (%s) with other threads stopped, and so "
			 "did undoing it: some of %zu sites changed", strerror(-ret), b->n);
	else if (ret && !err[0])
		snprintf(err, errlen, "writing text failed (%s); nothing changed", strerror(-ret));
	if (!ret)
		atomic_fetch_add_explicit(&n_stopped, 1, memory_order_relaxed);
	batch_free(b);
	return ret;
}

/* Step 1: every page of the batch, written with its own bytes. */
static int dry_run(struct kk_text_batch *b, const uint8_t *pre, char *err, size_t errlen)
{
	int ret = write_step(b, KK_SPAN_DRY, false, pre, KK_STEP_DRY);

	if (ret)
		snprintf(err, errlen, "text cannot be written (%s); nothing changed", strerror(-ret));
	return ret == -EACCES ? -EPERM : ret == -EPERM || ret == -ENOMEM ? ret : ret ? -EIO : 0;
}

static int poke_finish(struct kk_poke *v, size_t n, char *err, size_t errlen);

/* The page swap needs no dry run: its copies are built before anything
 * moves.  Refused for good (seccomp, sealing): planned again without it. */
static int poke_swap(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	struct kk_text_batch *b = batch_new(v, n);
	bool refused;
	int ret;

	if (!b) {
		snprintf(err, errlen, "out of memory for a batch of %zu sites", n);
		return -ENOMEM;
	}
	ret = patch_swapped(b, &refused, err, errlen);
	if (refused) {
		err[0] = 0;
		return poke_finish(v, n, err, errlen);
	}
	if (!ret) {
		atomic_fetch_add_explicit(&n_batches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&n_pokes, n, memory_order_relaxed);
	}
	return ret;
}

static int poke_finish(struct kk_poke *v, size_t n, char *err, size_t errlen)
{
	struct kk_text_batch *b;
	struct cow cow = { 0 };
	uint8_t *pre = NULL;
	int how, ret;

	kk_text_arm();
	if ((ret = repair_stuck(err, errlen)))
		return ret;
	qsort(v, n, sizeof(*v), poke_cmp);
	if ((ret = batch_check(v, n, err, errlen)))
		return ret;
	/* From here this thread reads no text until the dry run wrote it. */
	if ((method == M_PROC_MEM || method == M_UNKNOWN) && !kk_under_valgrind())
		pre = cow_prepare(v, n, &cow);	/* valgrind knows no process_madvise */
	how = kk_sync_plan(kk_arch_text_traps, cow.niov ? cow_hot : NULL, &cow, err, errlen);
	cow_free(&cow);
	if (how < 0 || how == KK_PATCH_SWAP) {
		free(pre);
		return how < 0 ? how : poke_swap(v, n, err, errlen);
	}
	if (!(b = batch_new(v, n))) {
		free(pre);
		snprintf(err, errlen, "out of memory for a batch of %zu sites", n);
		return -ENOMEM;
	}
	if (how == KK_PATCH_LIVE && (ret = kk_arch_text_begin(b, err, errlen))) {
		free(pre);
		batch_free(b);
		return ret;
	}
	ret = choose_method(v[0].addr, v[0].old[0], err, errlen);
	if (!ret)
		ret = dry_run(b, pre, err, errlen);
	free(pre);
	if (ret) {
		batch_free(b);
		return ret;
	}
	ret = how == KK_PATCH_STOP ? patch_stopped(b, err, errlen) : patch_live(b, err, errlen);
	if (!ret) {
		atomic_fetch_add_explicit(&n_batches, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&n_pokes, n, memory_order_relaxed);
	}
	return ret;
}

int kk_text_poke_finish(struct kk_text_queue *q, char *err, size_t errlen)
{
	size_t n = q->n;
	int ret;

	q->n = 0;
	if (!n)
		return 0;
	ret = poke_finish(q->v, n, err, errlen);
	/* No trap byte is left, but a stuck batch's (docs/text_patching.md). */
	kk_sync_done();
	return ret;
}

/* ---- sites ------------------------------------------------------------------------ */

void kk_text_site_bytes(uintptr_t code, uint8_t *out, size_t len)
{
	struct kk_text_batch *b = atomic_load(&kk_text_cur);
	const struct kk_poke *p = NULL;

	if (b && b->stuck) {
		size_t lo = 0, hi = b->n;

		while (lo < hi && !p) {
			size_t mid = lo + (hi - lo) / 2;

			if (b->v[mid].addr == code)
				p = &b->v[mid];
			else if (b->v[mid].addr < code)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	if (p && len <= p->len)
		memcpy(out, atomic_load(&b->committed) ? p->new : p->old, len);
	else
		memcpy(out, (const void *)code, len);
}

/* A stuck batch loses the sites in [lo, hi): that text is going away. */
static void stuck_forget(uintptr_t lo, uintptr_t hi)
{
	struct kk_text_batch *b = atomic_load(&kk_text_cur), *nb;
	size_t k = 0;

	if (!b || !b->stuck)
		return;
	if (!(nb = batch_new(b->v, b->n)))
		return;
	for (size_t i = 0; i < b->n; i++)
		if (b->v[i].addr < lo || b->v[i].addr >= hi)
			nb->v[k++] = b->v[i];
	nb->n = k;
	nb->stuck = 1;
	nb->owner = b->owner;
	atomic_store(&nb->committed, atomic_load(&b->committed));
	if (k) {
		atomic_store(&kk_text_cur, nb);
		kk_arch_text_quiesce();
		batch_free(b);
	} else {
		batch_free(nb);
		batch_retire(b);
	}
}

void kk_text_forget(uintptr_t lo, uintptr_t hi)
{
	stuck_forget(lo, hi);
	kk_arch_text_forget(lo, hi);
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
	struct kk_text_batch *b = atomic_load(&kk_text_cur);
	char err[160];

	/* The child has a new mm: membarrier registers again with its first
	 * batch, and the parent's /proc/self/mem descriptor points at the
	 * parent: closed now, if the number is still ours, so that no child
	 * (an unprivileged one included) keeps a way to write its parent's
	 * memory.  Threads in our handlers did not come along. */
	armed = 0;
	kk_sync_atfork_child();
	kk_fd_release_inherited(&mem);
	kk_arch_text_atfork_child();
	/*
	 * A batch in flight stays published: its changes are in the child's
	 * text too.  If this thread is its patcher (fork() from a signal
	 * handler that interrupted it), the batch goes on when the handler
	 * returns; a stuck batch waits for the next change, as in the parent.
	 * Else the patcher stayed behind: finish here, alone.
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
	struct kk_text_batch *b = atomic_load(&kk_text_cur);

	st->syncs = atomic_load(&n_syncs);
	st->batches = atomic_load(&n_batches);
	st->pokes = atomic_load(&n_pokes);
	st->traps = kk_arch_text_traps_taken();
	st->stopped = atomic_load(&n_stopped);
	st->swapped = atomic_load(&n_swapped);
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
