// SPDX-License-Identifier: MIT
/*
 * Settings text ("key=value" lines), the KK_PANIC_* environment variables
 * and the control file "panic".
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernelkit/control.h"
#include "common.h"
#include "control_internal.h"
#include "panic/internal.h"

static const char *const restart_names[] = { "exit", "abort", "reexec" };

struct staged {
	struct kkp_settings s;
	char policy[32];
	int have_policy;
	unsigned long taint;
};

static int err_out(char *err, int errlen, int line, const char *key, const char *why)
{
	if (err && errlen > 0)
		kkp_snprintf(err, (size_t)errlen, "line %d: %s: %s", line, key, why);
	return -EINVAL;
}

static int parse_int(const char *v, size_t n, long lo, long hi, int *out)
{
	long x;

	if (kkp_parse_long(v, n, &x) || x < lo || x > hi)
		return -EINVAL;
	*out = (int)x;
	return 0;
}

/* The library's one boolean grammar (kk_parse_bool) on a counted value. */
static int parse_flag(const char *v, size_t n, int *out)
{
	char buf[8];
	bool b;

	if (n >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, v, n);
	buf[n] = '\0';
	if (kk_parse_bool(buf, &b))
		return -EINVAL;
	*out = b;
	return 0;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* What panic_show() prints after blink_ms when there is no blink hook. */
#define NO_BLINK_HOOK	" (no blink hook)"

/*
 * The status lines the control file prints after the settings.  A write of
 * what was read carries them back: warn_count and tainted move on their own
 * (a WARN() between the read and the write), so they are accepted and
 * ignored; the others must still say what the process says now, so that a
 * write that would change one is refused instead of silently doing nothing.
 */
static const char *const status_keys[] = {
	"policies", "stop_signal", "tainted", "warn_count", "panicked",
};

static int is_status(const char *key)
{
	for (size_t i = 0; i < sizeof(status_keys) / sizeof(status_keys[0]); i++)
		if (!strcmp(key, status_keys[i]))
			return 1;
	return 0;
}

static int stage_status(const char *key, const char *v, size_t vn, int line, char *err,
			int errlen)
{
	char now[256];
	struct kk_panic_stats ps;

	if (!strcmp(key, "warn_count") || !strcmp(key, "tainted"))
		return 0;
	if (!strcmp(key, "policies"))
		kkp_policy_list(now, sizeof(now));
	else if (!strcmp(key, "stop_signal"))
		kkp_snprintf(now, sizeof(now), "%d", kk_park_signal());
	else
		kkp_snprintf(now, sizeof(now), "%d", kk_panic_get_stats(&ps) == 0);
	if (strlen(now) == vn && !memcmp(now, v, vn))
		return 0;
	if (err && errlen > 0)
		kkp_snprintf(err, (size_t)errlen, "line %d: %s: read-only (it is %s)", line, key, now);
	return -EINVAL;
}

/* Check one "key=value" line into @st.  0 or -EINVAL with a message. */
static int stage_line(struct staged *st, const char *l, size_t n, int line, char *err, int errlen)
{
	char key[32];
	size_t k = 0, i = 0;
	const char *v;
	size_t vn;

	while (i < n && is_space(l[i]))
		i++;
	while (n > i && is_space(l[n - 1]))
		n--;
	if (i == n || l[i] == '#')
		return 0;
	while (i < n && l[i] != '=' && l[i] != ':' && !is_space(l[i])) {
		if (k + 1 >= sizeof(key))
			return err_out(err, errlen, line, "key", "too long");
		key[k++] = l[i++];
	}
	key[k] = '\0';
	while (i < n && is_space(l[i]))
		i++;
	if (i < n && (l[i] == '=' || l[i] == ':'))	/* "key: value" is how the file prints */
		i++;
	while (i < n && is_space(l[i]))
		i++;
	v = l + i;
	vn = n - i;
	if (is_status(key))
		return stage_status(key, v, vn, line, err, errlen);
	if (!vn)
		return err_out(err, errlen, line, key, "no value");

	if (!strcmp(key, "timeout")) {
		if (parse_int(v, vn, -2147483647L - 1, 2147483647L, &st->s.timeout))
			return err_out(err, errlen, line, key, "not an integer");
	} else if (!strcmp(key, "on_warn") || !strcmp(key, "on_oops") || !strcmp(key, "core_dump") ||
		   !strcmp(key, "notifiers_first") || !strcmp(key, "sd_watchdog")) {
		int x;

		if (parse_flag(v, vn, &x))
			return err_out(err, errlen, line, key,
				       "not a boolean (1/0, y/n, yes/no, on/off, true/false)");
		if (!strcmp(key, "on_warn"))
			st->s.on_warn = x;
		else if (!strcmp(key, "on_oops"))
			st->s.on_oops = x;
		else if (!strcmp(key, "core_dump"))
			st->s.core_dump = x;
		else if (!strcmp(key, "notifiers_first"))
			st->s.notifiers_first = x;
		else
			st->s.sd_watchdog = x;
	} else if (!strcmp(key, "restart")) {
		int found = -1;

		for (int r = 0; r < 3; r++)
			if (strlen(restart_names[r]) == vn && !strncmp(v, restart_names[r], vn))
				found = r;
		if (found < 0)
			return err_out(err, errlen, line, key, "must be exit, abort or reexec");
		st->s.restart = found;
	} else if (!strcmp(key, "exit_status")) {
		if (parse_int(v, vn, 1, 255, &st->s.exit_status))
			return err_out(err, errlen, line, key, "must be 1..255");
	} else if (!strcmp(key, "stop_timeout_ms")) {
		if (parse_int(v, vn, 1, 60000, &st->s.stop_timeout_ms))
			return err_out(err, errlen, line, key, "must be 1..60000");
	} else if (!strcmp(key, "blink_ms")) {
		if (vn > sizeof(NO_BLINK_HOOK) - 1 &&
		    !memcmp(v + vn - (sizeof(NO_BLINK_HOOK) - 1), NO_BLINK_HOOK, sizeof(NO_BLINK_HOOK) - 1))
			vn -= sizeof(NO_BLINK_HOOK) - 1;	/* the note the file prints */
		if (parse_int(v, vn, 10, 60000, &st->s.blink_ms))
			return err_out(err, errlen, line, key, "must be 10..60000");
	} else if (!strcmp(key, "policy")) {
		if (vn >= sizeof(st->policy))
			return err_out(err, errlen, line, key, "no such policy");
		memcpy(st->policy, v, vn);
		st->policy[vn] = '\0';
		if (!kkp_policy_exists(st->policy))
			return err_out(err, errlen, line, key, "no such policy");
		st->have_policy = 1;
	} else if (!strcmp(key, "taint")) {
		/* A bit mask (as /proc/sys/kernel/tainted) or taint letters. */
		static const char letters[] = "PFSRMBUDAWCIOELKXTN";
		long m;

		if (!kkp_parse_long(v, vn, &m)) {
			if (m < 0 || m >= (1L << KK_TAINT_FLAGS_COUNT))
				return err_out(err, errlen, line, key, "unknown taint bit");
			st->taint |= (unsigned long)m;
		} else {
			for (size_t j = 0; j < vn; j++) {
				const char *c = memchr(letters, v[j], KK_TAINT_FLAGS_COUNT);

				if (!c)
					return err_out(err, errlen, line, key, "unknown taint letter");
				st->taint |= 1ul << (c - letters);
			}
		}
	} else {
		return err_out(err, errlen, line, key, "unknown key");
	}
	return 0;
}

KK_EXPORT int kk_panic_apply_settings(const char *text, char *err, int errlen)
{
	struct staged st;
	const char *p = text;
	int line = 0, rc;

	if (err && errlen > 0)
		err[0] = '\0';
	if (!text)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	st.s.timeout = KKP_LOAD(kkp_set.timeout);
	st.s.on_warn = KKP_LOAD(kkp_set.on_warn);
	st.s.on_oops = KKP_LOAD(kkp_set.on_oops);
	st.s.restart = KKP_LOAD(kkp_set.restart);
	st.s.exit_status = KKP_LOAD(kkp_set.exit_status);
	st.s.core_dump = KKP_LOAD(kkp_set.core_dump);
	st.s.stop_timeout_ms = KKP_LOAD(kkp_set.stop_timeout_ms);
	st.s.notifiers_first = KKP_LOAD(kkp_set.notifiers_first);
	st.s.sd_watchdog = KKP_LOAD(kkp_set.sd_watchdog);
	st.s.blink_ms = KKP_LOAD(kkp_set.blink_ms);
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		line++;
		rc = stage_line(&st, p, n, line, err, errlen);
		if (rc)
			return rc;
		p += n + (nl ? 1 : 0);
	}
	if (kk_panic_in_progress())
		return -EBUSY;
	/* The one step that can fail goes first. */
	rc = kk_panic_set_on_oops(st.s.on_oops);
	if (rc) {
		if (err && errlen > 0)
			kkp_snprintf(err, (size_t)errlen, "on_oops: cannot hook the fault signals");
		return rc;
	}
	if (st.have_policy && kk_panic_set_policy(st.policy)) {
		if (err && errlen > 0)
			kkp_snprintf(err, (size_t)errlen, "policy: %s went away", st.policy);
		return -ENOENT;
	}
	kk_panic_set_timeout(st.s.timeout);
	kk_panic_set_on_warn(st.s.on_warn);
	kk_panic_set_restart((enum kk_panic_restart)st.s.restart);
	kk_panic_set_exit_status(st.s.exit_status);
	kk_panic_set_core_dump(st.s.core_dump);
	kk_panic_set_stop_timeout_ms(st.s.stop_timeout_ms);
	kk_panic_set_notifiers_first(st.s.notifiers_first);
	kk_panic_set_sd_watchdog(st.s.sd_watchdog);
	KKP_STORE(kkp_set.blink_ms, st.s.blink_ms);
	for (unsigned f = 0; f < KK_TAINT_FLAGS_COUNT; f++)
		if (st.taint & (1ul << f))
			kk_add_taint(f);
	return 0;
}

/* ---- environment ------------------------------------------------------------------ */

void kkp_env_init(void)
{
	static const char *const vars[][2] = {
		{ "KK_PANIC_TIMEOUT", "timeout" },
		{ "KK_PANIC_ON_WARN", "on_warn" },
		{ "KK_PANIC_ON_OOPS", "on_oops" },
		{ "KK_PANIC_RESTART", "restart" },
		{ "KK_PANIC_POLICY", "policy" },
		{ "KK_PANIC_EXIT_STATUS", "exit_status" },
		{ "KK_PANIC_CORE", "core_dump" },
		{ "KK_PANIC_STOP_TIMEOUT_MS", "stop_timeout_ms" },
		{ "KK_PANIC_NOTIFIERS_FIRST", "notifiers_first" },
		{ "KK_PANIC_SD_WATCHDOG", "sd_watchdog" },
		{ "KK_PANIC_BLINK_MS", "blink_ms" },
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v = kk_getenv(vars[i][0]);
		char line[128], err[128];

		if (!v)
			continue;
		if (strlen(v) > 64 || strchr(v, '\n')) {
			kkp_dprintf(KKP_FD, "kernelkit: ignoring %s: bad value\n", vars[i][0]);
			continue;
		}
		kkp_snprintf(line, sizeof(line), "%s=%s", vars[i][1], v);
		if (kk_panic_apply_settings(line, err, sizeof(err)))
			kkp_dprintf(KKP_FD, "kernelkit: ignoring %s=%s (%s)\n", vars[i][0], v, err);
	}
}

/* ---- the control file ----------------------------------------------------------------- */

static int panic_show(struct kk_buf *out, void *priv)
{
	char pol[256], tainted[48];
	struct kk_panic_stats st;
	int r = KKP_LOAD(kkp_set.restart);

	(void)priv;
	kkp_policy_list(pol, sizeof(pol));
	kk_buf_printf(out, "timeout: %d\n", KKP_LOAD(kkp_set.timeout));
	kk_buf_printf(out, "on_warn: %d\n", KKP_LOAD(kkp_set.on_warn));
	kk_buf_printf(out, "on_oops: %d\n", KKP_LOAD(kkp_set.on_oops));
	kk_buf_printf(out, "restart: %s\n", r >= 0 && r < 3 ? restart_names[r] : "?");
	kk_buf_printf(out, "exit_status: %d\n", KKP_LOAD(kkp_set.exit_status));
	kk_buf_printf(out, "policy: %s\n", kkp_policy_name());
	kk_buf_printf(out, "policies: %s\n", pol);
	kk_buf_printf(out, "core_dump: %d\n", KKP_LOAD(kkp_set.core_dump));
	kk_buf_printf(out, "stop_timeout_ms: %d\n", KKP_LOAD(kkp_set.stop_timeout_ms));
	kk_buf_printf(out, "notifiers_first: %d\n", KKP_LOAD(kkp_set.notifiers_first));
	kk_buf_printf(out, "sd_watchdog: %d\n", KKP_LOAD(kkp_set.sd_watchdog));
	kk_buf_printf(out, "blink_ms: %d%s\n", KKP_LOAD(kkp_set.blink_ms),
		      kkp_blink_fn ? "" : NO_BLINK_HOOK);
	kk_buf_printf(out, "stop_signal: %d\n", kk_park_signal());
	kk_buf_printf(out, "taint: %lu\n", kk_get_taint());
	kk_buf_printf(out, "tainted: %s\n", kk_print_tainted(tainted, sizeof(tainted)));
	kk_buf_printf(out, "warn_count: %lu\n", kk_warn_count());
	kk_buf_printf(out, "panicked: %d\n", kk_panic_get_stats(&st) == 0);
	return out->error;
}

static int panic_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	char err[160];
	int rc;

	(void)priv;
	if (memchr(buf, '\0', len)) {
		kk_buf_printf(out, "NUL byte in settings\n");
		return -EINVAL;
	}
	rc = kk_panic_apply_settings(buf, err, sizeof(err));
	if (rc)
		kk_buf_printf(out, "%s\n", err[0] ? err : "invalid settings");
	return rc;
}

static const struct kk_control_file_ops panic_ops = {
	.show = panic_show,
	.write = panic_write,
	.max_write = 4096,
};
KK_CONTROL_LIB_FILE(panic_file, "panic", &panic_ops);

void kkp_control_gone(void)
{
	/* Its thread is parked now: refuse new clients so they do not hang on it. */
	kk_control_refuse();
}

KK_LOAD_TEXT void kkp_control_init(void)
{
	kk_control_add_lib_file(&panic_file);
}
