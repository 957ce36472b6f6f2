/* SPDX-License-Identifier: MIT */
/*
 * Shared between the files of the trace ring: trace.c (the rings, the
 * writer, the snapshot and the text files), trace_json.c (the JSON record
 * stream) and trace_threads.c (the thread filter of the readers).
 */
#ifndef KK_DD_TRACE_INT_H
#define KK_DD_TRACE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include <kernelkit/control.h>
#include "dynamic_debug/internal.h"

/* A record: this header, then the packed arguments, padded to 8 bytes. */
struct trec {
	uint32_t len;			/* whole record, a multiple of 8 */
	uint16_t nconv;			/* conversions packed (fewer than the format's: see flags) */
	uint16_t flags;
	int32_t tid;
	uint32_t seq;			/* the ring's record number, low 32 bits (see tr_full_seq()) */
	uint64_t ts;			/* a time stamp (see now_stamp()) */
	const struct _ddebug *desc;
	const char *fmt;
};
#define TR_HDR		sizeof(struct trec)
#define TR_INCOMPLETE	1u		/* packing stopped at conversion nconv */
/* Padding to the end of the buffer: only len and flags are there (it may be 8 bytes). */
#define TR_PAD		2u
/* Only in a raw read's copy (kk_dd_tr_read_rings()): the thread filter hides this record. */
#define TR_HIDDEN	0x8000u

/* ---- formats (trace.c; a conversion's parse: printf_conv.c) ---- */
#include "dynamic_debug/printf_conv.h"

/* Bytes an integer conversion stores: 4 for int and below, else 8. */
static inline int tr_int_size(int lmod)
{
	return (lmod == LM_NONE || lmod == LM_HH || lmod == LM_H) ? 4 : 8;
}

/* The packed data of one record, read in order. */
struct cursor {
	const unsigned char *d;
	size_t left;
};

static inline bool tr_take(struct cursor *c, void *v, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(v, c->d, n);
	c->d += n;
	c->left -= n;
	return true;
}

/* Text into a fixed buffer; len may pass cap: counted, not written. */
struct out {
	char *buf;
	size_t cap, len;
};

static inline void tr_out_mem(struct out *o, const char *s, size_t n)
{
	if (o->len < o->cap) {
		size_t k = o->cap - o->len < n ? o->cap - o->len : n;

		memcpy(o->buf + o->len, s, k);
	}
	o->len += n;
}

size_t kk_dd_tr_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((__format__(__printf__, 3, 4)));
/* The message of record @h into @o (no decoration).  False when the data does not fit the format. */
bool kk_dd_tr_format_msg(const struct trec *h, struct out *o, kk_dd_snprintf_fn snp);
/* One conversion (a copy: a '*' width may set its '-') of a record into @o.  False: data short. */
bool kk_dd_tr_out_conv(struct out *o, struct conv *cv, struct cursor *c, kk_dd_snprintf_fn snp);
/* An integer conversion's value as printf takes it, as magnitude and sign.  False: data short. */
bool kk_dd_tr_int_value(const struct conv *cv, struct cursor *c, unsigned long long *u, bool *neg);
/* The message of %m's errno @e (strerror's text without the locale) into @num or a constant. */
const char *kk_dd_tr_errno_text(int e, char *num, size_t n);

/* ---- time (trace.c) ---- */
/* A read's conversion of stamps to CLOCK_MONOTONIC, and CLOCK_REALTIME's offset from it. */
#define TR_KNOTS	32
struct tr_knot {
	uint64_t ctr, ns;		/* a counter value and its CLOCK_MONOTONIC ns */
};
struct tr_conv {
	bool counter;			/* stamps are the counter's: converted by the knots */
	size_t nknots;
	struct tr_knot knots[TR_KNOTS];	/* (trace.c: the line through them) */
	int64_t real_off;		/* CLOCK_REALTIME - CLOCK_MONOTONIC when the read began */
	bool realtime;			/* the text shows CLOCK_REALTIME (dynamic_debug/trace_clock) */
};
void kk_dd_tr_conv_setup(struct tr_conv *cv);
uint64_t kk_dd_tr_conv_ns(const struct tr_conv *cv, uint64_t stamp);

/* ---- a read: the snapshot of every ring (trace.c) ---- */
/* One ring as a read saw it: its thread and its numbers, since the last clear. */
struct snap_ring {
	pid_t tid;			/* of its newest record, else its owner */
	bool known, shown;		/* tid is set; the thread filter lets it through */
	uint64_t in_buffer;		/* records copied */
	uint64_t written, overwritten;	/* since the last clear: in_buffer + overwritten == written */
	uint64_t lost;			/* consuming read: overwritten before this reader had them */
	char comm[16];			/* the thread's name, read with the snapshot ("" if gone) */
	/* A bounded read (kk_dd_tr_read_pipe()): where kk_dd_tr_consume() moves its position. */
	struct pipe_at {
		uint64_t pos, seq;
	} base, skip, all, upto;	/* as read; past the lost; past all copied; past those shown */
	void *ring;			/* (struct ring, trace.c's) */
	const void *buf;		/* its buffer when read: a new one means a clear */
	size_t nshown;			/* its records in snap.v */
	bool more, all_ok, took;	/* records after the copy; "all" is set; some were shown */
	bool busy;			/* its owner was writing a record when it was copied */
	uint64_t last_ts;		/* the (ordered) time of its last record copied */
	uint64_t copy_pos, copy_len;	/* its copy: the ring position of its first byte, its bytes */
};

struct snap_rec {
	uint64_t ts;			/* the record's, or its ring's previous one if later */
	unsigned int ring, seq;
	const struct trec *h;
	struct pipe_at next;		/* its ring's position after it */
};

struct snap {
	unsigned char **copies;
	struct snap_ring *rings;
	size_t nrings;
	struct snap_rec *v;
	size_t n, cap;
	size_t ready;			/* bounded read: v[0..ready) may be shown (all before a cut ring's rest) */
	bool whole_rings;		/* kk_dd_tr_read_rings(): no v[], no sort */
	/* kk_dd_tr_read_rings(): a record not copied now is stamped at or
	 * after read_stamp (less a slack: stamps of two CPUs) and at or
	 * after complete (its ring's order; UINT64_MAX: no ring bounds it, 0:
	 * not known) */
	uint64_t read_stamp, complete;
};

/*
 * Copy every ring's records after its read position (all since the last
 * clear; since the last consuming read when @consume, which then consumes
 * them), keep those of the threads the filter shows, sorted by time.
 * 0 or -ENOMEM.  snap_free() in both cases.
 */
int kk_dd_tr_read(struct snap *s, bool consume);
void kk_dd_tr_snap_free(struct snap *s);
/*
 * The bounded consuming read of trace_pipe_json: at most @limit bytes of
 * each ring are copied after its pipe position, and nothing is consumed
 * yet; s->ready says how many of s->v (in time order) come before every
 * record left uncopied.  kk_dd_tr_consume(s, k) then consumes what v[0..k)
 * took (k <= ready), the lost records said, and the records the thread
 * filter hides before them; the rest stays for the next read.
 */
int kk_dd_tr_read_pipe(struct snap *s, size_t limit);
void kk_dd_tr_consume(struct snap *s, size_t k);
/*
 * The raw reader's bounded consuming read (trace_raw.c): as
 * kk_dd_tr_read_pipe(), but no s->v and no time sort.  Ring i's whole
 * records are copies[i] from rings[i].skip.pos to rings[i].all.pos (ring
 * positions; the copy begins at copy_pos) when in_buffer is not 0, in ring
 * order; those the thread filter hides carry TR_HIDDEN.  @limit bytes are
 * copied in all, shared by the rings that have records (each at least
 * TR_REC_MAX).  kk_dd_tr_consume(s, 0) then moves each ring as its took,
 * upto, all_ok and lost say: the reader sets them.
 */
int kk_dd_tr_read_rings(struct snap *s, size_t limit);
/* A consuming read with nothing to show waits (bounded) for a record first. */
void kk_dd_tr_pipe_wait(void);

/* The lock of the readers' state (held across fork, released in both). */
void kk_dd_tr_lock(void);
void kk_dd_tr_unlock(void);

/* ---- the thread filter (trace_threads.c) ---- */
/* Does dynamic_debug/trace_threads let thread @tid named @comm through?  Under kk_dd_tr_lock(). */
bool kk_dd_tr_thread_shown(pid_t tid, const char *comm);
void kk_dd_tr_threads_init(void);

/* ---- dynamic_debug/trace_clock (trace_clock.c) ---- */
bool kk_dd_tr_clock_realtime(void);
void kk_dd_tr_clock_init(void);

/* ---- the JSON stream (trace_json.c), and what the raw one shares of it ---- */
void kk_dd_tr_json_init(void);
/* The name of the argument of the conversion at @conv (@seg: the text since the previous one). */
void kk_dd_tr_arg_name(const char *seg, const char *conv, unsigned int idx, char *name, size_t cap);
/* The thread's name: the ring's, read with the snapshot, or read now into @buf. */
const char *kk_dd_tr_comm_of(const struct snap_ring *sr, pid_t tid, char *buf, size_t n);
/* A session reader's consuming read (lease touched, bounded wait, @limit bytes a ring): 0 or -errno. */
int kk_dd_tr_session_read(struct snap *s, size_t limit);
/* Its end: v[0..@taken) consumed when @ok, the snapshot freed, the lease touched. */
void kk_dd_tr_session_done(struct snap *s, size_t taken, bool ok);

/* ---- the binary stream (trace_raw.c) ---- */
void kk_dd_tr_raw_init(void);

#endif
