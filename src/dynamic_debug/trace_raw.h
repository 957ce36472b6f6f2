/* SPDX-License-Identifier: MIT */
/*
 * The reply of dynamic_debug/trace_pipe_raw (trace_raw.c), as kkctl record
 * reads it (tools/kkctl/record_raw.c): docs/tracing.md, "The raw stream".
 *
 * A reply is frames, each a multiple of 8 bytes long, in the byte order of
 * the host (the endpoint is local: kkctl reads raw only from processes of
 * its own machine).  First one HEAD frame, then the CLASS frames of the
 * classes the reply's records use, then the RING frames.  A reader checks
 * every length against the reply's end: it trusts none of it.
 */
#ifndef KK_DD_TRACE_RAW_H
#define KK_DD_TRACE_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KK_RAW_VERSION	1u

enum kk_raw_type { KK_RAW_HEAD = 1, KK_RAW_CLASS = 2, KK_RAW_RING = 3 };

/* Every frame starts so; @len counts the whole frame, a multiple of 8. */
struct kk_raw_frame {
	uint32_t type, len;
};

/*
 * Once a reply: the process, and CLOCK_REALTIME - CLOCK_MONOTONIC when the
 * read began.  @complete (CLOCK_MONOTONIC ns; 0: not known): every record
 * that a later read of this file sends is stamped at or after it, so a
 * reader may write out every record before it now.  Added after the first
 * release: a reader takes it only from a frame long enough to hold it
 * (KK_RAW_HEAD_V1 bytes came before), and its own rule otherwise.
 */
struct kk_raw_head {
	struct kk_raw_frame f;
	uint32_t version;
	int32_t pid;
	int64_t real_off;
	uint64_t complete;
};
#define KK_RAW_HEAD_V1	24u	/* the frame without @complete */

/* The HEAD frame at the start of reply @b (@len bytes) into *@h, the fields
 * its frame does not hold zero.  False: no head of this version. */
static inline bool kk_raw_head_get(const unsigned char *b, size_t len, struct kk_raw_head *h)
{
	memset(h, 0, sizeof(*h));
	if (len < KK_RAW_HEAD_V1)
		return false;
	memcpy(h, b, KK_RAW_HEAD_V1);
	if (h->f.type != KK_RAW_HEAD || h->version != KK_RAW_VERSION || h->f.len < KK_RAW_HEAD_V1)
		return false;
	if (h->f.len >= sizeof(*h) && len >= sizeof(*h))
		memcpy(h, b, sizeof(*h));
	return true;
}

/*
 * An event class: one site's format packed up to a number of conversions
 * (a record cut short by the ring, TR_INCOMPLETE, has a class of its own).
 * @id is the reply's own (0, 1, ...: a reader maps it to its own ids).
 * Then the strings module, function, file, format (slen[] bytes each, no
 * NUL), then @nfields fields, each struct kk_raw_field and its name's
 * bytes, then zeros to the frame's end.
 */
struct kk_raw_class {
	struct kk_raw_frame f;
	uint32_t id, line;
	uint16_t nfields;
	uint16_t slen[4];
	uint16_t pad;
};

/* A field's type, as its value is in a record. */
enum kk_raw_kind {
	KK_RAW_INT = 1,		/* signed, size 4 or 8 */
	KK_RAW_UINT,		/* unsigned, size 4 or 8 */
	KK_RAW_CHAR,		/* %c: an int, size 4 */
	KK_RAW_PTR,		/* %p: unsigned, the size of a pointer */
	KK_RAW_FLOAT,		/* a double, size 8 (a long double is sent as one) */
	KK_RAW_STRING,		/* uint16_t length, then that many bytes (size 0) */
};

struct kk_raw_field {
	uint8_t kind, size;
	uint16_t name_len;
};

/*
 * A thread's records (one ring's, of one thread): @lost, the records it
 * overwrote before this reader had them since the previous read; @nrec
 * records follow, each struct kk_raw_rec, its values packed as the class
 * says (no padding between them): rec.len bytes, then zeros to a multiple
 * of 8 (where the next record starts).
 */
struct kk_raw_ring {
	struct kk_raw_frame f;
	int32_t tid;
	uint32_t nrec;
	uint64_t lost;
	char comm[16];		/* the thread's name, NUL-padded */
};

struct kk_raw_rec {
	uint32_t len;		/* the record without its padding (this and its values) */
	uint32_t cls;		/* a CLASS frame's id of this reply */
	uint64_t ts;		/* CLOCK_MONOTONIC ns */
	int32_t tid, pid;	/* as the process sees them */
};

#endif
