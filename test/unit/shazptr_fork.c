// SPDX-License-Identifier: MIT
/* fork(): the child keeps only the forking thread's slot and a working scan
 * thread of its own. */
#include <criterion/criterion.h>
#include <errno.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shazptr_util.h"

static int a, b;

struct holder {
	int held, release;
};

static void *holder_fn(void *arg)
{
	struct holder *h = arg;
	struct shazptr_guard g = shazptr_acquire(&a);

	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	shzt_wait_flag(&h->release, SHZT_BOUND_MS);
	shazptr_clear(g);
	return NULL;
}

/* Runs in the child: returns the exit status. */
static int child_checks(void)
{
	struct shzt_syncer s;

	alarm(10);	/* a hang kills the child: the parent sees a signal */
	if (kk_shazptr_scan(&a) != 0)
		return 10;	/* the parent's other thread's slot survived */
	synchronize_shazptr(&a);
	/* The scan thread must be restarted in the child. */
	kk_shazptr_set_skip_synchronize_self_scan(true);
	synchronize_shazptr(&a);
	/* And still block on a real holder in the child. */
	struct shazptr_guard g = shazptr_acquire(&b);

	if (shzt_syncer_start(&s, &b))
		return 11;
	shzt_sleep_ms(SHZT_HOLD_MS);
	if (__atomic_load_n(&s.done, __ATOMIC_ACQUIRE))
		return 12;
	shazptr_clear(g);
	if (!shzt_syncer_finish(&s))
		return 13;
	struct kk_shazptr_stats st;

	kk_shazptr_get_stats(&st);
	if (st.slots_in_use != 1)	/* only this thread (the syncer exited) */
		return 14;
	return 0;
}

Test(shazptr_fork, child_drops_other_threads_slots)
{
	struct holder h = { 0, 0 };
	pthread_t t;
	int status;

	/* Start the parent's scan thread so that the child inherits its state. */
	kk_shazptr_set_skip_synchronize_self_scan(true);
	synchronize_shazptr(&b);
	kk_shazptr_set_skip_synchronize_self_scan(false);

	cr_assert_eq(pthread_create(&t, NULL, holder_fn, &h), 0);
	cr_assert(shzt_wait_flag(&h.held, SHZT_BOUND_MS));
	cr_assert_eq(kk_shazptr_scan(&a), -EBUSY);

	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0)
		_exit(child_checks());
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	__atomic_store_n(&h.release, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	cr_assert(WIFEXITED(status), "child killed by signal %d", WTERMSIG(status));
	cr_assert_eq(WEXITSTATUS(status), 0, "child check %d failed", WEXITSTATUS(status));
	cr_assert_eq(kk_shazptr_scan(&a), 0);
}

Test(shazptr_fork, forking_thread_keeps_its_guard)
{
	int status;
	struct shazptr_guard g = shazptr_acquire(&a);
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		alarm(10);
		if (kk_shazptr_scan(&a) != -EBUSY)
			_exit(1);
		shazptr_clear(g);
		if (kk_shazptr_scan(&a) != 0)
			_exit(2);
		synchronize_shazptr(&a);
		_exit(0);
	}
	shazptr_clear(g);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	cr_assert_eq(WEXITSTATUS(status), 0);
}
