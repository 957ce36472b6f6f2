/* SPDX-License-Identifier: MIT */
/* What the library's facilities may ask of the control endpoint (not for kkctl). */
#ifndef KK_CONTROL_INTERNAL_H
#define KK_CONTROL_INTERNAL_H

/*
 * There is something to control: an object with static-key or pr_debug sites
 * registered.  Starts the endpoint unless KK_CONTROL=0 (or it runs already);
 * while the library's threads are stopped, it starts at kk_threads_start().
 * Cheap after the first call.  Call it with no facility lock held.
 */
void kk_control_autostart(void);

/*
 * Refuse new connections from now on (the endpoint's thread is parked by a
 * panic and would never answer).  Lock-free and async-signal-safe: one fstat()
 * and one shutdown() on the listening socket, if it still is ours.
 */
void kk_control_refuse(void);

#endif
