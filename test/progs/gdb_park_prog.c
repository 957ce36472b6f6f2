// SPDX-License-Identifier: MIT
/*
 * The gdb helper's part of the stop_machine protocol, without the library
 * (test/scripts/gdb_helper.sh): call kk_gdb_stop_signal(sig) as the library
 * does under a tracer, then send @sig to another thread and to this one, as
 * stop_machine does.  With tools/gdb/libkernelkit.so-gdb.py loaded, gdb must
 * not stop on @sig; without it, gdb stops (default: real-time signals stop).
 * Exit 0 when both signals reached their handler.
 *
 * The program links the library, so that gdb auto-loads the helper with it.
 * This program's own kk_gdb_stop_signal is not exported (no -rdynamic) and so
 * does not interpose the library's; gdb finds it by its symbol.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>

/* Links libkernelkit.so (the helper is auto-loaded with it); no sites. */
#include <kernelkit/jump_label.h>

static volatile sig_atomic_t got;

__attribute__((noinline, used)) void kk_gdb_stop_signal(int sig)
{
	__asm__ __volatile__("" : : "r"(sig) : "memory");
}

static void on_sig(int sig)
{
	(void)sig;
	got++;
}

static void *waiter(void *arg)
{
	sigset_t set;
	int sig = *(int *)arg;

	/* Wait for @sig with it blocked: no sleep, no race. */
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigwait(&set, &sig);
	got++;
	return NULL;
}

int main(void)
{
	int sig = SIGRTMAX - 4;
	sigset_t set;
	pthread_t t;

	signal(sig, on_sig);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_BLOCK, &set, NULL);	/* inherited by the waiter */
	if (pthread_create(&t, NULL, waiter, &sig))
		return 2;
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	kk_gdb_stop_signal(sig);
	pthread_kill(t, sig);
	pthread_join(t, NULL);
	raise(sig);
	printf("gdb_park_prog: %d signals\n", (int)got);
	return got == 2 ? 0 : 1;
}
