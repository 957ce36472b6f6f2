// SPDX-License-Identifier: MIT
/*
 * Panic settings that only take effect at program start, tested by running
 * this program again with an environment: KK_PANIC_* variables (good and
 * bad), restart=reexec (the program comes back with its argv and
 * KK_PANIC_RESTARTS=1), and a stack overflow caught on the alternate signal
 * stack with KK_PANIC_ON_OOPS=1.  Exit 0 when every case behaves.
 */
#include <kernelkit/panic.h>
#include "panic_kid.h"

#define STATUS KK_PANIC_EXIT_STATUS_DEFAULT

static int failures;

#define CHECK(cond, ...) do {							\
	if (!(cond)) {								\
		fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);		\
		fprintf(stderr, __VA_ARGS__);					\
		fprintf(stderr, "\n");						\
		failures++;							\
	}									\
} while (0)

struct run {
	const char *mode;
	const char *env[6];
};

static void exec_self(void *arg)
{
	const struct run *r = arg;

	for (int i = 0; r->env[i]; i++)
		putenv((char *)r->env[i]);
	setenv("KK_CONTROL", "0", 1);
	execl("/proc/self/exe", "panic_exec", "child", r->mode, "extra arg", (char *)NULL);
	_exit(126);
}

static void run(struct kid *k, const char *mode, const char *e0, const char *e1, const char *e2)
{
	struct run r = { mode, { e0, e1, e2, NULL } };

	kid_start(k, exec_self, &r);
	if (kid_finish(k, 15000))
		CHECK(0, "%s: timed out\n%s", mode, k->out);
}

static int depth(int n)
{
	volatile char pad[512];

	pad[0] = (char)n;
	return n > 1000000000 ? pad[0] : depth(n + 1) + pad[0];
}

static int child(int argc, char **argv)
{
	const char *mode = argv[2];

	if (!strcmp(mode, "panic"))
		panic("env panic");
	if (!strcmp(mode, "warn")) {
		WARN_ON(1);
		return 0;
	}
	if (!strcmp(mode, "segv"))
		return depth(argc);	/* overflows the stack */
	if (!strcmp(mode, "show")) {
		printf("<timeout %d status %d policy %s warn %d oops %d>\n", kk_panic_get_timeout(),
		       kk_panic_get_exit_status(), kk_panic_get_policy(), kk_panic_get_on_warn(),
		       kk_panic_get_on_oops());
		return 0;
	}
	if (!strcmp(mode, "reexec")) {
		const char *n = getenv("KK_PANIC_RESTARTS");

		if (n) {
			printf("<back: restarts=%s argc=%d argv3=%s>\n", n, argc, argc > 3 ? argv[3] : "-");
			return 0;
		}
		panic("reexec me");
	}
	return 2;
}

int main(int argc, char **argv)
{
	struct kid k;

	if (argc >= 3 && !strcmp(argv[1], "child"))
		return child(argc, argv);

	run(&k, "panic", "KK_PANIC_TIMEOUT=-1", "KK_PANIC_EXIT_STATUS=55", NULL);
	CHECK(kid_exit_code(&k) == 55, "env exit status: %#x\n%s", k.status, k.out);
	CHECK(strstr(k.out, "panic - not syncing: env panic"), "%s", k.out);

	run(&k, "warn", "KK_PANIC_TIMEOUT=-1", "KK_PANIC_ON_WARN=1", NULL);
	CHECK(kid_exit_code(&k) == STATUS, "KK_PANIC_ON_WARN: %#x\n%s", k.status, k.out);

	run(&k, "show", "KK_PANIC_TIMEOUT=abc", "KK_PANIC_EXIT_STATUS=1000", "KK_PANIC_POLICY=busy");
	CHECK(kid_exit_code(&k) == 0, "%#x\n%s", k.status, k.out);
	CHECK(strstr(k.out, "ignoring KK_PANIC_TIMEOUT=abc"), "%s", k.out);
	CHECK(strstr(k.out, "ignoring KK_PANIC_EXIT_STATUS=1000"), "%s", k.out);
	CHECK(strstr(k.out, "<timeout 0 status 112 policy busy warn 0 oops 0>"), "%s", k.out);

	run(&k, "show", "KK_PANIC_TIMEOUT=30", "KK_PANIC_ON_OOPS=1", "KK_PANIC_ON_WARN=1");
	CHECK(strstr(k.out, "<timeout 30 status 112 policy halt warn 1 oops 1>"), "%s", k.out);

	run(&k, "reexec", "KK_PANIC_TIMEOUT=-1", "KK_PANIC_RESTART=reexec", NULL);
	CHECK(kid_exit_code(&k) == 0, "reexec: %#x\n%s", k.status, k.out);
	CHECK(strstr(k.out, "restart: re-executing"), "%s", k.out);
	CHECK(strstr(k.out, "<back: restarts=1 argc=4 argv3=extra arg>"), "%s", k.out);

	run(&k, "segv", "KK_PANIC_TIMEOUT=-1", "KK_PANIC_ON_OOPS=1", NULL);
	CHECK(kid_exit_code(&k) == STATUS, "stack overflow: %#x\n%.3000s", k.status, k.out);
	CHECK(strstr(k.out, "Oops: SIGSEGV"), "%.3000s", k.out);

	run(&k, "segv", "KK_PANIC_TIMEOUT=-1", NULL, NULL);
	CHECK(kid_died_of_segv(&k), "no oops handling: %#x", k.status);

	printf("panic_exec: %s\n", failures ? "FAILED" : "ok");
	return failures ? 1 : 0;
}
