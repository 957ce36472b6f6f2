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
struct ddq_block;
/* @b was applied live (@modname as given): add its queries to the state. Under dd_lock. */
void kk_dd_inherit_record_locked(const struct ddq_block *b, const char *modname);
/* The queries of KK_DYNDBG_INHERIT to apply at start-up, or NULL (also reads the opt-out). */
const char *kk_dd_inherit_env(void);
/* Adds the control file dynamic_debug/inherit (from dd_init). */
void kk_dd_inherit_init(void);
/*
 * For posix_spawn: @call with @envp carrying the state (a copy on the stack
 * or mmap'ed, freed when @call returns; @envp itself when there is nothing
 * to add).  Returns what @call returned.  Takes no lock, does not malloc.
 */
int kk_dd_inherit_spawn(char *const envp[], int (*call)(char *const env[], void *arg), void *arg);

#endif
