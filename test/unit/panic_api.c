// SPDX-License-Identifier: MIT
/*
 * The panic API without panicking (each Criterion test is its own process):
 * registration and settings errors, the settings text and the environment
 * names, the control file, taint, WARN counting, and (in forked children)
 * panic_on_warn and the async-signal-safe formatter against snprintf.
 */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <signal.h>

#include <kernelkit/control.h>
#include <kernelkit/panic.h>
#include "panic_kid.h"

#define STATUS KK_PANIC_EXIT_STATUS_DEFAULT

static int nop(struct kk_panic_notifier *nb, unsigned long a, void *d)
{
	(void)nb; (void)a; (void)d;
	return KK_NOTIFY_DONE;
}

Test(panic_api, notifier_registration_errors)
{
	struct kk_panic_notifier a = { nop, 1, NULL }, b = { NULL, 1, NULL }, c = { nop, 2, NULL };

	cr_assert_eq(kk_panic_notifier_register(NULL), -EINVAL);
	cr_assert_eq(kk_panic_notifier_register(&b), -EINVAL);
	cr_assert_eq(kk_panic_notifier_register(&a), 0);
	cr_assert_eq(kk_panic_notifier_register(&a), -EEXIST);
	cr_assert_eq(kk_panic_notifier_unregister(&c), -ENOENT);
	cr_assert_eq(kk_panic_notifier_unregister(NULL), -EINVAL);
	cr_assert_eq(kk_panic_notifier_unregister(&a), 0);
	cr_assert_eq(kk_panic_notifier_unregister(&a), -ENOENT);
	cr_assert_eq(kk_panic_notifier_register(&a), 0, "re-registering after removal");
	cr_assert_eq(kk_panic_in_progress(), 0);
}

static int prun(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	(void)p; (void)w;
	return 0;
}

Test(panic_api, policy_registration_errors)
{
	struct kk_panic_policy ok = { "custom-1", 10, prun, NULL };
	struct kk_panic_policy noname = { NULL, 10, prun, NULL };
	struct kk_panic_policy badname = { "Bad Name", 10, prun, NULL };
	struct kk_panic_policy longname = { "abcdefghijklmnopqrstuvwxyz0123456", 10, prun, NULL };
	struct kk_panic_policy norun = { "norun", 10, NULL, NULL };
	struct kk_panic_policy dup = { "halt", 10, prun, NULL };
	struct kk_panic_policy builtin_like = { "busy", 100, prun, NULL };

	cr_assert_str_eq(kk_panic_get_policy(), "halt");
	cr_assert_eq(kk_panic_policy_register(NULL), -EINVAL);
	cr_assert_eq(kk_panic_policy_register(&noname), -EINVAL);
	cr_assert_eq(kk_panic_policy_register(&badname), -EINVAL);
	cr_assert_eq(kk_panic_policy_register(&longname), -EINVAL);
	cr_assert_eq(kk_panic_policy_register(&norun), -EINVAL);
	cr_assert_eq(kk_panic_policy_register(&dup), -EEXIST);
	cr_assert_eq(kk_panic_policy_register(&builtin_like), -EEXIST);
	cr_assert_eq(kk_panic_policy_register(&ok), 0);
	cr_assert_eq(kk_panic_policy_register(&ok), -EEXIST);
	cr_assert_eq(kk_panic_set_policy("nope"), -ENOENT);
	cr_assert_eq(kk_panic_set_policy(NULL), -EINVAL);
	cr_assert_str_eq(kk_panic_get_policy(), "halt", "a rejected call changed the policy");
	cr_assert_eq(kk_panic_set_policy("custom-1"), 0);
	cr_assert_str_eq(kk_panic_get_policy(), "custom-1");
	cr_assert_eq(kk_panic_policy_unregister(&ok), 0);
	cr_assert_str_eq(kk_panic_get_policy(), "halt", "removing the selected policy falls back to halt");
	cr_assert_eq(kk_panic_policy_unregister(&ok), -ENOENT);
	cr_assert_eq(kk_panic_policy_unregister(NULL), -EINVAL);
	cr_assert_eq(kk_panic_policy_unregister(&builtin_like), -ENOENT);
	cr_assert_eq(kk_panic_set_policy("busy"), 0);
	cr_assert_eq(kk_panic_set_policy("debugger"), 0);
	cr_assert_eq(kk_panic_set_policy("halt"), 0);
	cr_assert_eq(kk_panic_idle(NULL), -EINVAL);
	{
		struct kk_panic_wait w = { 0, 0, "x" };

		cr_assert_eq(kk_panic_idle(&w), -EPERM, "kk_panic_idle outside a panic");
	}
}

static void blink(int s, void *a)
{
	(void)s; (void)a;
}

Test(panic_api, setters_reject_bad_values_without_harm)
{
	cr_assert_eq(kk_panic_get_timeout(), 0);
	cr_assert_eq(kk_panic_set_timeout(-7), 0);
	cr_assert_eq(kk_panic_get_timeout(), -7);
	cr_assert_eq(kk_panic_set_on_warn(2), -EINVAL);
	cr_assert_eq(kk_panic_set_on_warn(-1), -EINVAL);
	cr_assert_eq(kk_panic_get_on_warn(), 0);
	cr_assert_eq(kk_panic_set_on_oops(5), -EINVAL);
	cr_assert_eq(kk_panic_get_on_oops(), 0);
	cr_assert_eq(kk_panic_set_restart((enum kk_panic_restart)7), -EINVAL);
	cr_assert_eq(kk_panic_set_restart((enum kk_panic_restart)-1), -EINVAL);
	cr_assert_eq(kk_panic_get_restart(), KK_PANIC_RESTART_EXIT);
	cr_assert_eq(kk_panic_set_exit_status(0), -EINVAL);
	cr_assert_eq(kk_panic_set_exit_status(256), -EINVAL);
	cr_assert_eq(kk_panic_get_exit_status(), STATUS);
	cr_assert_eq(kk_panic_set_exit_status(200), 0);
	cr_assert_eq(kk_panic_get_exit_status(), 200);
	cr_assert_eq(kk_panic_set_core_dump(3), -EINVAL);
	cr_assert_eq(kk_panic_set_stop_timeout_ms(0), -EINVAL);
	cr_assert_eq(kk_panic_set_stop_timeout_ms(60001), -EINVAL);
	cr_assert_eq(kk_panic_set_notifiers_first(2), -EINVAL);
	cr_assert_eq(kk_panic_set_sd_watchdog(2), -EINVAL);
	cr_assert_eq(kk_panic_set_blink(blink, NULL, 9), -EINVAL);
	cr_assert_eq(kk_panic_set_blink(blink, NULL, 60001), -EINVAL);
	cr_assert_eq(kk_panic_set_blink(blink, NULL, 100), 0);
	cr_assert_eq(kk_panic_set_blink(NULL, NULL, 0), 0);
	cr_assert_geq(kk_panic_stop_signal(), SIGRTMIN);
	cr_assert_leq(kk_panic_stop_signal(), SIGRTMAX);
	{
		struct kk_panic_stats st;

		cr_assert_eq(kk_panic_get_stats(&st), -ENOENT);
		cr_assert_eq(kk_panic_get_stats(NULL), -EINVAL);
	}
}

Test(panic_api, settings_text_is_all_or_nothing)
{
	char err[128];

	cr_assert_eq(kk_panic_apply_settings("timeout=5\n on_warn = 1\n\n# comment\nrestart reexec\n"
					     "exit_status=77\npolicy=busy\nstop_timeout_ms=250\n"
					     "core_dump=1\nnotifiers_first=1\nsd_watchdog=1\nblink_ms=20\n"
					     "taint=U\ntaint=1\n", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(kk_panic_get_timeout(), 5);
	cr_assert_eq(kk_panic_get_on_warn(), 1);
	cr_assert_eq(kk_panic_get_restart(), KK_PANIC_RESTART_REEXEC);
	cr_assert_eq(kk_panic_get_exit_status(), 77);
	cr_assert_str_eq(kk_panic_get_policy(), "busy");
	cr_assert(kk_test_taint(KK_TAINT_USER));
	cr_assert(kk_test_taint(KK_TAINT_PROPRIETARY_MODULE));

	static const char *const bad[] = {
		"timeout=9\ntimeout=x", "timeout=99999999999", "on_warn=2", "on_oops=maybe", "on_warn=yes please",
		"restart=reboot", "exit_status=0", "exit_status=300", "policy=none",
		"stop_timeout_ms=0", "blink_ms=5", "taint=Q", "taint=-1", "nosuchkey=1", "timeout",
		"timeout=", "timeout=9\npolicy=halt\nbogus",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(kk_panic_apply_settings(bad[i], err, sizeof(err)), -EINVAL, "accepted '%s'", bad[i]);
		cr_assert_neq(err[0], '\0', "no message for '%s'", bad[i]);
		cr_assert_eq(kk_panic_get_timeout(), 5, "'%s' changed the timeout", bad[i]);
		cr_assert_str_eq(kk_panic_get_policy(), "busy");
	}
	cr_assert_eq(kk_panic_apply_settings(NULL, err, sizeof(err)), -EINVAL);
	cr_assert_eq(kk_panic_apply_settings("", NULL, 0), 0);
}

/* Booleans take the library's one grammar, as every KK_* variable does. */
Test(panic_api, booleans_take_the_library_grammar)
{
	static const struct { const char *text; int on; } cases[] = {
		{ "on_warn=yes", 1 }, { "on_warn=off", 0 }, { "on_warn=TRUE", 1 },
		{ "on_warn=n", 0 }, { "on_warn = on", 1 }, { "on_warn=false", 0 },
	};
	char err[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(kk_panic_apply_settings(cases[i].text, err, sizeof(err)), 0,
			     "%s: %s", cases[i].text, err);
		cr_assert_eq(kk_panic_get_on_warn(), cases[i].on, "%s", cases[i].text);
	}
	cr_assert_eq(kk_panic_apply_settings("on_warn=2", err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "not a boolean"), "%s", err);
	cr_assert_eq(kk_panic_get_on_warn(), 0);
}

/* Each boolean key sets its own setting and no other (sd_watchdog once set on_warn). */
Test(panic_api, each_boolean_key_sets_its_own)
{
	static const char *const keys[] = { "on_warn", "core_dump", "notifiers_first", "sd_watchdog" };
	char err[128], text[160], line[48];

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char *shown = NULL;
		size_t len = 0;

		snprintf(text, sizeof(text), "on_warn=0\ncore_dump=0\nnotifiers_first=0\n"
			 "sd_watchdog=0\n%s=1\n", keys[i]);
		cr_assert_eq(kk_panic_apply_settings(text, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(kk_control_read("panic", &shown, &len), 0);
		for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++) {
			snprintf(line, sizeof(line), "\n%s: %d\n", keys[j], i == j);
			cr_assert(strstr(shown, line), "after %s=1, want '%s' in:\n%s", keys[i],
				  line + 1, shown);
		}
		free(shown);
	}
}

Test(panic_api, control_file_shows_settings_taint_and_warn_count, .init = cr_redirect_stderr)
{
	char *text = NULL, *reply = NULL;
	size_t len = 0;
	int rc;

	WARN_ON(1);
	WARN_ON(1);
	rc = kk_control_read("panic", &text, &len);
	cr_assert_eq(rc, 0, "read: %d", rc);
	cr_assert(strstr(text, "timeout: 0\n"), "%s", text);
	cr_assert(strstr(text, "policy: halt\n"), "%s", text);
	cr_assert(strstr(text, "policies: debugger(300) halt(200) busy(100)\n"), "%s", text);
	cr_assert(strstr(text, "warn_count: 2\n"), "%s", text);
	cr_assert(strstr(text, "taint: 512\n"), "%s", text);
	cr_assert(strstr(text, "tainted: Tainted: G        W\n"), "%s", text);
	cr_assert(strstr(text, "exit_status: 112\n"), "%s", text);
	free(text);

	rc = kk_control_write("panic", "timeout=-3\npolicy=busy\n", 23, &reply);
	cr_assert_eq(rc, 0, "write: %d %s", rc, reply ? reply : "");
	free(reply);
	reply = NULL;
	cr_assert_eq(kk_panic_get_timeout(), -3);

	rc = kk_control_write("panic", "timeout=4\non_warn=7\n", 20, &reply);
	cr_assert_eq(rc, -EINVAL);
	cr_assert(reply && strstr(reply, "line 2: on_warn"), "%s", reply ? reply : "(none)");
	free(reply);
	cr_assert_eq(kk_panic_get_timeout(), -3, "a rejected write changed something");

	rc = kk_control_read("panic", &text, &len);
	cr_assert_eq(rc, 0);
	cr_assert(strstr(text, "timeout: -3\n") && strstr(text, "policy: busy\n"), "%s", text);
	free(text);
}

Test(panic_api, taint_flags)
{
	char buf[64];

	cr_assert_str_eq(kk_print_tainted(buf, sizeof(buf)), "Not tainted");
	cr_assert_eq(kk_add_taint(KK_TAINT_FLAGS_COUNT), -EINVAL);
	cr_assert_eq(kk_get_taint(), 0);
	cr_assert_eq(kk_add_taint(KK_TAINT_DIE), 0);
	cr_assert_eq(kk_add_taint(KK_TAINT_TEST), 0);
	cr_assert(kk_test_taint(KK_TAINT_DIE));
	cr_assert_not(kk_test_taint(KK_TAINT_WARN));
	cr_assert_not(kk_test_taint(99));
	cr_assert_eq(kk_get_taint(), (1ul << 7) | (1ul << 18));
	cr_assert_str_eq(kk_print_tainted(buf, sizeof(buf)), "Tainted: G      D          N");
	cr_assert_str_eq(kk_print_tainted(buf, 12), "Tainted: G");
}

/* ---- WARN --------------------------------------------------------------------------- */

static int warn_once_site(int c)
{
	return WARN_ON_ONCE(c);
}

static void warn_child(void *arg)
{
	int r[8], n = 0;

	(void)arg;
	r[n++] = WARN_ON(0);
	r[n++] = WARN_ON(1);
	r[n++] = WARN(1, "value %d too big", 42);
	r[n++] = WARN(0, "never %d", 1);
	for (int i = 0; i < 5; i++)
		warn_once_site(1);
	r[n++] = warn_once_site(1);	/* still reports the condition */
	r[n++] = warn_once_site(0);
	for (int i = 0; i < 3; i++)
		WARN_ONCE(1, "once %d", i);
	printf("<R %d %d %d %d %d %d>\n<COUNT %lu>\n<W %d>\n", r[0], r[1], r[2], r[3], r[4], r[5],
	       kk_warn_count(), kk_test_taint(KK_TAINT_WARN));
}

Test(panic_api, warn_counting)
{
	struct kid k;

	kid_start(&k, warn_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), 0, "%s", k.out);
	cr_assert(strstr(k.out, "<R 0 1 1 0 1 0>"), "%s", k.out);
	/* WARN_ON(1), WARN(1), one WARN_ON_ONCE site, one WARN_ONCE site */
	cr_assert(strstr(k.out, "<COUNT 4>"), "%s", k.out);
	cr_assert(strstr(k.out, "<W 1>"), "%s", k.out);
	cr_assert_eq(kid_count(&k, "------------[ cut here ]------------"), 4, "%s", k.out);
	cr_assert(strstr(k.out, "value 42 too big\n"), "%s", k.out);
	cr_assert(strstr(k.out, "once 0\n") && !strstr(k.out, "once 1\n"), "%s", k.out);
	cr_assert(strstr(k.out, "panic_api.c:"), "%s", k.out);
	cr_assert(strstr(k.out, "warn_child"), "%s", k.out);
	cr_assert_null(strstr(k.out, "panic - not syncing"), "%s", k.out);
}

static void on_warn_child(void *arg)
{
	(void)arg;
	kk_panic_set_timeout(-1);
	kk_panic_set_on_warn(1);
	printf("<BEFORE>\n");
	WARN_ON(0);
	printf("<FALSE WARN OK>\n");
	WARN(1, "the last straw");
	printf("<AFTER>\n");
}

Test(panic_api, panic_on_warn)
{
	struct kid k;

	kid_start(&k, on_warn_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	cr_assert_eq(kid_exit_code(&k), STATUS, "%#x %s", k.status, k.out);
	cr_assert(strstr(k.out, "<FALSE WARN OK>"), "%s", k.out);
	cr_assert(strstr(k.out, "the last straw"), "%s", k.out);
	cr_assert(strstr(k.out, "panic - not syncing: panic_on_warn set"), "%s", k.out);
	cr_assert_null(strstr(k.out, "<AFTER>"), "%s", k.out);
}

/* ---- the formatter, through WARN(), against snprintf -------------------------------------- */

#define FMT_CASES(X)								\
	X("%d|%i|%u", -42, 17, 4000000000u)					\
	X("%5d|%-5d|%05d|%+d|% d", 42, 42, -42, 7, 7)				\
	X("%x|%X|%#x|%#o|%o|%08x", 0xbeefu, 0xbeefu, 255u, 8u, 0u, 0xabcu)	\
	X("%ld|%lu|%lld|%llu", -1234567890123L, 1234567890123UL, -9223372036854775807LL - 1, 18446744073709551615ULL) \
	X("%zu|%zd|%hhu|%hd|%jd", (size_t)77, (ssize_t)-77, (unsigned char)200, (short)-1234, (intmax_t)-5) \
	X("%s|%10s|%-10s|%.3s|%.*s|%*d", "abc", "right", "left", "truncate", 2, "xyz", 6, 9) \
	X("%c%c%%|%5c|", 'o', 'k', 'z')					\
	X("%.2f|%f|%8.3f|%-8.1f|%.0f", 3.14159, -2.5, 1.0005, 0.25, 2.5)	\
	X("%.3d|%.0d|%5.3d", 7, 0, -7)

#define X_RUN(...) WARN(1, __VA_ARGS__);
#define X_REF(...) snprintf(buf, sizeof(buf), __VA_ARGS__); printf("<REF %s>\n", buf);

static void fmt_child(void *arg)
{
	char buf[256];

	(void)arg;
	FMT_CASES(X_REF)
	FMT_CASES(X_RUN)
}

Test(panic_api, formatter_matches_snprintf)
{
	struct kid k;
	const char *p;
	int n = 0;

	kid_start(&k, fmt_child, NULL);
	cr_assert_eq(kid_finish(&k, 10000), 0);
	for (p = k.out; (p = strstr(p, "<REF ")); n++) {
		char want[300];
		const char *e = strchr(p, '\n');

		cr_assert(e && e - p - 6 < (long)sizeof(want) - 2);
		/* "<REF text>\n" -> "\ntext\n" must appear in the WARN output */
		want[0] = '\n';
		memcpy(want + 1, p + 5, (size_t)(e - p - 6));
		want[e - p - 5] = '\n';
		want[e - p - 4] = '\0';
		cr_assert(strstr(k.out, want) != NULL && strstr(k.out, want) > strstr(k.out, "cut here"),
			  "formatted differently: '%.*s'\n%s", (int)(e - p - 6), p + 5, k.out);
		p = e;
	}
	cr_assert_eq(n, 9);
}
