// SPDX-License-Identifier: MIT
/*
 * Reports: the print limit, backtraces of init and activate, on-stack
 * annotation checks against the thread's real stack, the report of objects
 * still active at exit, and the control endpoint's debug_objects/stats.
 */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/debugobjects.h>

static const struct debug_obj_descr widget_descr = { .name = "widget" };
static const struct debug_obj_descr gadget_descr = { .name = "gadget" };

static char reports[32768];
static size_t reports_len;
static unsigned long nreports;

static void capture(const char *text, void *arg)
{
	size_t n = strlen(text);

	(void)arg;
	if (reports_len + n < sizeof(reports)) {
		memcpy(reports + reports_len, text, n + 1);
		reports_len += n;
	}
	nreports++;
}

static void setup(void)
{
	reports_len = 0;
	reports[0] = 0;
	nreports = 0;
	kk_debug_objects_set_printer(capture, NULL);
	cr_assert_eq(kk_debug_objects_enable(), 0);
}

static struct kk_debug_objects_stats stats(void)
{
	struct kk_debug_objects_stats st;

	kk_debug_objects_get_stats(&st);
	return st;
}

static long counted(const char *needle)
{
	long n = 0;

	for (const char *p = reports; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(debugobjects_reports, first_five_printed_all_counted, .init = setup)
{
	static long o[12];

	for (int i = 0; i < 12; i++)
		debug_object_deactivate(&o[i], &widget_descr);	/* untracked: warns */
	cr_assert_eq(stats().warnings, 12);
	cr_assert_eq(nreports, 5);
	cr_assert_eq(counted("ODEBUG: deactivate not available (active state 0) object: "), 5);
	cr_assert(strstr(reports, "object type: widget hint: 0x0\n"), "%s", reports);
}

/* Exported and not inlined, so that the backtraces can name them. */
__attribute__((noinline)) void widget_setup_site(void *w);
__attribute__((noinline)) void widget_arm_site(void *w);
__attribute__((noinline)) void widget_setup_site(void *w)
{
	debug_object_init(w, &widget_descr);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void widget_arm_site(void *w)
{
	debug_object_activate(w, &widget_descr);
	__asm__ __volatile__("" ::: "memory");
}

Test(debugobjects_reports, backtraces_of_init_and_activate, .init = setup)
{
	static long w;
	char *init_bt, *act_bt;

	kk_debug_objects_set_backtraces(true);
	widget_setup_site(&w);
	widget_arm_site(&w);
	debug_object_free(&w, &widget_descr);	/* free active: report */
	cr_assert_eq(nreports, 1);
	cr_assert(strstr(reports, "ODEBUG: free active (active state 0) object: "), "%s", reports);
	init_bt = strstr(reports, "ODEBUG:  init backtrace:\n");
	act_bt = strstr(reports, "ODEBUG:  activate backtrace:\n");
	cr_assert(init_bt && act_bt, "%s", reports);
	cr_assert(strstr(init_bt, "widget_setup_site+0x"), "%s", reports);
	cr_assert(strstr(act_bt, "widget_arm_site+0x"), "%s", reports);
	cr_assert(!strstr(init_bt, "widget_arm_site") || strstr(init_bt, "widget_arm_site") > act_bt,
		  "the init backtrace is the init's: %s", reports);
	cr_assert(strstr(reports, "ODEBUG:  reported at:\n"), "%s", reports);
}

Test(debugobjects_reports, no_backtraces_by_default, .init = setup)
{
	static long w;

	widget_setup_site(&w);
	widget_arm_site(&w);
	debug_object_free(&w, &widget_descr);
	cr_assert_eq(nreports, 1);
	cr_assert(!strstr(reports, "backtrace"), "%s", reports);
}

/* ---- on-stack annotations ---------------------------------------------------------------- */

static long global_obj;

Test(debugobjects_reports, on_stack_annotation_checked, .init = setup)
{
	long local = 0;
	char expect[128];

	debug_object_init_on_stack(&local, &widget_descr);	/* right */
	debug_object_init(&global_obj, &widget_descr);		/* right */
	cr_assert_eq(stats().stack_warnings, 0, "%s", reports);
	destroy_object_on_stack(&local, &widget_descr);
	cr_assert_eq(stats().stack_warnings, 0, "%s", reports);

	debug_object_init_on_stack(&global_obj + 0, &gadget_descr);	/* tracked already: no check */
	debug_object_free(&global_obj, &widget_descr);
	debug_object_init_on_stack(&global_obj, &widget_descr);		/* wrong */
	snprintf(expect, sizeof(expect), "ODEBUG: object %p is NOT on stack ", (void *)&global_obj);
	cr_assert(strstr(reports, expect), "%s", reports);
	cr_assert(strstr(reports, ", but annotated.\n"), "%s", reports);

	debug_object_init(&local, &widget_descr);			/* wrong */
	snprintf(expect, sizeof(expect), "ODEBUG: object %p is on stack ", (void *)&local);
	cr_assert(strstr(reports, expect), "%s", reports);
	cr_assert(strstr(reports, ", but NOT annotated.\n"), "%s", reports);
	destroy_object_on_stack(&global_obj, &widget_descr);		/* wrong */
	cr_assert_eq(stats().stack_warnings, 3, "%s", reports);
	cr_assert_eq(stats().warnings, 0, "annotation warnings are counted apart");
}

struct stk_arg {
	long *main_local;
	unsigned long warnings_before, warnings_after;
	int phase;
};

static void *stack_thread(void *p)
{
	struct stk_arg *a = p;
	long mine[4] = { 0 };

	a->warnings_before = stats().stack_warnings;
	/* its own stack: right */
	debug_object_init_on_stack(&mine[1], &widget_descr);
	destroy_object_on_stack(&mine[1], &widget_descr);
	/* another thread's stack is not this thread's stack */
	debug_object_init_on_stack(a->main_local, &widget_descr);
	a->warnings_after = stats().stack_warnings;
	return NULL;
}

Test(debugobjects_reports, on_stack_uses_each_threads_own_bounds, .init = setup)
{
	long main_local = 0;
	struct stk_arg a = { .main_local = &main_local };
	pthread_t t;
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	cr_assert_eq(pthread_create(&t, &attr, stack_thread, &a), 0);
	pthread_join(t, NULL);
	pthread_attr_destroy(&attr);
	cr_assert_eq(a.warnings_after - a.warnings_before, 1, "%s", reports);
	cr_assert(strstr(reports, "is NOT on stack"), "%s", reports);
}

/* ---- at exit --------------------------------------------------------------------------------- */

static int exit_pipe = -1;

static void to_pipe(const char *text, void *arg)
{
	(void)arg;
	if (write(exit_pipe, text, strlen(text)) < 0)
		abort();
}

static void read_all(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;

	while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
}

Test(debugobjects_reports, still_active_at_exit_by_type, .init = setup)
{
	static long w[3], g[2];
	int fds[2];
	pid_t pid;
	int status;

	cr_assert_eq(pipe(fds), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		exit_pipe = fds[1];
		kk_debug_objects_set_printer(to_pipe, NULL);
		for (int i = 0; i < 3; i++) {
			debug_object_init(&w[i], &widget_descr);
			debug_object_activate(&w[i], &widget_descr);
		}
		debug_object_init(&g[0], &gadget_descr);
		debug_object_activate(&g[0], &gadget_descr);
		debug_object_init(&g[1], &gadget_descr);	/* initialised only */
		debug_object_deactivate(&w[2], &widget_descr);
		exit(0);
	}
	close(fds[1]);
	read_all(fds[0], reports, sizeof(reports));
	close(fds[0]);
	waitpid(pid, &status, 0);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	cr_assert(strstr(reports, "ODEBUG: 3 active objects at exit, by type:\n"), "%s", reports);
	cr_assert(strstr(reports, "ODEBUG:   widget "), "%s", reports);
	cr_assert(strstr(reports, " 2\n"), "%s", reports);
	cr_assert(strstr(reports, "ODEBUG:   gadget "), "%s", reports);
	cr_assert_eq(kk_debug_objects_report_active(), 0, "the parent has none");
}

Test(debugobjects_reports, report_active_api, .init = setup)
{
	static long w[4];

	for (int i = 0; i < 4; i++) {
		debug_object_init(&w[i], &widget_descr);
		debug_object_activate(&w[i], &widget_descr);
	}
	cr_assert_eq(kk_debug_objects_report_active(), 4);
	cr_assert(strstr(reports, "ODEBUG: 4 active objects, by type:\n"), "%s", reports);
	for (int i = 0; i < 4; i++)
		debug_object_deactivate(&w[i], &widget_descr);
	cr_assert_eq(kk_debug_objects_report_active(), 0);
}

/* ---- the control endpoint ----------------------------------------------------------------------- */

Test(debugobjects_reports, control_stats_file, .init = setup)
{
	static const char *const fields[] = {
		"max_chain", "max_checked", "warnings", "fixups", "pool_free", "pool_pcp_free",
		"pool_min_free", "pool_used", "pool_max_used", "on_free_list", "objs_allocated",
		"objs_freed", "avg_usage", "nested_skips",
	};
	static long o[100];
	char *text = NULL, *reply = NULL;
	size_t len;
	int nl = 0;

	for (int i = 0; i < 100; i++) {
		debug_object_init(&o[i], &widget_descr);
		debug_object_activate(&o[i], &widget_descr);
	}
	debug_object_init(&o[0], &widget_descr);	/* one warning */
	cr_assert_eq(kk_control_read("debug_objects/stats", &text, &len), 0);
	for (size_t i = 0; i < len; i++)
		nl += text[i] == '\n';
	cr_assert_eq(nl, 14, "%s", text);
	for (unsigned int i = 0; i < 14; i++) {
		char *p = strstr(text, fields[i]);

		cr_assert(p, "no %s in\n%s", fields[i], text);
		cr_assert(strchr(p, ':'), "%s", text);
	}
	cr_assert(strstr(text, "warnings      : 1\n"), "%s", text);
	cr_assert(strstr(text, "pool_used     : 100\n"), "%s", text);
	free(text);

	cr_assert_eq(kk_control_write("debug_objects/policy", "refill\n", 7, &reply), 0);
	free(reply);
	cr_assert_str_eq(kk_debug_objects_policy(), "refill");
	reply = NULL;
	cr_assert_neq(kk_control_write("debug_objects/policy", "nope", 4, &reply), 0);
	free(reply);
	cr_assert_eq(kk_control_read("debug_objects/policy", &text, &len), 0);
	cr_assert_str_eq(text, "refill\n");
	free(text);
}
