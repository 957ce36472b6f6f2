/* SPDX-License-Identifier: MIT */
/* Internal interfaces of the panic facility (src/panic/). */
#ifndef KK_PANIC_INTERNAL_H
#define KK_PANIC_INTERNAL_H

#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernelkit/panic.h"

/* ---- fmt.c: async-signal-safe formatting and output -------------------- */

void panic_write_all(int fd, const void *p, size_t n);
/* vsnprintf work-alikes: return the untruncated length. */
size_t panic_vsnprintf(char *buf, size_t size, const char *fmt, va_list ap);
size_t panic_snprintf(char *buf, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Format and write to fd in pieces of at most 512 bytes. */
void panic_dprintf(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Parse a decimal integer (optional sign); 0 or -EINVAL (also on overflow). */
int panic_parse_long(const char *s, size_t n, long *out);

/* ---- raw helpers (no libc state, no malloc) ---------------------------- */

pid_t panic_gettid(void);
pid_t panic_getpid(void);
/* TracerPid of a thread (tid 0: the calling thread), -1 if unknown. */
int panic_tracer_pid(pid_t tid);

/* ---- settings (panic.c) ----------------------------------------------- */

struct panic_settings {
	int timeout;
	int on_warn;
	int on_oops;
	int restart;
	int exit_status;
	int core_dump;
	int stop_timeout_ms;
	int notifiers_first;
	int sd_watchdog;
	int blink_ms;
};
extern struct panic_settings panic_set;	/* read with __atomic loads */

#define KKP_LOAD(x)	__atomic_load_n(&(x), __ATOMIC_RELAXED)
#define KKP_STORE(x, v)	__atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

extern void (*volatile panic_blink_fn)(int state, void *arg);
extern void *volatile panic_blink_arg;

/* The fd that reports go to (2). */
#define KKP_FD	2

/* ---- panic.c: the flow ------------------------------------------------- */

extern int panic_owner;		/* tid, 0 = none */
extern char panic_msg[1024];

/* Reserve the panic stacks and load libgcc_s for backtrace(), once (first configuration). */
void panic_prepare(void);
/* Park the calling thread for good (it has lost the race or was stopped). */
__attribute__((noreturn)) void panic_park_self(void);
/* Run fn(arg) so that a panic or a fault inside it returns here: 0 ok, 1 recovered. */
int panic_guarded(const char *what, void (*fn)(void *), void *arg);
/* Exit with the panic status, now. */
__attribute__((noreturn)) void panic_exit_status_now(void);
/* Restart as the restart setting says. */
__attribute__((noreturn)) void panic_restart(void);

/* ---- stop.c ------------------------------------------------------------ */

/* Call fn for each thread of the process until it returns nonzero (then 1); 0, or -errno. */
int panic_for_each_task(int (*fn)(pid_t tid, void *arg), void *arg);
void panic_stop_others(struct kk_panic_stats *st);
/* An fd parked threads write to when they see a tracer (eventfd), or -1. */
extern int panic_debug_evfd;
extern int panic_debug_wanted;

/* ---- wait.c ------------------------------------------------------------ */

__attribute__((noreturn)) void panic_after_panic(void);
const char *panic_policy_name(void);
int panic_policy_select(const char *name);
int panic_policy_exists(const char *name);
/* "name(prio) ..." into buf. */
void panic_policy_list(char *buf, size_t n);
void panic_sd_notify(const char *msg);
/* Ask the kernel to re-exec with: saved at load. */
extern char **panic_argv;
extern uint64_t panic_init_mask;

/* ---- ctl.c -------------------------------------------------------------- */

void panic_env_init(void);
void panic_control_init(void);
/* Remove the control socket (the endpoint's thread is parked). */
void panic_control_gone(void);

#endif
