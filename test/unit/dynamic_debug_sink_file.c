/* SPDX-License-Identifier: MIT */
/* dynamic_debug/sink: the sink by name, written back as read, errors change nothing. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>

static char *read_sink(void)
{
	char *text = NULL;
	size_t len = 0;

	cr_assert_eq(kk_control_read("dynamic_debug/sink", &text, &len), 0);
	return text;
}

static int write_sink(const char *v)
{
	char *reply = NULL;
	int ret = kk_control_write("dynamic_debug/sink", v, strlen(v), &reply);

	free(reply);
	return ret;
}

static void my_sink(const struct _ddebug *d, const char *m, size_t l, void *a)
{
	(void)d; (void)m; (void)l; (void)a;
}

Test(dynamic_debug_sink_file, names_the_sink_and_switches_it)
{
	char *t = read_sink();

	cr_assert_str_eq(t, "stderr\n");
	free(t);
	cr_assert_eq(write_sink("journal\n"), 0);
	t = read_sink();
	cr_assert_str_eq(t, "journal\n");
	cr_assert_eq(write_sink(t), 0, "writing back what was read");
	free(t);
	cr_assert_eq(write_sink("syslog"), 0);
	t = read_sink();
	cr_assert_str_eq(t, "syslog\n");
	free(t);
	cr_assert_eq(write_sink("stderr"), 0);
	t = read_sink();
	cr_assert_str_eq(t, "stderr\n");
	free(t);
}

Test(dynamic_debug_sink_file, a_program_callback_reads_back_as_custom)
{
	char *t;

	kk_dyndbg_set_sink(my_sink, NULL);
	t = read_sink();
	cr_assert_str_eq(t, "custom\n");
	cr_assert_eq(write_sink(t), 0, "writing back what was read");
	free(t);
	t = read_sink();
	cr_assert_str_eq(t, "custom\n");
	free(t);
}

Test(dynamic_debug_sink_file, a_bad_name_changes_nothing)
{
	char *t;

	cr_assert_eq(write_sink("journal"), 0);
	cr_assert_eq(write_sink("journald"), -EINVAL);
	cr_assert_eq(write_sink("custom"), -EINVAL, "custom only while a callback is the sink");
	t = read_sink();
	cr_assert_str_eq(t, "journal\n");
	free(t);
}
