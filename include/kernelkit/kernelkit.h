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

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop
#endif
