/* SPDX-License-Identifier: MIT */
/* Shared between the files of src/dynamic_debug/. */
#ifndef KK_DD_H
#define KK_DD_H

/* @f relative to the source root (the working directory at start-up, or
 * $KK_DYNDBG_SRCROOT), without a leading "./". */
const char *kk_dd_rel_name(const char *f);

/* KK_DYNDBG_SINK=stderr|syslog|journal (journal.c), read with KK_DYNDBG. */
void kk_dd_sink_env(void);
kk_dyndbg_sink_fn kk_dd_sink_current(void);
void kk_dd_sink_file_add(void);

#endif
