/* SPDX-License-Identifier: MIT */
/*
 * kkctl record's own header: what record.c and record_json.c share (the
 * writers see only record.h).
 */
#ifndef KKCTL_RECORD_INT_H
#define KKCTL_RECORD_INT_H

#include <pthread.h>

#include "kkctl.h"
#include "record.h"

/*
 * One line of a target's dynamic_debug/trace_pipe_json (docs/dynamic_debug.md
 * and the spec of issue 39: "event" and "lost"), or of a remote kkctl record's
 * --format jsonl (-H: the same, with "host", "vpid" and "process" added, and
 * "exited" lines).  Strings point into the parsed line.
 */
enum kkr_kind { KKR_EVENT, KKR_LOST, KKR_EXITED };

struct kkr_line {
	enum kkr_kind kind;
	uint64_t ts, mono, count;
	int64_t pid, tid, vpid;
	uint64_t line;
	const char *comm, *module, *function, *file, *format, *message;
	const char *host, *process;	/* the jsonl form only */
	bool relabelled;		/* it had host, vpid and process */
	unsigned seen;			/* the keys it had (bit per key) */
	size_t nargs, cap;
	struct kkr_arg *args;		/* kkr_line_free() frees them */
};

/*
 * Parse the line @s (@len bytes, no newline; modified: its strings are
 * unescaped in place and NUL-terminated) into @l.  0, or -1 with *@why
 * saying what is wrong (a static string).  @l->args is reused across calls.
 */
int kkr_parse_line(char *s, size_t len, struct kkr_line *l, const char **why);
void kkr_line_free(struct kkr_line *l);

/*
 * The time up to which a trace_pipe_raw reply sent every thread's records,
 * for both readers of it (record_raw.c, record_rawdec.c): its RING frames'
 * earliest last record.  A reply sends each ring in ring order, not a time
 * prefix across threads: a thread cut by its share of the read (a full
 * reply leaves a ring's newer records for the next read) has older records
 * still to come than another thread's last (docs/tracing.md).
 * *@t: the time so far (0: no frame had records); @last: one frame's last
 * record (0: it had none).
 */
static inline void kkr_reply_time(uint64_t *t, uint64_t last)
{
	if (last && (!*t || last < *t))
		*t = last;
}

/*
 * record_rawdec.c: a local process's dynamic_debug/trace_pipe_raw replies
 * decoded into the lines kkr_parse_line() gives (jsonl, text, perfetto).
 * kkr_rawdec_take() gives each record of reply @body (@len bytes), and a
 * thread's lost records before them, to @fn (its strings live until it
 * returns); a malformed frame or record is skipped, said once (*@bad set).
 * @fn returns 0 (taken), 1 (not: a thread not asked for) or -1 (stop).
 * *@last: the reply's time (kkr_reply_time()) in wall-clock ns, of the
 * records @fn took; 0 when it took none.
 * 0, or -1 when @fn returned -1 (it stops there).
 */
struct kkr_rawdec;
struct kkr_rawdec *kkr_rawdec_new(int pid);
void kkr_rawdec_free(struct kkr_rawdec *d);
int kkr_rawdec_take(struct kkr_rawdec *d, const unsigned char *body, size_t len, bool *bad,
		    int (*fn)(void *arg, const struct kkr_line *l), void *arg, uint64_t *last);
/* The last reply's complete (its HEAD frame's, trace_raw.h) in wall-clock
 * ns: every record a later reply sends is at or after it.  0: not said (an
 * older library; a write under way in a ring with no record copied). */
uint64_t kkr_rawdec_complete(const struct kkr_rawdec *d);

/* What the command line of kkctl record gave. */
struct kkr_opts {
	struct kkctl_sel sel;
	const char **hosts;	/* -H */
	int nh;
	const char *path;	/* -o (NULL: the format's default) */
	const char *format;
	uint64_t duration_ns, count;
	struct kkr_thread {	/* --threads, split at commas (malloc'ed list) */
		const char *text;	/* the entry, as given (in argv) */
		int tid;		/* its thread id; 0: a glob of names */
	} *threads;
	size_t nthreads;
	bool wallclock, stdin_stop;
	char **queries;
	int nq;
	int cmd_argc;		/* "record" and its arguments: what -H gives again */
};

/* Where records come from: one local process, or one host (-H). */
struct kkr_src {
	uint64_t horizon;	/* wall-clock ns: every record written before is in */
	bool live;		/* still read: the merge waits for it */
};

/* A process records come from, as the writers see it. */
struct kkr_pinfo {
	struct kkr_proc proc;
	char host[128], name[64];
	uint64_t events, lost;
};

/* Records of a reader are carved from chunks, not malloc()ed one by one:
 * a chunk is freed when the last of its records has been written and its
 * reader has moved on (@refs: its records, and its reader's 1). */
struct kkr_chunk {
	unsigned long refs;
	size_t used, size;
	_Alignas(16) char mem[];
};

/* A record waiting to be ordered (its arguments and strings follow it, in
 * one piece: of @chunk, or of its own malloc() if that is NULL). */
struct kkr_rec {
	struct kkr_chunk *chunk;
	uint64_t ts, seq, arrived, count, mono;
	enum kkr_kind kind;
	struct kkr_pinfo *p;
	int tid;
	unsigned int line;
	const char *comm, *module, *function, *file, *format, *message;
	size_t nargs;
	struct kkr_arg *args;
};

/* The recording's state, shared by its threads (under lock). */
struct kkr_state {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct kkr_rec **heap;		/* by ts, then arrival */
	size_t n, cap;
	uint64_t seq;
	struct rtarget **tv;		/* the local targets, ever */
	size_t nt, tcap;
	struct kkr_src **srcs;		/* the hosts (-H) */
	size_t nsrc;
	bool stop, final_read, begun_ok;
	bool host_failed;		/* a host's kkctl failed: the end */
	bool opened;			/* the writer's output is open */
	char *body;			/* "begin 1000\n" and the queries */
	size_t blen;
	struct kkr_opts *opts;
	uint64_t events, lost, malformed, dropped;
	uint64_t stop_at;		/* kk_now_ns(): the end began */
	uint64_t end_by;		/* kk_now_ns(): the end reads until then, at most */
	uint64_t unwritten;		/* events read and not written: a second signal */
	uint64_t held_events, held_lost;	/* in the heap: events, and losses counted */
};
extern struct kkr_state kkr;

/* record.c */
int kkctl_record(struct kkr_opts *o);
struct kkr_rec *kkr_rec_new(const struct kkr_line *l, struct kkr_pinfo *p);
void kkr_rec_free(struct kkr_rec *r);
void kkr_push(struct kkr_src *src, struct kkr_rec **v, size_t n, uint64_t horizon);
bool kkr_room(void);
bool kkr_thread_wanted(int tid, const char *comm);
int kkr_check_output(const char *path, bool dir);
int kkr_writer_open(struct kkr_writer *w);
int kkr_record_loop(struct kkr_writer *w);
int kkr_finish(struct kkr_writer *w, bool writer_ok);
void kkr_summary(const char *path);
/* A second signal came: end at once, write no more to an output that may
 * block (a pipe, a terminal). */
bool kkr_hurried(void);
/* A signal (or --stdin-stop's end) came: the recording ends. */
bool kkr_signalled(void);
/* An output's error: an errno, or KKR_EHURRIED (a second signal came and
 * the output is a pipe or a terminal, which may never take the rest), or
 * KKR_ENOREADER (the output is a fifo, and the end came before a reader). */
enum { KKR_EHURRIED = -1, KKR_ENOREADER = -2 };
const char *kkr_out_strerror(int err);
/* A regular file: a write to it never waits for a reader. */
bool kkr_fd_regular(int fd);
int kkr_open_output(const char *path, int *err);

/* record_remote.c: -H */
int kkr_record_hosts(struct kkr_opts *o, struct kkr_writer *w);
void kkr_remote_stop(void);
void kkr_remote_join(void);
size_t kkr_remote_procs(void);

/*
 * record_out.c: the output of a line writer (jsonl, text): a record is
 * formatted into memory and written whole, so that a full disk leaves the
 * file readable up to its last whole line (it is cut back there).
 */
struct kkr_out {
	int fd;
	bool own;		/* we opened it (not standard output) */
	bool regular;		/* a regular file (a write never waits for a reader) */
	bool failed;		/* said why; nothing more is written */
	const char *path;
	char *buf;
	size_t len, cap;
	uint64_t done;		/* bytes written and whole */
};

int kkr_out_open(struct kkr_out *o, const char *path);
void kkr_out_printf(struct kkr_out *o, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void kkr_out_mem(struct kkr_out *o, const char *s, size_t n);
#define kkr_out_lit(o, lit) kkr_out_mem(o, lit, sizeof(lit) - 1)	/* a string literal */
void kkr_out_u64(struct kkr_out *o, uint64_t v);
void kkr_out_i64(struct kkr_out *o, int64_t v);
char *kkr_digits(char *end, uint64_t v);
void kkr_out_json(struct kkr_out *o, const char *s);
void kkr_out_text(struct kkr_out *o, const char *s);
int kkr_out_record(struct kkr_out *o);
int kkr_out_flush(struct kkr_out *o);
int kkr_out_close(struct kkr_out *o);

/* The length of the valid UTF-8 sequence at @p (@left bytes there), 0 if it
 * is none: the parser and every writer check UTF-8 with this one. */
size_t kkr_utf8_len(const unsigned char *p, size_t left);
/* The first byte from @p on (before @end) that a JSON string does not hold
 * as it is: a control character, '"', '\\', DEL, and unless @out (strings
 * checked as UTF-8 already) a byte past ASCII: a run of plain bytes is
 * found at once, eight bytes a step. */
const char *kkr_json_run(const char *p, const char *end, bool out);

#endif
