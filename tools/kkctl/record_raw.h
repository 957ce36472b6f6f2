/* SPDX-License-Identifier: MIT */
/*
 * kkctl record's raw path (record_raw.c): the frames of a local process's
 * dynamic_debug/trace_pipe_raw written straight into the ctf directory, one
 * stream a thread, a packet a frame; and what it takes of the ctf writer
 * (record_ctf.c), whose lock it holds for the shared parts.
 */
#ifndef KKCTL_RECORD_RAW_H
#define KKCTL_RECORD_RAW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "record.h"

struct ctf;

/* ---- record_ctf.c ---- */
/* The ctf writer's state, or NULL when @w is not the ctf writer. */
struct ctf *kkr_ctf_of(struct kkr_writer *w);
void kkr_ctf_lock(struct ctf *c);
void kkr_ctf_unlock(struct ctf *c);
/* The rest under kkr_ctf_lock(). */
int kkr_ctf_fail(struct ctf *c, const char *file, int err);	/* -1, said once */
int kkr_ctf_dirfd(const struct ctf *c);			/* -1: the writer failed */
/* A TSDL event class of stream 1 (malloc'ed: taken); its index, or -1. */
long kkr_ctf_add_raw_event(struct ctf *c, char *tsdl);
/* What to add to a UTC ns time to get the clock's value (its 0 set at the first call). */
int64_t kkr_ctf_raw_clock(struct ctf *c, uint64_t utc_ns);
/* The metadata written if it lacks a class: 0, or -1 (the writer failed). */
int kkr_ctf_sync(struct ctf *c);
/* A new stream's instance number, and the trace's uuid. */
uint64_t kkr_ctf_instance(struct ctf *c, unsigned char uuid[16]);
/* @s as the text of a TSDL string literal (printable ASCII, '"' and '\\' escaped, else '_'). */
void kkr_ctf_tsdl_str(FILE *f, const char *s);
/* A field's TSDL name, as the json path's classes name it (malloc'ed; NULL: no memory). */
char *kkr_ctf_field_name(const char *name, size_t i, char **fields);

/* ---- record_raw.c ---- */
struct kkr_raw;
struct kkr_pinfo;

/* A reader's raw state for process @p, writing into @c.  NULL: no memory. */
struct kkr_raw *kkr_raw_new(struct ctf *c, struct kkr_pinfo *p);
/*
 * One reply of trace_pipe_raw (@body, @len bytes: modified in place) into
 * the trace; *@utc the reply's time (kkr_reply_time()) in UTC ns, 0 when
 * it had no records.
 * 0, or -1 when the trace cannot be written (said).  A malformed frame is
 * skipped and said once (*@bad set).
 */
int kkr_raw_take(struct kkr_raw *r, unsigned char *body, size_t len, bool *bad, uint64_t *utc);
void kkr_raw_free(struct kkr_raw *r);

#endif
