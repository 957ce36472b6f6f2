// SPDX-License-Identifier: MIT
/*
 * The signal handlers the library installs (sighand.c in internal.h).
 *
 * The patch plan looks at the program's handlers: one whose sa_mask blocks
 * SIGTRAP runs sites with SIGTRAP blocked (src/text_sync.c).  The
 * library's own handlers block every signal too (a trap inside them would
 * nest), but they run no site while a batch could be in flight, so they
 * must not count: each is noted here before it is installed.
 */
#include <signal.h>
#include <stdatomic.h>

#include "common/internal.h"

#define KK_OWN_HANDLERS 8

static _Atomic(uintptr_t) own[KK_OWN_HANDLERS];

void kk_handler_note(void (*fn)(int, siginfo_t *, void *))
{
	uintptr_t f = (uintptr_t)fn;

	for (int i = 0; i < KK_OWN_HANDLERS; i++) {
		uintptr_t none = 0;

		if (atomic_load(&own[i]) == f ||
		    atomic_compare_exchange_strong(&own[i], &none, f))
			return;
	}
}

bool kk_handler_is_library(const struct sigaction *sa)
{
	uintptr_t f = (uintptr_t)sa->sa_sigaction;

	if (!(sa->sa_flags & SA_SIGINFO))
		return false;
	for (int i = 0; i < KK_OWN_HANDLERS; i++)
		if (atomic_load(&own[i]) == f)
			return true;
	return false;
}
