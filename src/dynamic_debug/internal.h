/* SPDX-License-Identifier: MIT */
/* Shared between the files of src/dynamic_debug/. */
#ifndef KK_DD_H
#define KK_DD_H

#include <kernelkit/dynamic_debug.h>

/* @f relative to the source root (the working directory at start-up, or
 * $KK_DYNDBG_SRCROOT), without a leading "./". */
const char *kk_dd_rel_name(const char *f);

/* KK_DYNDBG_SINK=stderr|syslog|journal (journal.c), read with KK_DYNDBG. */
void kk_dd_sink_env(void);
kk_dyndbg_sink_fn kk_dd_sink_current(void);
void kk_dd_sink_file_add(void);
/* ---- inherit.c: the state exec'd images inherit ---- */
#include <stdbool.h>
#include <stddef.h>
struct ddebug_block;
/* @b was applied live (@modname as given): add its queries to the state. Under ddebug_lock. */
void kk_dd_inherit_record_locked(const struct ddebug_block *b, const char *modname);
/* The queries of KK_DYNDBG_INHERIT to apply at start-up, or NULL (also reads the opt-out). */
const char *kk_dd_inherit_env(void);
/* Adds the control file dynamic_debug/inherit (from ddebug_init). */
void kk_dd_inherit_init(void);
/*
 * For posix_spawn: @call with @envp carrying the state (a copy on the stack
 * or mmap'ed, freed when @call returns; @envp itself when there is nothing
 * to add).  Returns what @call returned.  Takes no lock, does not malloc.
 */
int kk_dd_inherit_spawn(char *const envp[], int (*call)(char *const env[], void *arg), void *arg);


/* ---- cxxname.c: the C++ names of sites, under ddebug_lock ---- */
/* The qualified name of a C++ site's instantiation ("Ring<int>::push"), or NULL. */
const char *kk_dd_cxx_name_locked(const struct _ddebug *d);
/* @sites (sorted by address) go away with their object: drop their names. */
void kk_dd_cxx_names_forget_locked(struct _ddebug *const *sites, size_t n);

/* ---- core.c, for trace.c: is @d a registered site (under the lock) ---- */
void kk_dd_sites_lock(void);
void kk_dd_sites_unlock(void);
bool kk_dd_site_known_locked(const struct _ddebug *d);

/* ---- core.c, for session.c: apply a block and put sites back, under ddebug_lock ---- */
struct ddebug_block;
struct kk_buf;
/* A site a session changed: its flags before, and the flags it set. */
struct kk_dd_change {
	struct _ddebug *dp;		/* NULL once its object is unloaded */
	unsigned int before, set;
};
struct ddebug_table;
/*
 * Apply @b as a control write would (all or nothing, whatever
 * all_or_nothing says; not recorded for exec'd images), to every table or
 * to @only, with the sites lock held.  On success *@ch (malloc'ed, or NULL)
 * holds the *@n sites whose flags changed; on failure nothing changed and
 * @why got the report, whose last line says why.
 */
int kk_dd_apply_locked(const struct ddebug_block *b, struct ddebug_table *only,
		       struct kk_dyndbg_result *res, struct kk_dd_change **ch, size_t *n,
		       struct kk_buf *why);
/*
 * Put back @ch[0..n) whose flags are still the ones set (others are left as
 * they are), in one batch, with the sites lock held.  0, with the counts, or
 * -errno: nothing changed.
 */
int kk_dd_restore_locked(const struct kk_dd_change *ch, size_t n, unsigned long *restored,
			 unsigned long *left);

/* ---- session.c: dynamic_debug/session, a lease on what a tracer switched on ---- */
/* Renew the open session's lease (a read of trace_pipe_json does): lock-free,
 * for any thread, the endpoint's included.  Nothing when no session is open. */
void kk_dd_session_touch(void);
/* Adds the control file and the fork handler (from ddebug_init). */
void kk_dd_session_init(void);
/* An object's sites go (sorted by address, @n of them): the session forgets
 * them, under the sites lock. */
void kk_dd_session_forget_locked(struct _ddebug *const *sites, size_t n);
/* An object's sites come (a dlopen, a library still loading at the begin):
 * an open session applies its queries to them, under the sites lock. */
void kk_dd_session_add_locked(struct ddebug_table *t, size_t nsites);

/* ---- trace.c: the trace ring (the T flag) ---- */
#include <stdarg.h>
/* Record a T site's message: async-signal-safe, no lock, no malloc. */
void kk_dd_trace_record(const struct _ddebug *d, const char *fmt, va_list ap);
/* Adds the control files (from ddebug_init). */
void kk_dd_trace_init(void);
/* print_time.c: "[SEC.USEC] " into @buf when dynamic_debug/print_time is on, else nothing. */
size_t kk_dd_time_prefix(char *buf, size_t len);
void kk_dd_print_time_init(void);
/* An object with sites is being unloaded: format addresses may be reused. */
void kk_dd_trace_forget_formats(void);
/*
 * The flight recorder: write the last @max records of every thread, merged
 * by time, to @fd.  For the panic path: no lock, no malloc, and @snp (an
 * async-signal-safe snprintf) formats each argument.  Call with the other
 * threads stopped.
 */
#define KK_DD_TRACE_PANIC_LINES	200
typedef size_t (*kk_dd_snprintf_fn)(char *buf, size_t size, const char *fmt, ...);
void kk_dd_trace_dump_fd(int fd, unsigned int max, kk_dd_snprintf_fn snp);
/* trace_raw.c: a session began, so the next trace_pipe_raw read is small (RAW_READ_FIRST). */
void kk_dd_tr_raw_session_begun(void);
#endif
