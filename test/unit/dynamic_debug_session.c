// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/session in the process (kk_control_write()), for what the
 * script (test/scripts/dynamic_debug_session.sh) cannot reach from outside:
 * a site whose object is unloaded during the session, a begin that is all
 * or nothing whatever dynamic_debug/all_or_nothing says, and a patch the
 * process refuses, at begin and at end (failure changes nothing, and the
 * session stays open).
 */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynamic_debug_util.h"
#include "kktest.h"

/* These tests look at the live protocol (x86: int3, 3 syncs a batch):
 * forced, as Criterion's own thread would call for page swaps. */
__attribute__((__constructor__)) static void live_protocol(void)
{
	kkt_live_protocol();
}

__attribute__((noinline)) void sess_unit_a(void)
{
	pr_debug("session unit a\n");
}

__attribute__((noinline)) void sess_unit_b(void)
{
	pr_debug("session unit b\n");
}

/* A write to dynamic_debug/session; *reply (may be NULL) its text. */
static int sess(const char *text, char **reply)
{
	return control_file_write("dynamic_debug/session", text, reply);
}

/* Begin with @text; the session's id (16 hex digits) into @id. */
static void begin(const char *text, char id[17], const char *counts)
{
	char *r = NULL, want[64];
	int ret = sess(text, &r);

	cr_assert_eq(ret, 0, "%d: %s", ret, r);
	cr_assert_eq(sscanf(r, "session %16[0-9a-f]:", id), 1, "%s", r);
	snprintf(want, sizeof(want), "session %s: %s\n", id, counts);
	cr_assert_str_eq(r, want);
	free(r);
}

static void end(const char *id, const char *counts)
{
	char text[64], want[96], *r = NULL;
	int ret;

	snprintf(text, sizeof(text), "end %s", id);
	ret = sess(text, &r);
	cr_assert_eq(ret, 0, "%d: %s", ret, r);
	snprintf(want, sizeof(want), "session %s ended: %s\n", id, counts);
	cr_assert_str_eq(r, want);
	free(r);
}

static void no_session(void)
{
	char *t = NULL;

	cr_assert_eq(kk_control_read("dynamic_debug/session", &t, NULL), 0);
	cr_assert_str_eq(t, "no session\n");
	free(t);
}

/* The reply is one line. */
static void one_line(const char *r)
{
	const char *nl = strchr(r, '\n');

	cr_assert(nl && !nl[1], "not one line: '%s'", r);
}

/* A write refused with @want, its reply one line that says @why; frees it. */
static void refused(int ret, char *r, int want, const char *why)
{
	cr_assert_eq(ret, want, "%d: %s", ret, r);
	one_line(r);
	cr_assert(strstr(r, why), "%s", r);
	free(r);
}

Test(dynamic_debug_session, a_site_whose_object_is_unloaded_is_left)
{
	void *h = dlopen(kkt_build_path("test/lib/libdynamic_debug_mod.so"), RTLD_NOW | RTLD_LOCAL);
	char id[17];

	cr_assert_not_null(h, "%s", dlerror());
	/* ddm_plain's 3 sites (the classed ones need their class) and ours */
	begin("begin 60000\nmodule dynamic_debug_mod +T\nfunc sess_unit_a +T", id,
	      "matched 4 changed 4");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "T");
	dlclose(h);
	cr_assert_eq(kk_dyndbg_count_sites("dynamic_debug_mod"), 0);
	end(id, "restored 1, left 3");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "_");
	no_session();
}

/*
 * realloc() that fails, while armed, for calls from libkernelkit: the
 * program's definition comes first for the library's calls too.  The real
 * one is the next definition (libc's, or a sanitizer's).
 */
static void *(*next_realloc)(void *, size_t);
static atomic_int realloc_armed, realloc_refused;

static bool from_kernelkit(const void *pc)
{
	Dl_info di;

	return dladdr(pc, &di) && di.dli_fname && strstr(di.dli_fname, "libkernelkit");
}

void *realloc(void *p, size_t n)
{
	if (atomic_load(&realloc_armed) && from_kernelkit(__builtin_return_address(0))) {
		atomic_fetch_add(&realloc_refused, 1);
		errno = ENOMEM;
		return NULL;
	}
	if (!next_realloc)	/* the first call, maybe before any constructor */
		next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	return next_realloc(p, n);
}

/* An object that comes during a session, when the session cannot grow its
 * list of changes: its sites stay as they are, none is switched on and
 * back (the rule's "failure changes nothing"), and the end puts back what
 * the session had. */
Test(dynamic_debug_session, an_object_that_comes_without_memory_is_left)
{
	struct kk_jump_label_stats a, b;
	char id[17];
	void *h;

	begin("begin 60000\nmodule dynamic_debug_mod +T\nfunc sess_unit_a +T", id,
	      "matched 1 changed 1");
	kk_jump_label_get_stats(&a);
	atomic_store(&realloc_armed, 1);
	h = dlopen(kkt_build_path("test/lib/libdynamic_debug_mod.so"), RTLD_NOW | RTLD_LOCAL);
	atomic_store(&realloc_armed, 0);
	kk_jump_label_get_stats(&b);
	cr_assert_not_null(h, "%s", dlerror());
	cr_assert_gt(atomic_load(&realloc_refused), 0, "no realloc reached: nothing tried");
	cr_assert_gt(kk_dyndbg_count_sites("dynamic_debug_mod"), 0, "not registered");
	cr_assert_str_eq(dynamic_debug_flags_of("ddm plain one"), "_");
	cr_assert_eq(b.sites_patched, a.sites_patched, "%llu sites patched",
		     b.sites_patched - a.sites_patched);
	end(id, "restored 1, left 0");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "_");
	dlclose(h);
	no_session();
}

Test(dynamic_debug_session, all_or_nothing_whatever_the_setting)
{
	char *r = NULL;
	int was = kk_dyndbg_set_all_or_nothing(0), ret;

	ret = sess("begin 60000\nfunc sess_unit_a +T\nfunc sess_unit_b +Q", &r);
	kk_dyndbg_set_all_or_nothing(was);
	refused(ret, r, -EINVAL, "query 2 is malformed (unknown flag 'Q')");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "_");
	no_session();
}

/* A first line longer than any the file takes is refused whole, not read
 * up to a length and the rest dropped ("begin 1000", spaces, then a word
 * that must be refused). */
Test(dynamic_debug_session, a_long_first_line_is_refused)
{
	char text[512], *r = NULL;
	int ret;

	snprintf(text, sizeof(text), "begin 1000%300sx\nfunc sess_unit_a +T", "");
	ret = sess(text, &r);
	refused(ret, r, -EINVAL, "too long");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "_");
	no_session();
}

#if defined(__x86_64__) && !defined(KK_NO_JUMP_LABEL)
/* Write @text to the session file while a thread blocks SIGTRAP and the
 * signal method is forced: the patch is refused (see dynamic_debug_util.h). */
static int sess_refused(const char *text, char **reply)
{
	pthread_t t;
	char c;
	int ret;

	if (pipe(dynamic_debug_blocker_pipes[0]) || pipe(dynamic_debug_blocker_pipes[1]) ||
	    pthread_create(&t, NULL, dynamic_debug_trap_blocker, NULL))
		return -EAGAIN;
	if (read(dynamic_debug_blocker_pipes[0][0], &c, 1) != 1 ||
	    setenv("KK_TEXT_SYNC", "signal", 1))
		ret = -EAGAIN;
	else
		ret = sess(text, reply);
	kkt_live_protocol();
	(void)!write(dynamic_debug_blocker_pipes[1][1], "x", 1);
	pthread_join(t, NULL);
	for (int i = 0; i < 4; i++)
		close(dynamic_debug_blocker_pipes[i / 2][i % 2]);
	return ret;
}

Test(dynamic_debug_session, a_refused_patch_changes_nothing)
{
	char id[17], text[64], *r = NULL, *t = NULL;
	int ret;

	ret = sess_refused("begin 60000\nfunc sess_unit_b +p", &r);
	refused(ret, r, -EOPNOTSUPP, "nothing was changed");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit b"), "_");
	no_session();

	begin("begin 60000\nfunc sess_unit_a +p", id, "matched 1 changed 1");
	snprintf(text, sizeof(text), "end %s", id);
	ret = sess_refused(text, &r);
	refused(ret, r, -EOPNOTSUPP, "the session stays open");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "p");
	cr_assert_eq(kk_control_read("dynamic_debug/session", &t, NULL), 0);
	cr_assert(!strncmp(t, "session ", 8) && !strncmp(t + 8, id, 16), "%s", t);
	free(t);
	end(id, "restored 1, left 0");
	cr_assert_str_eq(dynamic_debug_flags_of("session unit a"), "_");
}
#endif
