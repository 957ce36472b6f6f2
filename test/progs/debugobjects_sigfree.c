// SPDX-License-Identifier: MIT
/*
 * free() in a signal handler that interrupted a debug-objects hook on the
 * same thread, under the preload library (test/scripts/debugobjects_preload.sh).
 *
 *   debugobjects_sigfree same    the handler frees a block in the page (so the hash
 *                          bucket) whose lock the interrupted hook holds
 *   debugobjects_sigfree other   ... a block in another page
 *
 * The freed block holds an active object.  The interruption is deterministic:
 * activating an untracked object calls is_static_object() under its bucket
 * lock, and that raise()s SIGUSR1.  Prints "freed=1 nested_skips=N
 * warnings=N fixups=N" and exits 0; before the fix, "same" never returned.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/debugobjects.h>

static volatile sig_atomic_t armed, freed;
static long *victim;		/* a malloc'ed block holding an active object */

static bool raise_signal(void *addr)
{
	(void)addr;
	if (armed) {
		armed = 0;
		raise(SIGUSR1);
	}
	return false;
}

static bool fixup_free(void *addr, enum debug_obj_state state);

static const struct debug_obj_descr sig_descr = {
	.name = "sigfree_obj",
	.is_static_object = raise_signal,
	.fixup_free = fixup_free,
};

static bool fixup_free(void *addr, enum debug_obj_state state)
{
	if (state == ODEBUG_STATE_ACTIVE)
		debug_object_deactivate(addr, &sig_descr);
	return true;
}

static void handler(int sig)
{
	(void)sig;
	free(victim);
	freed = 1;
}

/* The hash bucket of an address, as src/debugobjects/core.c computes it. */
static unsigned int bucket_of(uintptr_t a)
{
	return (unsigned int)(((a >> 12) * 0x61C8864680B583EBull) >> (64 - 14));
}

/* Does [p, p+len) share a bucket with the page of @t? */
static int shares_bucket(const void *p, size_t len, const void *t)
{
	for (uintptr_t a = (uintptr_t)p & ~4095ul; a < (uintptr_t)p + len; a += 4096)
		if (bucket_of(a) == bucket_of((uintptr_t)t))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	int same = argc > 1 && !strcmp(argv[1], "same");
	struct kk_debug_objects_stats st;
	long *held[64], *target = NULL;
	int n = 0;

	signal(SIGUSR1, handler);
	if (!kk_debug_objects_enabled()) {
		fprintf(stderr, "tracking is off: run with the preload library\n");
		return 2;
	}
	/* a block for the hook's object, and the victim in the same page or not */
	target = malloc(64);
	for (; n < 64; n++) {
		size_t len = same ? 64 : 8192;

		held[n] = malloc(len);
		if (shares_bucket(held[n], len, target) == same &&
		    (!same || (uintptr_t)held[n] >> 12 == (uintptr_t)target >> 12))
			break;
	}
	if (n == 64) {
		fprintf(stderr, "no block in the %s page\n", same ? "same" : "another");
		return 2;
	}
	victim = held[n];
	debug_object_init(victim, &sig_descr);
	debug_object_activate(victim, &sig_descr);

	armed = 1;
	debug_object_activate(target, &sig_descr);	/* untracked: raises under the lock */

	kk_debug_objects_get_stats(&st);
	printf("freed=%d nested_skips=%lu warnings=%lu fixups=%lu\n", freed, st.nested_skips,
	       st.warnings, st.fixups);
	for (int i = 0; i < n; i++)
		free(held[i]);
	free(target);
	return freed ? 0 : 1;
}
