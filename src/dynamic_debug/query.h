/* SPDX-License-Identifier: MIT */
/*
 * The dynamic-debug query language: splitting, tokenizing, parsing and
 * matching.  Pure functions over strings (no registry, no I/O), so that the
 * libFuzzer target can build this file alone.
 */
#ifndef KK_DD_QUERY_H
#define KK_DD_QUERY_H

#include <stdbool.h>
#include <stddef.h>

#define DDQ_MAXWORDS	9	/* 4 keyword/value pairs + the flags word */

/* The same values as _DPRINTK_FLAGS_* / _DPRINTK_CLASS_DFLT (checked in core.c). */
#define DDQ_F_NONE		0
#define DDQ_F_PRINT		(1u << 0)
#define DDQ_F_INCL_MODNAME	(1u << 1)
#define DDQ_F_INCL_FUNCNAME	(1u << 2)
#define DDQ_F_INCL_LINENO	(1u << 3)
#define DDQ_F_INCL_TID		(1u << 4)
#define DDQ_F_INCL_SOURCENAME	(1u << 5)
#define DDQ_F_INCL_STACK	(1u << 6)
#define DDQ_F_TRACE		(1u << 8)	/* T: to the trace ring */
#define DDQ_CLASS_DFLT		63

/* Error text collected while parsing, one "dyndbg: ..." line per message. */
struct ddebug_msgs {
	char *buf;
	size_t len, cap;
	int oom;
};
void ddebug_msgs_free(struct ddebug_msgs *m);

struct ddebug_query {
	/* Match terms; NULL = any.  neg_*: the seed's '!' prefix. */
	const char *module, *filename, *function, *format, *class_string;
	bool neg_module, neg_file, neg_func, neg_format;
	unsigned int first_lineno, last_lineno;	/* 0 = don't care */
	/* A line of the control listing written back: every term is exact. */
	bool exact;
	const char *qname;		/* its func:"..." term (C++ sites); NULL: any */
	int exact_class_id;		/* exact lines: "class unknown, _id:N"; else -1 */
	/* new flags = (old & mask) | flags */
	unsigned int flags, mask;
	const char *text;		/* the query as written, trimmed */
};

struct ddebug_block {
	struct ddebug_query *q;
	size_t n, cap;
	char *buf;			/* owned copy of the input; the queries point into it */
};

/*
 * Parse a whole write.  @modname (may be NULL) becomes the module of every
 * query that names none.  Returns 0 (block filled; empty and comment-only
 * queries are skipped), -EINVAL (messages in @msgs; *block freed and
 * emptied) or -ENOMEM.  @bad_index gets the 1-based number of the failing
 * query (may be NULL).
 */
int ddebug_parse_block(const char *text, size_t len, const char *modname, struct ddebug_block *block,
		    struct ddebug_msgs *msgs, unsigned int *bad_index);
void ddebug_block_free(struct ddebug_block *block);
/*
 * The length of the first query of @text (@len bytes), separator excluded,
 * as ddebug_parse_block() splits: at ';' or a newline, a listing line at a
 * newline only.  Returns @len when there is no separator.
 */
size_t ddebug_query_len(const char *text, size_t len);

/* The listing form of @flags: "pTmfsltd" order, or "_". @out holds >= 9 bytes. */
void ddebug_flags_str(unsigned int flags, char *out);

/* Glob with '*' and '?' (the kernel's match_wildcard). */
bool ddebug_glob(const char *pattern, const char *s);

/* The site fields a query is matched against. */
struct ddebug_site {
	const char *module;
	const char *filename;		/* as compiled (__FILE__) */
	const char *filename_rel;	/* relative to the source root; may equal filename */
	const char *function;
	const char *format;
	unsigned int lineno;
	/* C++: the instantiation's qualified name ("Ring<int>::push"); NULL in C */
	const char *qname;
};

/*
 * Everything but the class: modules, file, func, format and lines.  `func`
 * matches the function (__func__) or, in C++, the qualified name.  The
 * caller does the class rule (a site's class must equal the class the query
 * resolves to in the site's module, _DPRINTK_CLASS_DFLT without a class).
 */
bool ddebug_match(const struct ddebug_query *q, const struct ddebug_site *s);

/*
 * Unescape in place like the kernel's format keyword (UNESCAPE_SPACE |
 * UNESCAPE_OCTAL | UNESCAPE_SPECIAL): \t \n \r \v \f \a \e \\ \" and \ooo;
 * any other backslash stays.  Returns the new length.
 */
size_t ddebug_unescape(char *s);
/*
 * Escape @s for the listing: \t \n \r \v \f \\ \" and other control bytes as
 * \ooo.  Writes at most @len bytes including the NUL; returns the length the
 * full escape needs (like snprintf).
 */
size_t ddebug_escape(const char *s, char *out, size_t len);

#endif
