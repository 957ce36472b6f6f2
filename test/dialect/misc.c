/* SPDX-License-Identifier: MIT */
/*
 * panic (WARN, BUG_ON, notifiers, policies, taint), shazptr, ratelimit,
 * control and kernelkit.h from every dialect.
 */
#include <stdlib.h>
#include <string.h>
#include <kernelkit/kernelkit.h>
#include <kernelkit/control.h>
#include <kernelkit/panic.h>
#include <kernelkit/ratelimit.h>
#include <kernelkit/shazptr.h>
#include "dialect.h"

static int shared_value;
static volatile int never;	/* 0, opaque to the compiler */

static int notify(struct kk_panic_notifier *nb, unsigned long action, void *data)
{
	(void)nb;
	(void)action;
	(void)data;
	return KK_NOTIFY_DONE;
}

static int policy_run(struct kk_panic_policy *p, const struct kk_panic_wait *w)
{
	(void)p;
	return kk_panic_idle(w);
}

static int setting = 7;

static int show(struct kk_buf *out, void *priv)
{
	return kk_buf_printf(out, "value %d\n", *(int *)priv) < 0 ? -12 : 0;
}

static int store(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)len;
	*(int *)priv = atoi(buf);
	kk_buf_write(out, "ok\n", 3);
	return 0;
}

static int dialect_panic(void)
{
	unsigned long warns = kk_warn_count();
	struct kk_panic_notifier nb;
	struct kk_panic_policy pol;
	struct kk_panic_stats st;
	char taint[64];
	int i, x = 3;

	/* WARN*() are expressions with the condition's value */
	DIALECT_CHECK(WARN_ON(0) == 0);
	DIALECT_CHECK(WARN(0, "literal only") == 0);
	DIALECT_CHECK(WARN(x == 4, "with args %d %s", x, "x") == 0);
	DIALECT_CHECK(WARN_ONCE(0, "once literal") == 0);
	DIALECT_CHECK(WARN_ONCE(0, "once %d", x) == 0);
	DIALECT_CHECK(kk_warn_count() == warns);
	DIALECT_CHECK(WARN_ON(x == 3) != 0);
	DIALECT_CHECK(WARN(x == 3, "dialect warn %d", x) != 0);
	DIALECT_CHECK(WARN(1, "dialect warn literal") != 0);
	DIALECT_CHECK(kk_warn_count() == warns + 3);
	for (i = 0; i < 3; i++) {
		DIALECT_CHECK(WARN_ON_ONCE(1) != 0);
		DIALECT_CHECK(WARN_ONCE(1, "dialect warn once %d", i) != 0);
		DIALECT_CHECK(WARN_ONCE(1, "dialect warn once literal") != 0);
	}
	DIALECT_CHECK(kk_warn_count() == warns + 6);
	DIALECT_CHECK(kk_test_taint(KK_TAINT_WARN) == 1);
	DIALECT_CHECK(strchr(kk_print_tainted(taint, (int)sizeof(taint)), 'W') != NULL);
	DIALECT_CHECK((kk_get_taint() & (1ul << KK_TAINT_WARN)) != 0);
	BUG_ON(0);
	BUG_ON(never);
	if (never)
		BUG();
	if (never)
		panic("never %d", x);
	if (never)
		panic("never");
	DIALECT_CHECK(!kk_panic_in_progress());
	DIALECT_CHECK(kk_panic_get_stats(&st) == -2 /* -ENOENT */);

	memset(&nb, 0, sizeof(nb));
	nb.notifier_call = notify;
	nb.priority = 10;
	DIALECT_CHECK(kk_panic_notifier_register(&nb) == 0);
	DIALECT_CHECK(kk_panic_notifier_register(&nb) == -17 /* -EEXIST */);
	DIALECT_CHECK(kk_panic_notifier_unregister(&nb) == 0);
	DIALECT_CHECK(kk_panic_notifier_unregister(&nb) == -2 /* -ENOENT */);

	memset(&pol, 0, sizeof(pol));
	pol.name = "dialect";
	pol.priority = 50;
	pol.run = policy_run;
	DIALECT_CHECK(kk_panic_policy_register(&pol) == 0);
	DIALECT_CHECK(kk_panic_set_policy("dialect") == 0);
	DIALECT_CHECK(strcmp(kk_panic_get_policy(), "dialect") == 0);
	DIALECT_CHECK(kk_panic_set_policy("halt") == 0);
	DIALECT_CHECK(kk_panic_policy_unregister(&pol) == 0);

	DIALECT_CHECK(kk_panic_set_timeout(5) == 0 && kk_panic_get_timeout() == 5);
	DIALECT_CHECK(kk_panic_set_timeout(0) == 0);
	DIALECT_CHECK(kk_panic_set_on_warn(2) == -22 /* -EINVAL */);
	DIALECT_CHECK(kk_panic_get_on_warn() == 0);
	DIALECT_CHECK(kk_panic_set_restart(KK_PANIC_RESTART_EXIT) == 0);
	DIALECT_CHECK(kk_panic_get_exit_status() == KK_PANIC_EXIT_STATUS_DEFAULT);
	DIALECT_CHECK(kk_panic_apply_settings("timeout=3\nstop_timeout_ms=500\n", NULL, 0) == 0);
	DIALECT_CHECK(kk_panic_get_timeout() == 3);
	DIALECT_CHECK(kk_panic_apply_settings("timeout=1\nbogus=1\n", taint, (int)sizeof(taint)) ==
		      -22);
	DIALECT_CHECK(kk_panic_get_timeout() == 3);
	DIALECT_CHECK(kk_panic_set_timeout(0) == 0);
	DIALECT_CHECK(kk_panic_stop_signal() > 0);
	return 0;
}

static int dialect_shazptr(void)
{
	struct shazptr_guard g, inner;
	struct kk_shazptr_stats st;

	DIALECT_CHECK(kk_shazptr_scan(&shared_value) == 0);
	g = shazptr_acquire(&shared_value);
	DIALECT_CHECK(!g.use_wildcard);
	DIALECT_CHECK(kk_shazptr_scan(&shared_value) == -16 /* -EBUSY */);
	inner = shazptr_acquire(&setting);		/* nested: the wildcard */
	DIALECT_CHECK(inner.use_wildcard);
	DIALECT_CHECK(kk_shazptr_scan(&setting) == -16);
	shazptr_clear(inner);
	DIALECT_CHECK(kk_shazptr_scan(&shared_value) == -16);
	shazptr_clear(g);
	DIALECT_CHECK(kk_shazptr_scan(&shared_value) == 0);
	DIALECT_CHECK(kk_shazptr_scan(SHAZPTR_WILDCARD) == -22 /* -EINVAL */);
	synchronize_shazptr(&shared_value);
	kk_shazptr_get_stats(&st);
	DIALECT_CHECK(st.sync_calls >= 1 && st.slots >= 1);
	kk_shazptr_reset_stats();
	DIALECT_CHECK(kk_shazptr_set_skip_synchronize_self_scan(false) == false);
	DIALECT_CHECK(!kk_shazptr_get_skip_synchronize_self_scan());
	return 0;
}

static int dialect_control(void)
{
	struct kk_control_file_ops ops;
	struct kk_buf b;
	char *text = NULL, *reply = NULL;
	size_t len = 0;

	memset(&b, 0, sizeof(b));
	DIALECT_CHECK(kk_buf_printf(&b, "%s %d", "n", 1) >= 0);
	DIALECT_CHECK(b.len == 3 && memcmp(b.data, "n 1", 3) == 0);
	kk_buf_reset(&b);
	DIALECT_CHECK(b.len == 0);
	kk_buf_free(&b);

	memset(&ops, 0, sizeof(ops));
	ops.show = show;
	ops.write = store;
	DIALECT_CHECK(kk_control_create_file("dialect/setting", &ops, &setting) == 0);
	DIALECT_CHECK(kk_control_create_file("dialect/setting", &ops, &setting) == -17);
	DIALECT_CHECK(kk_control_create_file("../bad", &ops, &setting) == -22);
	DIALECT_CHECK(kk_control_read("dialect/setting", &text, &len) == 0);
	DIALECT_CHECK(text && strcmp(text, "value 7\n") == 0 && len == 8);
	free(text);
	DIALECT_CHECK(kk_control_write("dialect/setting", "42", 2, &reply) == 0);
	DIALECT_CHECK(reply && strcmp(reply, "ok\n") == 0);
	free(reply);
	DIALECT_CHECK(setting == 42);
	DIALECT_CHECK(kk_control_remove_file("dialect/setting") == 0);
	DIALECT_CHECK(kk_control_read("dialect/setting", &text, &len) == -2 /* -ENOENT */);

	DIALECT_CHECK(kk_threads_stop() == 0);
	DIALECT_CHECK(kk_control_start() == -11 /* -EAGAIN */);
	DIALECT_CHECK(kk_threads_start() == 0);
	return 0;
}

int dialect_misc(void)
{
	int i, allowed = 0;
	static DEFINE_RATELIMIT_STATE(rs, 1000000, 3);

	if (dialect_panic() || dialect_shazptr() || dialect_control())
		return 1;
	for (i = 0; i < 10; i++)
		allowed += __ratelimit(&rs);
	DIALECT_CHECK(allowed == 3);
	return 0;
}
