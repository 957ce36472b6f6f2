// SPDX-License-Identifier: MIT
/*
 * Keys a program lets the control endpoint switch (kk_static_key_export()):
 * `write static_keys 'NAME on|off'` on an exported key, refusals of keys
 * not exported, all-or-nothing writes of several lines, counts the program
 * holds, names, and a key in a dlopen()ed object.  Writes go through
 * kk_control_write(), the path a remote kkctl write takes once the endpoint
 * trusted it (test/scripts/jump_label_export.sh drives kkctl itself).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "kktest.h"

DEFINE_STATIC_KEY_FALSE(ex_flag);
DEFINE_STATIC_KEY_FALSE(ex_other);
DEFINE_STATIC_KEY_FALSE(ex_private);
DEFINE_STATIC_KEY_TRUE(ex_true);

__attribute__((noinline)) static int flag_site(void) { return static_branch_unlikely(&ex_flag); }
__attribute__((noinline)) static int other_site(void) { return static_branch_unlikely(&ex_other); }
__attribute__((noinline)) static int private_site(void) { return static_branch_unlikely(&ex_private); }
__attribute__((noinline)) static int true_site(void) { return static_branch_likely(&ex_true); }

/* Write @text to static_keys; the reply goes to *@reply (freed by the caller). */
static int write_keys(const char *text, char **reply)
{
	*reply = NULL;
	return kk_control_write("static_keys", text, strlen(text), reply);
}

/* The listing's line for @name (a malloc'ed copy without the newline), or NULL. */
static char *listed(const char *name)
{
	char *txt = NULL, *line = NULL;
	size_t n = strlen(name);

	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	for (char *p = txt; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (!strncmp(p, name, n) && p[n] == ' ') {
			line = strndup(p, strcspn(p, "\n"));
			break;
		}
	}
	free(txt);
	return line;
}

/* A reply that is one line: text, then exactly one newline at its end. */
static void expect_one_line(const char *reply)
{
	cr_assert(reply);
	cr_expect(reply[0] && strchr(reply, '\n') == reply + strlen(reply) - 1,
		  "not one line: '%s'", reply);
}

Test(jump_label_export, exported_key_is_switched_by_a_write)
{
	char *reply, *line;

	cr_assert_eq(kk_static_branch_export(&ex_flag, NULL), 0, "%s", kk_jump_label_strerror());
	cr_assert_eq(flag_site(), 0);
	cr_assert_eq(write_keys("ex_flag on\n", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 1, "the program's branch is not taken");
	cr_expect_eq(static_key_count(&ex_flag.key), 1);
	line = listed("ex_flag");
	cr_assert(line);
	cr_expect(!strncmp(line, "ex_flag 1 1 ", 12), "%s", line);
	cr_expect(!strcmp(line + strlen(line) - 3, " rw"), "not marked switchable: %s", line);
	free(line);
	cr_assert_eq(write_keys("ex_flag 0", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 0);
	/* a TRUE key, by its own name, with 1 */
	cr_assert_eq(kk_static_branch_export(&ex_true, NULL), 0);
	cr_assert_eq(write_keys("ex_true off", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(true_site(), 0);
	cr_assert_eq(write_keys("ex_true 1", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(true_site(), 1);
}

Test(jump_label_export, key_not_exported_stays_read_only)
{
	char *reply, *line;

	cr_assert_eq(static_branch_enable(&ex_private), 0);
	cr_assert_eq(static_branch_disable(&ex_private), 0);	/* listed */
	cr_expect_eq(write_keys("ex_private on\n", &reply), -EACCES);
	expect_one_line(reply);
	cr_expect(strstr(reply, "ex_private") && strstr(reply, "read-only"), "%s", reply);
	free(reply);
	cr_expect_eq(private_site(), 0, "a key not exported was switched");
	cr_expect_eq(static_key_count(&ex_private.key), 0);
	line = listed("ex_private");
	cr_assert(line);
	cr_expect(!strcmp(line + strlen(line) - 3, " r-"), "%s", line);
	free(line);
	/* a line that leaves it as it is changes nothing, and is taken */
	cr_expect_eq(write_keys("ex_private off\n", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(private_site(), 0);
}

/* The listing written back is taken, and changes nothing (control_roundtrip's
 * rule); the enabled column edited switches an exported key. */
Test(jump_label_export, listing_written_back)
{
	char *txt = NULL, *reply, *p;

	cr_assert_eq(kk_static_branch_export(&ex_flag, NULL), 0);
	cr_assert_eq(static_branch_enable(&ex_private), 0);
	cr_assert_eq(kk_control_read("static_keys", &txt, NULL), 0);
	cr_assert_eq(write_keys(txt, &reply), 0, "%s\n--- the text ---\n%s", reply, txt);
	free(reply);
	cr_expect_eq(flag_site(), 0);
	cr_expect_eq(private_site(), 1);
	p = strstr(txt, "\nex_flag 0 0 ");
	cr_assert(p, "%s", txt);
	p[9] = '1';
	cr_assert_eq(write_keys(txt, &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 1, "the edited listing did not switch ex_flag");
	free(txt);
}

/* Rule 5: a write with one bad line changes no key, and says why in one line. */
Test(jump_label_export, bad_line_changes_nothing)
{
	static const struct { const char *text; int err; } bad[] = {
		{ "ex_flag on\nex_other maybe\n", -EINVAL },
		{ "ex_flag on\nex_other\n", -EINVAL },
		{ "ex_flag on\nex_other on off\n", -EINVAL },
		{ "ex_flag on\nno_such_key on\n", -ENOENT },
		{ "ex_flag on\nex_private on\n", -EACCES },
		{ "ex_other on\nex_flag off\n", -EBUSY },	/* ex_flag holds 2 references */
	};
	char *reply;

	cr_assert_eq(kk_static_branch_export(&ex_flag, NULL), 0);
	cr_assert_eq(kk_static_branch_export(&ex_other, NULL), 0);
	cr_assert_eq(static_branch_enable(&ex_private), 0);
	cr_assert_eq(static_branch_disable(&ex_private), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int busy = bad[i].err == -EBUSY;

		if (busy) {
			cr_assert_eq(static_branch_inc(&ex_flag), 0);
			cr_assert_eq(static_branch_inc(&ex_flag), 0);
		}
		cr_expect_eq(write_keys(bad[i].text, &reply), bad[i].err, "'%s': %s", bad[i].text, reply);
		expect_one_line(reply);
		cr_expect(strstr(reply, "line 2"), "the line is not named: %s", reply);
		free(reply);
		cr_expect_eq(other_site(), 0, "'%s' changed ex_other", bad[i].text);
		cr_expect_eq(flag_site(), busy, "'%s' changed ex_flag", bad[i].text);
		cr_expect_eq(static_key_count(&ex_flag.key), busy ? 2 : 0);
		cr_expect_eq(static_key_count(&ex_other.key), 0);
		if (busy) {
			cr_assert_eq(static_branch_dec(&ex_flag), 0);
			cr_assert_eq(static_branch_dec(&ex_flag), 0);
		}
	}
	/* the same lines, all good, go together */
	cr_assert_eq(write_keys("# comment\n\nex_flag on\n  ex_other\ton  \n", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 1);
	cr_expect_eq(other_site(), 1);
}

/* An outside write is static_key_enable()/disable(): on keeps the program's
 * count, off is refused while the program holds more than one reference. */
Test(jump_label_export, outside_write_and_the_programs_count)
{
	char *reply;

	cr_assert_eq(kk_static_branch_export(&ex_flag, NULL), 0);
	cr_assert_eq(static_branch_inc(&ex_flag), 0);
	cr_assert_eq(static_branch_inc(&ex_flag), 0);
	cr_assert_eq(write_keys("ex_flag on", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(static_key_count(&ex_flag.key), 2, "an outside on took a reference");
	cr_expect_eq(write_keys("ex_flag off", &reply), -EBUSY);
	expect_one_line(reply);
	cr_expect(strstr(reply, "2 references"), "%s", reply);
	free(reply);
	cr_expect_eq(static_key_count(&ex_flag.key), 2);
	cr_expect_eq(flag_site(), 1);
	cr_assert_eq(static_branch_dec(&ex_flag), 0);
	cr_assert_eq(write_keys("ex_flag off", &reply), 0, "%s", reply);	/* count 1: off */
	free(reply);
	cr_expect_eq(static_key_count(&ex_flag.key), 0);
	cr_expect_eq(flag_site(), 0);
	/* a queued state of the program is overridden, as by an immediate call */
	cr_assert_eq(static_branch_enable_queued(&ex_flag), 0);
	cr_assert_eq(write_keys("ex_flag off", &reply), 0, "%s", reply);
	free(reply);
	cr_assert_eq(static_key_apply_queued(), 0);
	cr_expect_eq(flag_site(), 0, "a queued enable survived the outside write");
}

Test(jump_label_export, names)
{
	static struct static_key nameless = STATIC_KEY_INIT_FALSE;
	char *reply;

	cr_expect_eq(kk_static_branch_export(&ex_flag, "feature.x"), 0);
	cr_expect_eq(kk_static_branch_export(&ex_flag, "feature.x"), 0, "again, the same name");
	cr_expect_eq(kk_static_branch_export(&ex_flag, "feature.y"), -EEXIST);
	cr_expect_eq(kk_static_branch_export(&ex_other, "feature.x"), -EEXIST);
	cr_expect(strstr(kk_jump_label_strerror(), "feature.x"), "%s", kk_jump_label_strerror());
	cr_expect_eq(kk_static_branch_export(&ex_other, "bad name"), -EINVAL);
	cr_expect_eq(kk_static_branch_export(&ex_other, ""), -EINVAL);
	cr_expect_eq(kk_static_key_export(&nameless, NULL), -EINVAL, "no name to export it by");
	cr_expect_eq(kk_static_key_export(NULL, "x"), -EINVAL);
	cr_assert_eq(write_keys("feature.x on", &reply), 0, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 1);
	cr_expect(listed("feature.x") != NULL, "listed under its exported name");
	cr_expect_eq(kk_static_branch_unexport(&ex_flag), 0);
	cr_expect_eq(kk_static_branch_unexport(&ex_flag), -ENOENT);
	cr_expect_eq(write_keys("ex_flag off", &reply), -EACCES, "%s", reply);
	free(reply);
	cr_expect_eq(flag_site(), 1);
}

Test(jump_label_export, key_in_a_dlopened_object)
{
	char *reply, *line;
	int (*site)(void);
	int *ret, *dup;
	void *h;

	cr_assert_eq(kk_static_branch_export(&ex_other, "dup_flag"), 0);
	for (int round = 0; round < 2; round++) {
		h = dlopen(kkt_build_path("test/lib/libjump_label_plugin.so"), RTLD_NOW | RTLD_LOCAL);
		cr_assert(h, "dlopen: %s", dlerror());
		site = (int (*)(void))dlsym(h, "jl_export_plugin_site");
		ret = dlsym(h, "jl_export_ret");
		dup = dlsym(h, "jl_export_dup_ret");
		cr_assert(site && ret && dup);
		cr_expect_eq(*ret, 0, "the plugin's export failed: %d", *ret);
		cr_expect_eq(*dup, -EEXIST, "two keys exported as dup_flag: %d", *dup);
		cr_expect_eq(site(), 0, "round %d: a fresh object's key is off", round);
		cr_assert_eq(write_keys("plugin_flag on", &reply), 0, "%s", reply);
		free(reply);
		cr_expect_eq(site(), 1);
		line = listed("plugin_flag");
		cr_expect(line && !strcmp(line + strlen(line) - 21, " jump_label_plugin rw"), "%s", line);
		free(line);
		dlclose(h);
		cr_expect_eq(listed("plugin_flag"), NULL, "the entry outlived dlclose");
		cr_expect_eq(write_keys("plugin_flag on", &reply), -ENOENT, "%s", reply);
		free(reply);
	}
	cr_expect_eq(kk_static_branch_unexport(&ex_other), 0, "the first dup_flag is still ours");
}
