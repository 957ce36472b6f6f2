// SPDX-License-Identifier: MIT
/*
 * A program that uses every facility, for the restricted-process tests
 * (test/scripts/guest_restricted.sh).
 *   guest_restricted [nofile]
 * "nofile" first lowers RLIMIT_NOFILE to 3, so the library cannot open a
 * single descriptor.  Every check must still pass: a key flips and its site
 * follows, a pr_debug site is switched on and off, a hazard-pointer wait
 * returns, a tracked object is checked.  Prints "ok" and exits 0, or names
 * the check that failed and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <kernelkit/control.h>
#include <kernelkit/debugobjects.h>
#include <kernelkit/dynamic_debug.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/shazptr.h>

/*
 * Under ASan, LeakSanitizer's exit-time scan needs /proc, and without /proc
 * the sanitizer cannot even read ASAN_OPTIONS (it reads /proc/self/environ).
 * The restriction is for kernelkit, not for the sanitizer: switch it off here.
 */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
	return "detect_leaks=0";
}

static DEFINE_STATIC_KEY_FALSE(guest_key);

__attribute__((noinline)) static int guest_site(void)
{
	return static_branch_unlikely(&guest_key) ? 1 : 0;
}

__attribute__((noinline)) void guest_say(int v)
{
	pr_debug("guest says %d\n", v);
}

static int check(int ok, const char *what)
{
	if (!ok)
		printf("FAIL: %s\n", what);
	return ok ? 0 : 1;
}

static int dyndbg(const char *q)
{
	char *reply = NULL;
	int ret = kk_control_write("dynamic_debug/control", q, strlen(q), &reply);

	if (ret)
		printf("dynamic_debug/control: %s", reply ? reply : "?\n");
	free(reply);
	return ret;
}

int main(int argc, char **argv)
{
	static int obj;
	struct debug_obj_descr descr = { .name = "guest_obj" };
	struct shazptr_guard g;
	int bad = 0;

	if (argc > 1 && !strcmp(argv[1], "nofile")) {
		struct rlimit rl = { 3, 3 };

		if (setrlimit(RLIMIT_NOFILE, &rl))
			return 2;
	}
	bad |= check(guest_site() == 0, "key starts disabled");
	if (static_branch_enable(&guest_key))
		bad |= check(0, kk_jump_label_strerror());
	bad |= check(guest_site() == 1, "site follows enable");
	if (static_branch_disable(&guest_key))
		bad |= check(0, kk_jump_label_strerror());
	bad |= check(guest_site() == 0, "site follows disable");

	bad |= check(dyndbg("func guest_say +p") == 0, "pr_debug +p");
	guest_say(1);
	bad |= check(dyndbg("func guest_say -p") == 0, "pr_debug -p");
	guest_say(2);

	g = shazptr_acquire(&obj);
	shazptr_clear(g);
	synchronize_shazptr(&obj);

	kk_debug_objects_enable();
	debug_object_init(&obj, &descr);
	debug_object_activate(&obj, &descr);
	debug_object_deactivate(&obj, &descr);
	debug_object_free(&obj, &descr);

	fflush(stderr);
	printf(bad ? "failed\n" : "ok\n");
	return bad;
}
