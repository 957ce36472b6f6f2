/* SPDX-License-Identifier: MIT */
/*
 * kkctl record: the session's records, and the writers that put them in a
 * file.  record.c selects the processes, opens a session in each (the
 * library's dynamic_debug/session file), reads their records as JSON lines
 * (dynamic_debug/trace_pipe_json), merges them in time order and hands each
 * to the writer of the chosen --format.  A writer is a file of its own
 * (record_<name>.c) with one struct kkr_writer_ops: adding a format is adding
 * a file and a line in kkr_writers[] (record.c).
 *
 * Every string a writer gets lives until the call returns (copy what you
 * keep).  Times are nanoseconds: @ts is UTC (CLOCK_REALTIME, since the
 * epoch), @mono the process's CLOCK_MONOTONIC.
 */
#ifndef KKCTL_RECORD_H
#define KKCTL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum kkr_type { KKR_INT, KKR_UINT, KKR_FLOAT, KKR_STRING, KKR_POINTER, KKR_CHAR };

struct kkr_arg {
	const char *name;	/* "len" for "len=%d" or "len: %d", else "arg0", "arg1", ... */
	enum kkr_type type;
	union {
		int64_t i;	/* KKR_INT, KKR_CHAR */
		uint64_t u;	/* KKR_UINT, KKR_POINTER */
		double f;	/* KKR_FLOAT */
		const char *s;	/* KKR_STRING */
	} v;
};

/* Who wrote a record: a process on a host ("" is this host). */
struct kkr_proc {
	const char *host;
	int pid;		/* as kkctl sees it (the host's pid namespace) */
	int vpid;		/* as the process sees itself (its own pid namespace) */
	const char *name;	/* comm */
};

struct kkr_event {
	const struct kkr_proc *proc;
	uint64_t ts, mono;
	int tid;
	const char *comm;	/* the thread's name */
	const char *module, *function, *file;
	unsigned int line;
	const char *format;	/* the site's format, without a trailing newline */
	const char *message;	/* the text it prints, without a trailing newline */
	size_t nargs;
	const struct kkr_arg *args;
};

struct kkr_writer;

struct kkr_writer_ops {
	const char *name;	/* --format NAME */
	bool dir;		/* the output is a directory (ctf), else a file ("-": stdout) */
	/* 0, or -1 after one line on stderr saying why ("kkctl: ..."). */
	int (*open)(struct kkr_writer *w, const char *path);
	int (*event)(struct kkr_writer *w, const struct kkr_event *e);
	/* @count records of thread @tid lost (overwritten before they were read). */
	int (*lost)(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		    uint64_t ts);
	/* @p exited at about @ts: every record it wrote before is in. */
	int (*exited)(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts);
	/* Flush and close; 0, or -1 after one line (a full disk: what is written
	 * stays readable up to the last whole record). */
	int (*close)(struct kkr_writer *w);
	/* Optional (NULL: none): write out what is held.  record.c calls it
	 * after each round of ordered records, so that the file grows as they
	 * come.  0, or -1 after one line. */
	int (*flush)(struct kkr_writer *w);
};

struct kkr_writer {
	const struct kkr_writer_ops *ops;
	void *priv;		/* the writer's own state */
	int wallclock;		/* text: print UTC time stamps */
};

extern const struct kkr_writer_ops kkr_ctf_ops, kkr_perfetto_ops, kkr_jsonl_ops, kkr_text_ops;

#endif
