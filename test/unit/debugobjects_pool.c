// SPDX-License-Identifier: MIT
/*
 * The tracker pools: exhaustion (tracking switches itself off and the program
 * carries on), per-thread pools handed back at thread exit, objects freed by
 * another thread than the one that created them, batch movement under each
 * policy, the EWMA-throttled worker, and fork.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kernelkit/debugobjects.h>

static const struct debug_obj_descr item_descr = { .name = "item" };

static char last_report[512];
static unsigned long nreports;

static void capture(const char *text, void *arg)
{
	(void)arg;
	strncpy(last_report, text, sizeof(last_report) - 1);
	nreports++;
}

static void setup(void)
{
	kk_debug_objects_set_printer(capture, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
}

static struct kk_debug_objects_stats stats(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st;
}

/* every tracker taken from the slab is in use or in some pool */
static void assert_accounted(const char *what)
{
	struct kk_debug_objects_stats st = stats();

	cr_assert_eq(st.objs_allocated - st.objs_freed,
		     st.pool_used + st.pool_free + st.on_free_list,
		     "%s: allocated %lu freed %lu used %lu free %lu to-free %lu", what,
		     st.objs_allocated, st.objs_freed, st.pool_used, st.pool_free, st.on_free_list);
}

#define N 4000
static long items[N];

Test(debugobjects_pool, exhaustion_disables_tracking_cleanly, .init = setup)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_reset();
	kk_debug_objects_set_max_trackers(100);
	for (int i = 0; i < 1000; i++) {
		debug_object_init(&items[i], &item_descr);
		debug_object_activate(&items[i], &item_descr);
	}
	st = stats();
	cr_assert_eq(st.oom, 1);
	cr_assert_str_eq(last_report, "ODEBUG: Out of memory. ODEBUG disabled\n");
	cr_assert_eq(nreports, 1, "one message, no spurious reports");
	cr_assert(!kk_debug_objects_enabled());
	cr_assert_leq(st.objs_allocated, 100);
	cr_assert_eq(st.pool_used, 0, "every tracker was taken out of the hash");
	cr_assert(!kk_debug_object_lookup(&items[0], NULL, NULL));
	assert_accounted("after oom");

	/* the program carries on; the hooks are no-ops */
	debug_object_free(&items[5], &item_descr);
	cr_assert_eq(debug_object_activate(&items[1001], &item_descr), 0);
	cr_assert_eq(stats().warnings, 0);

	/* and tracking can be switched on again */
	kk_debug_objects_set_max_trackers(0);
	cr_assert_eq(kk_debug_objects_enable(), 0);
	debug_object_init(&items[0], &item_descr);
	cr_assert(kk_debug_object_lookup(&items[0], NULL, NULL));
}

Test(debugobjects_pool, exhaustion_via_environment)
{
	int fds[2];
	pid_t pid;
	int status;
	char buf[512] = "";

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		kk_debug_objects_set_max_trackers(16);
		kk_debug_objects_enable();
		for (int i = 0; i < 100; i++)
			debug_object_init(&items[i], &item_descr);
		_exit(kk_debug_objects_enabled() ? 1 : 0);
	}
	close(fds[1]);
	(void)!read(fds[0], buf, sizeof(buf) - 1);
	close(fds[0]);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(strstr(buf, "ODEBUG: Out of memory. ODEBUG disabled"), "stderr: %s", buf);
}

struct worker_arg {
	long *objs;
	int n;
	int free_them;
};

static void *thread_work(void *p)
{
	struct worker_arg *a = p;

	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < a->n; i++) {
			debug_object_init(&a->objs[i], &item_descr);
			debug_object_activate(&a->objs[i], &item_descr);
		}
		if (round == 3 && !a->free_them)
			break;
		for (int i = 0; i < a->n; i++) {
			debug_object_deactivate(&a->objs[i], &item_descr);
			debug_object_free(&a->objs[i], &item_descr);
		}
	}
	return NULL;
}

Test(debugobjects_pool, thread_pools_handed_back_at_exit, .init = setup)
{
	pthread_t t[4];
	struct worker_arg a[4];

	kk_debug_objects_reset();
	for (int i = 0; i < 4; i++) {
		a[i] = (struct worker_arg){ .objs = &items[i * 1000], .n = 1000, .free_them = 0 };
		cr_assert_eq(pthread_create(&t[i], NULL, thread_work, &a[i]), 0);
	}
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	/* the threads are gone: no tracker is left in a per-thread pool */
	cr_assert_eq(stats().pool_pcp_free, 0, "pcp free %lu", stats().pool_pcp_free);
	cr_assert_eq(stats().pool_used, N);
	assert_accounted("after thread exit");

	/* objects made by the threads, freed here */
	for (int i = 0; i < N; i++) {
		debug_object_deactivate(&items[i], &item_descr);
		debug_object_free(&items[i], &item_descr);
	}
	cr_assert_eq(stats().pool_used, 0);
	cr_assert_eq(stats().warnings, 0);
	assert_accounted("after cross-thread free");
}

/* base frees straight to the slab; ewma keeps a to-free pool and frees it slowly */
Test(debugobjects_pool, overflow_goes_where_the_policy_says, .init = setup)
{
	struct kk_debug_objects_stats st;

	cr_assert_eq(kk_debug_objects_set_policy("base"), 0);
	kk_debug_objects_reset();
	for (int i = 0; i < N; i++)
		debug_object_init(&items[i], &item_descr);
	for (int i = 0; i < N; i++)
		debug_object_free(&items[i], &item_descr);
	st = stats();
	cr_assert_eq(st.on_free_list, 0);
	cr_assert_gt(st.objs_freed, 0, "base frees at once");
	cr_assert_leq(st.pool_pcp_free, 64, "base keeps at most 4 batches per thread");
	assert_accounted("base");

	cr_assert_eq(kk_debug_objects_set_policy("ewma"), 0);
	kk_debug_objects_reset();
	for (int i = 0; i < N; i++)
		debug_object_init(&items[i], &item_descr);
	for (int i = 0; i < N; i++)
		debug_object_free(&items[i], &item_descr);
	st = stats();
	cr_assert_eq(st.objs_freed, 0, "ewma does not free while the average is not falling");
	cr_assert_gt(st.on_free_list, 0);
	cr_assert_leq(st.pool_pcp_free, 128);
	assert_accounted("ewma");

	/* the to-free pool refills the next burst: no new allocations */
	unsigned long before = st.objs_allocated;

	for (int i = 0; i < 1000; i++)
		debug_object_init(&items[i], &item_descr);
	cr_assert_eq(stats().objs_allocated, before, "trackers came back from to-free");
	for (int i = 0; i < 1000; i++)
		debug_object_free(&items[i], &item_descr);
	assert_accounted("ewma refill");
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

Test(debugobjects_pool, ewma_worker_frees_as_usage_falls, .init = setup)
{
	struct kk_debug_objects_stats st;
	unsigned long freed;

	cr_assert_eq(kk_debug_objects_set_policy("ewma"), 0);
	kk_debug_objects_reset();
	/* hold many trackers for a while so that the average climbs */
	for (int i = 0; i < N; i++)
		debug_object_init(&items[i], &item_descr);
	for (int k = 0; k < 30; k++) {
		sleep_ms(11);
		debug_object_init(&items[k], &item_descr);	/* feeds the average */
		debug_object_free(&items[k], &item_descr);
		debug_object_init(&items[k], &item_descr);
	}
	for (int i = 0; i < N; i++)
		debug_object_free(&items[i], &item_descr);
	kk_debug_objects_run_worker();		/* records the current average */
	st = stats();
	cr_assert_gt(st.avg_usage, 0);
	freed = st.objs_freed;
	/* usage is now 0: each round lets the average fall and frees a bit */
	for (int k = 0; k < 20; k++) {
		sleep_ms(11);
		debug_object_init(&items[0], &item_descr);	/* an allocation updates the average */
		debug_object_free(&items[0], &item_descr);
		kk_debug_objects_run_worker();
	}
	st = stats();
	cr_assert_gt(st.objs_freed, freed, "the worker freed as the average fell");
	cr_assert_gt(st.on_free_list, 0, "but not everything at once");
	assert_accounted("ewma worker");
}

Test(debugobjects_pool, refill_worker_frees_everything, .init = setup)
{
	struct kk_debug_objects_stats st;

	cr_assert_eq(kk_debug_objects_set_policy("refill"), 0);
	kk_debug_objects_reset();
	for (int i = 0; i < N; i++)
		debug_object_init(&items[i], &item_descr);
	for (int i = 0; i < N; i++)
		debug_object_free(&items[i], &item_descr);
	cr_assert_gt(stats().on_free_list, 0);
	/* at most 64 batches a round, the global pool refilled first */
	for (int k = 0; k < 8; k++)
		kk_debug_objects_run_worker();
	st = stats();
	cr_assert_eq(st.on_free_list, 0);
	assert_accounted("refill");
}

Test(debugobjects_pool, fork_child_keeps_working, .init = setup)
{
	pthread_t t;
	struct worker_arg a = { .objs = &items[0], .n = 500, .free_them = 0 };
	pid_t pid;
	int status;

	cr_assert_eq(pthread_create(&t, NULL, thread_work, &a), 0);
	pthread_join(t, NULL);
	pid = fork();
	if (pid == 0) {
		struct kk_debug_objects_stats st;

		for (int i = 1000; i < 3000; i++) {
			debug_object_init(&items[i], &item_descr);
			debug_object_activate(&items[i], &item_descr);
		}
		for (int i = 0; i < 3000; i++) {
			if (i >= 500 && i < 1000)
				continue;
			debug_object_deactivate(&items[i], &item_descr);
			debug_object_free(&items[i], &item_descr);
		}
		kk_debug_objects_get_stats(&st);
		_exit(st.warnings == 0 && st.pool_used == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Beyond the kernel: an idle process still gives trackers back as the average falls. */
Test(debugobjects_pool, ewma_idle_process_gives_memory_back, .init = setup)
{
	struct kk_debug_objects_stats st;
	unsigned long held;

	cr_assert_eq(kk_debug_objects_set_policy("ewma"), 0);
	kk_debug_objects_reset();
	for (int i = 0; i < N; i++)
		debug_object_init(&items[i], &item_descr);
	for (int k = 0; k < 30; k++) {		/* hold them while the average climbs */
		sleep_ms(11);
		debug_object_free(&items[k], &item_descr);	/* an allocation feeds it */
		debug_object_init(&items[k], &item_descr);
	}
	for (int i = 0; i < N; i++)
		debug_object_free(&items[i], &item_descr);
	st = stats();
	held = st.on_free_list;
	cr_assert_gt(held, 0);
	cr_assert_eq(st.objs_freed, 0);
	/* No calls at all: only the worker's delayed rounds run.  Wait for
	 * one to free, bounded: a loaded machine may delay it for long. */
	for (int ms = 0; ms < 30000 && !stats().objs_freed; ms += 10)
		sleep_ms(10);
	st = stats();
	cr_assert_gt(st.objs_freed, 0, "the worker freed nothing in 30 s while idle");
	cr_assert_lt(st.on_free_list, held);
	assert_accounted("idle");
}
