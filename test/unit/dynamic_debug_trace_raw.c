// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_pipe_raw's HEAD frame says up to when the read is
 * complete (issue 39, the first event on disk): every record a later read
 * sends is stamped at or after it, also when a thread was in the middle of
 * writing one while the rings were copied.  A writer is held in the middle
 * of a record by a %s argument on a page that userfaultfd leaves missing:
 * the record is reserved and stamped, not committed, until the test fills
 * the page.  The frames are read as docs/tracing.md ("The raw stream")
 * lays them out, not through the library's header.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dynamic_debug_util.h"

__attribute__((noinline)) void raw_mark(int i)
{
	pr_debug("raw mark %d\n", i);
}

__attribute__((noinline)) void raw_str(const char *s)
{
	pr_debug("raw str %s\n", s);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One read: its HEAD's complete (0: none, or a head without it), its
 * records' stamps (CLOCK_MONOTONIC ns, at most @max). */
struct rread {
	uint64_t complete;
	uint32_t head_len;
	uint64_t ts[64];
	size_t n;
};

static void read_raw(struct rread *rr)
{
	char *b = NULL;
	size_t len = 0, at = 0;

	memset(rr, 0, sizeof(*rr));
	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_raw", &b, &len), 0);
	while (len - at >= 8) {
		uint32_t type, flen;

		memcpy(&type, b + at, 4);
		memcpy(&flen, b + at + 4, 4);
		cr_assert(flen >= 8 && flen % 8 == 0 && flen <= len - at, "frame at %zu: %u", at, flen);
		if (type == 1) {		/* HEAD: version, pid, real_off, complete */
			rr->head_len = flen;
			if (flen >= 32)
				memcpy(&rr->complete, b + at + 24, 8);
		} else if (type == 3) {		/* RING: tid, nrec, lost, comm[16]; records */
			for (size_t r = at + 40; r + 24 <= at + flen && rr->n < 64;) {
				uint32_t rl;

				memcpy(&rl, b + r, 4);
				memcpy(&rr->ts[rr->n++], b + r + 8, 8);
				cr_assert(rl >= 24, "a record of %u bytes", rl);
				r += (rl + 7) & ~7u;
			}
		}
		at += flen;
	}
	free(b);
}

/* ---- a writer held in the middle of a record -------------------------------------- */

static int uffd = -1;
static char *missing;
static uint64_t before_held;	/* taken after the last whole record, before the held one */

static void *held_writer(void *arg)
{
	(void)arg;
	raw_mark(1);
	before_held = mono_ns();
	raw_str(missing);	/* stops in the copy of the string, stamped */
	return NULL;
}

/* A page that userfaultfd keeps missing until filled; false: not here. */
static bool missing_page(const char **why)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { 0 };

	uffd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
	if (uffd < 0 || ioctl(uffd, UFFDIO_API, &api)) {
		*why = strerror(errno);
		return false;
	}
	missing = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(missing, MAP_FAILED);
	reg.range.start = (uintptr_t)missing;
	reg.range.len = 4096;
	reg.mode = UFFDIO_REGISTER_MODE_MISSING;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg)) {
		*why = strerror(errno);
		return false;
	}
	return true;
}

Test(dynamic_debug_trace_raw, a_write_under_way_holds_complete_back)
{
	static char src[4096] = "filled";
	struct uffdio_copy cp = { 0 };
	struct uffd_msg msg;
	const char *why = NULL;
	struct timespec ms = { 0, 1000000 };
	struct rread r1, r2;
	pthread_t t;

	if (!missing_page(&why))
		cr_skip_test("userfaultfd is not available here: %s", why);
	dynamic_debug_must_write("func raw_mark +T");
	dynamic_debug_must_write("func raw_str +T");
	cr_assert_eq(pthread_create(&t, NULL, held_writer, NULL), 0);
	/* the writer has reserved and stamped its record: it waits for the page */
	cr_assert_eq(read(uffd, &msg, sizeof(msg)), (ssize_t)sizeof(msg));
	cr_assert_eq(msg.event, UFFD_EVENT_PAGEFAULT);
	/* (so that a bound taken from the read's own time would be past the
	 * held record's stamp by a millisecond, whatever the load) */
	nanosleep(&ms, NULL);
	read_raw(&r1);
	cr_assert_eq(r1.n, 1, "%zu records in the first read (raw mark 1 only)", r1.n);
	cr_assert_neq(r1.complete, 0, "no complete in the HEAD frame (%u bytes)", r1.head_len);
	cr_assert_leq(r1.complete, before_held,
		      "complete %llu ns is after the held record began (%llu): it may be stamped before",
		      (unsigned long long)r1.complete, (unsigned long long)before_held);
	cp.dst = (uintptr_t)missing;
	cp.src = (uintptr_t)src;
	cp.len = 4096;
	cr_assert_eq(ioctl(uffd, UFFDIO_COPY, &cp), 0, "%s", strerror(errno));
	pthread_join(t, NULL);
	read_raw(&r2);
	cr_assert_eq(r2.n, 1, "%zu records in the second read (raw str only)", r2.n);
	cr_assert_geq(r2.ts[0], r1.complete, "a record stamped %llu came after complete %llu",
		      (unsigned long long)r2.ts[0], (unsigned long long)r1.complete);
	cr_assert_gt(r2.complete, r2.ts[0], "nothing under way: complete %llu, the record %llu",
		     (unsigned long long)r2.complete, (unsigned long long)r2.ts[0]);
}

/* No write under way: the read is complete up to (about: less the HEAD's
 * slack of 0.1 ms) when it copied, so a reader writes out every record it
 * brought at once. */
static void *three_marks(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++)
		raw_mark(i);
	return NULL;
}

Test(dynamic_debug_trace_raw, an_idle_ring_is_complete_up_to_the_read)
{
	struct timespec ms = { 0, 1000000 };
	struct rread r;
	pthread_t t;

	dynamic_debug_must_write("func raw_mark +T");
	cr_assert_eq(pthread_create(&t, NULL, three_marks, NULL), 0);
	pthread_join(t, NULL);
	nanosleep(&ms, NULL);	/* (the records are older than the slack, whatever the load) */
	read_raw(&r);
	cr_assert_eq(r.n, 3, "%zu records", r.n);
	cr_assert_neq(r.complete, 0, "no complete in the HEAD frame (%u bytes)", r.head_len);
	for (size_t i = 0; i < r.n; i++)
		cr_assert_gt(r.complete, r.ts[i], "record %zu (%llu) is not before complete %llu", i,
			     (unsigned long long)r.ts[i], (unsigned long long)r.complete);
}

/* ---- a session's first read is small, and the reads grow ------------------------- */

/* One read's length, in bytes (the reply: HEAD, CLASS and RING frames). */
static size_t raw_len(void)
{
	char *b = NULL;
	size_t len = 0;

	cr_assert_eq(kk_control_read("dynamic_debug/trace_pipe_raw", &b, &len), 0);
	free(b);
	return len;
}

static void session(const char *text, char id[17])
{
	char *r = NULL;

	cr_assert_eq(control_file_write("dynamic_debug/session", text, &r), 0, "%s", r);
	if (id)
		cr_assert_eq(sscanf(r, "session %16[0-9a-f]:", id), 1, "%s", r);
	free(r);
}

/*
 * The first read of a session is what a tracer waits for before its first
 * event is on disk: it takes 64 KiB of a full ring, not 1 MiB, and each full
 * read after it four times the last (docs/tracing.md, "The raw stream").
 * The slack is the HEAD and CLASS frames, and a record past the bound.
 */
Test(dynamic_debug_trace_raw, a_session_s_first_read_is_small_then_grows)
{
	const size_t slack = 4096, want[] = { 64u << 10, 256u << 10, 1024u << 10 };
	char id[17], text[64];
	size_t len;

	cr_assert_eq(control_file_write("dynamic_debug/buffer_size_kb", "8192", NULL), 0);
	session("begin 60000\nfunc raw_mark +T", id);
	for (int i = 0; i < 100000; i++)	/* (about 3 MiB of records) */
		raw_mark(i);
	for (size_t r = 0; r < 3; r++) {
		len = raw_len();
		cr_assert_leq(len, want[r] + slack, "read %zu: %zu bytes", r + 1, len);
		/* (a record is shorter sent than in its ring: a copy of @want is less sent) */
		cr_assert_gt(len, r ? want[r - 1] + slack : slack, "read %zu: %zu bytes", r + 1, len);
	}
	snprintf(text, sizeof(text), "end %s", id);
	session(text, NULL);
	session("begin 60000\nfunc raw_mark +T", NULL);
	len = raw_len();	/* (the ring still holds more than a MiB) */
	cr_assert_leq(len, want[0] + slack, "a new session's first read: %zu bytes", len);
}

/*
 * A forked child keeps its parent's session and ring, and the kkctl that
 * joins it (`renew`) reads it first: its first read is small too, whatever
 * the parent's reads had grown to.
 */
Test(dynamic_debug_trace_raw, a_forked_child_s_first_read_is_small)
{
	const size_t slack = 4096;
	int status;
	pid_t pid;

	cr_assert_eq(control_file_write("dynamic_debug/buffer_size_kb", "8192", NULL), 0);
	session("begin 60000\nfunc raw_mark +T", NULL);
	for (int i = 0; i < 100000; i++)	/* (about 3 MiB of records) */
		raw_mark(i);
	raw_len();
	cr_assert_gt(raw_len(), (64u << 10) + slack, "the parent's second read did not grow");
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		char *b = NULL;
		size_t len = 0;

		if (kk_control_read("dynamic_debug/trace_pipe_raw", &b, &len))
			_exit(2);
		_exit(len <= (64u << 10) + slack ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the child's first read: status %#x (1: larger than 64 KiB and slack)", status);
}
