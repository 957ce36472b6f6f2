/* SPDX-License-Identifier: MIT */
/*
 * Library-wide calls that have no kernel twin.
 *
 * kernelkit starts threads only when a facility needs one (see
 * docs/guest.md for the list).  A program that must be single-threaded for a
 * while (before a per-thread seccomp filter, before a fork without exec)
 * calls kk_threads_stop(); when it returns, no library thread runs and none
 * will start until kk_threads_start().  Work that needs a thread meanwhile is
 * done in the caller or waits (each facility documents which).
 */
#ifndef KERNELKIT_KERNELKIT_H
#define KERNELKIT_KERNELKIT_H

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* Stop every library thread and keep them stopped.  Returns 0. */
int kk_threads_stop(void);
/* Allow library threads again, and restart those that are still needed. 0. */
int kk_threads_start(void);

/*
 * For debuggers, not for programs: the library calls this empty function
 * (under a tracer only) just before it stops the other threads with signal
 * @sig to patch code.  The gdb helper (tools/gdb/libkernelkit.so-gdb.py)
 * puts an internal breakpoint on it to let @sig pass silently; it is
 * exported so that this works on a stripped library too.
 */
void kk_gdb_stop_signal(int sig);

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif
