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
#include "common/internal.h"
#include "control.h"
#include "panic/internal.h"

static const char *const restart_names[] = { "exit", "abort", "reexec" };

struct staged {
	struct panic_settings s;
	char policy[32];
	int have_policy;
	unsigned long taint;
};

static int err_out(char *err, int errlen, int line, const char *key, const char *why)
{
	if (err && errlen > 0)
		panic_snprintf(err, (size_t)errlen, "line %d: %s: %s", line, key, why);
	return -EINVAL;
}

static int parse_int(const char *v, size_t n, long lo, long hi, int *out)
{
	long x;

	if (panic_parse_long(v, n, &x) || x < lo || x > hi)
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

/* What panic_show() prints after blink_ms when there is no blink hook. */
#define NO_BLINK_HOOK	" (no blink hook)"

/*
 * The keys of the settings text, in the order the control file prints them.
 * One table drives parsing (stage_key), applying (apply_staged) and printing
 * (panic_show), as opt_array does for the kernel's dynamic debug flags.
 */
enum key_type {
	KEY_INT,	/* an int setting in [lo, hi] */
	KEY_BOOL,	/* an int setting, 0 or 1, in the library's boolean grammar */
	KEY_RESTART,	/* an int setting, an index in restart_names */
	KEY_POLICY,	/* the policy, by name */
	KEY_TAINT,	/* taint to add: a bit mask or letters; shows the current mask */
	KEY_STATUS,	/* shown only: see stage_status() */
};

struct key {
	const char *name;
	enum key_type type;
	size_t off;			/* KEY_INT, KEY_BOOL, KEY_RESTART: the int in struct panic_settings */
	long lo, hi;			/* KEY_INT: the range */
	const char *why;		/* KEY_INT: what the value must be */
	int (*set)(int);		/* applies the int setting */
	const char *cannot;		/* set first, as it can fail; this says why it did */
	void (*now)(char *buf, size_t n);	/* KEY_STATUS: its value now */
	int moves;			/* KEY_STATUS: changes on its own (see stage_status) */
	const char *note;		/* printed after the value while there is no blink hook;
					 * accepted after a value written back */
};

static int set_restart(int r)
{
	return kk_panic_set_restart((enum kk_panic_restart)r);
}

/* No public setter: kk_panic_set_blink() also sets the hook. */
static int set_blink_ms(int ms)
{
	KKP_STORE(panic_set.blink_ms, ms);
	return 0;
}

static void now_policies(char *buf, size_t n)
{
	panic_policy_list(buf, n);
}

static void now_stop_signal(char *buf, size_t n)
{
	panic_snprintf(buf, n, "%d", kk_park_signal());
}

static void now_tainted(char *buf, size_t n)
{
	kk_print_tainted(buf, (int)n);
}

static void now_warn_count(char *buf, size_t n)
{
	panic_snprintf(buf, n, "%lu", kk_warn_count());
}

static void now_panicked(char *buf, size_t n)
{
	struct kk_panic_stats ps;

	panic_snprintf(buf, n, "%d", kk_panic_get_stats(&ps) == 0);
}

#define INT_KEY(f, l, h, w, fn)	{ #f, KEY_INT, offsetof(struct panic_settings, f), l, h, w, fn, NULL, NULL, 0, NULL }
#define BOOL_KEY(f, fn, c)	{ #f, KEY_BOOL, offsetof(struct panic_settings, f), 0, 1, NULL, fn, c, NULL, 0, NULL }
#define STATUS_KEY(n, m)	{ #n, KEY_STATUS, 0, 0, 0, NULL, NULL, NULL, now_##n, m, NULL }

static const struct key keys[] = {
	INT_KEY(timeout, -2147483647L - 1, 2147483647L, "not an integer", kk_panic_set_timeout),
	BOOL_KEY(on_warn, kk_panic_set_on_warn, NULL),
	BOOL_KEY(on_oops, kk_panic_set_on_oops, "cannot hook the fault signals"),
	{ "restart", KEY_RESTART, offsetof(struct panic_settings, restart), 0, 0, NULL, set_restart,
	  NULL, NULL, 0, NULL },
	INT_KEY(exit_status, 1, 255, "must be 1..255", kk_panic_set_exit_status),
	{ "policy", KEY_POLICY, 0, 0, 0, NULL, NULL, NULL, NULL, 0, NULL },
	STATUS_KEY(policies, 0),
	BOOL_KEY(core_dump, kk_panic_set_core_dump, NULL),
	INT_KEY(stop_timeout_ms, 1, 60000, "must be 1..60000", kk_panic_set_stop_timeout_ms),
	BOOL_KEY(notifiers_first, kk_panic_set_notifiers_first, NULL),
	BOOL_KEY(sd_watchdog, kk_panic_set_sd_watchdog, NULL),
	{ "blink_ms", KEY_INT, offsetof(struct panic_settings, blink_ms), 10, 60000,
	  "must be 10..60000", set_blink_ms, NULL, NULL, 0, NO_BLINK_HOOK },
	STATUS_KEY(stop_signal, 0),
	{ "taint", KEY_TAINT, 0, 0, 0, NULL, NULL, NULL, NULL, 0, NULL },
	STATUS_KEY(tainted, 1),
	STATUS_KEY(warn_count, 1),
	STATUS_KEY(panicked, 0),
};

#define NKEYS	(sizeof(keys) / sizeof(keys[0]))

static int is_setting(const struct key *k)
{
	return k->type == KEY_INT || k->type == KEY_BOOL || k->type == KEY_RESTART;
}

static int *setting(struct panic_settings *s, const struct key *k)
{
	return (int *)((char *)s + k->off);
}

static const struct key *find_key(const char *name)
{
	for (size_t i = 0; i < NKEYS; i++)
		if (!strcmp(name, keys[i].name))
			return &keys[i];
	return NULL;
}

/*
 * The status lines the control file prints after the settings.  A write of
 * what was read carries them back: warn_count and tainted move on their own
 * (a WARN() between the read and the write), so they are accepted and
 * ignored; the others must still say what the process says now, so that a
 * write that would change one is refused instead of silently doing nothing.
 */
static int stage_status(const struct key *k, const char *v, size_t vn, int line, char *err,
			int errlen)
{
	char now[256];

	if (k->moves)
		return 0;
	k->now(now, sizeof(now));
	if (strlen(now) == vn && !memcmp(now, v, vn))
		return 0;
	if (err && errlen > 0)
		panic_snprintf(err, (size_t)errlen, "line %d: %s: read-only (it is %s)", line, k->name,
			     now);
	return -EINVAL;
}

static int parse_restart(const char *v, size_t vn, int *out)
{
	for (int r = 0; r < 3; r++) {
		if (strlen(restart_names[r]) == vn && !strncmp(v, restart_names[r], vn)) {
			*out = r;
			return 0;
		}
	}
	return -EINVAL;
}

/* Check an int setting into *out; the why of its failure, or NULL. */
static const char *stage_setting(const struct key *k, const char *v, size_t vn, int *out)
{
	switch (k->type) {
	case KEY_BOOL:
		return parse_flag(v, vn, out) ?
			"not a boolean (1/0, y/n, yes/no, on/off, true/false)" : NULL;
	case KEY_RESTART:
		return parse_restart(v, vn, out) ? "must be exit, abort or reexec" : NULL;
	default:
		if (k->note && vn > strlen(k->note) &&
		    !memcmp(v + vn - strlen(k->note), k->note, strlen(k->note)))
			vn -= strlen(k->note);	/* as the file printed it */
		return parse_int(v, vn, k->lo, k->hi, out) ? k->why : NULL;
	}
}

static const char *stage_policy(struct staged *st, const char *v, size_t vn)
{
	if (vn >= sizeof(st->policy))
		return "no such policy";
	memcpy(st->policy, v, vn);
	st->policy[vn] = '\0';
	if (!panic_policy_exists(st->policy))
		return "no such policy";
	st->have_policy = 1;
	return NULL;
}

/* A bit mask (as /proc/sys/kernel/tainted) or taint letters. */
static const char *stage_taint(struct staged *st, const char *v, size_t vn)
{
	static const char letters[] = "PFSRMBUDAWCIOELKXTN";
	long m;

	if (!panic_parse_long(v, vn, &m)) {
		if (m < 0 || m >= (1L << KK_TAINT_FLAGS_COUNT))
			return "unknown taint bit";
		st->taint |= (unsigned long)m;
		return NULL;
	}
	for (size_t j = 0; j < vn; j++) {
		const char *c = memchr(letters, v[j], KK_TAINT_FLAGS_COUNT);

		if (!c)
			return "unknown taint letter";
		st->taint |= 1ul << (c - letters);
	}
	return NULL;
}

#define KEY_MAX	32

/*
 * Split a line into key and value: "key=value", or "key: value" as the file
 * prints it.  Returns 1 with a key, 0 for a blank or comment line, -1 when
 * the key does not fit in @key.
 */
static int split_line(const char *l, size_t n, char key[KEY_MAX], const char **v, size_t *vn)
{
	size_t k = 0, i = 0;

	while (i < n && kk_is_space(l[i]))
		i++;
	while (n > i && kk_is_space(l[n - 1]))
		n--;
	if (i == n || l[i] == '#')
		return 0;
	while (i < n && l[i] != '=' && l[i] != ':' && !kk_is_space(l[i])) {
		if (k + 1 >= KEY_MAX)
			return -1;
		key[k++] = l[i++];
	}
	key[k] = '\0';
	while (i < n && kk_is_space(l[i]))
		i++;
	if (i < n && (l[i] == '=' || l[i] == ':'))
		i++;
	while (i < n && kk_is_space(l[i]))
		i++;
	*v = l + i;
	*vn = n - i;
	return 1;
}

/* Check one "key=value" line into @st.  0 or -EINVAL with a message. */
static int stage_line(struct staged *st, const char *l, size_t n, int line, char *err, int errlen)
{
	char key[KEY_MAX];
	const struct key *k;
	const char *v, *why = NULL;
	size_t vn;
	int r = split_line(l, n, key, &v, &vn);

	if (r <= 0)
		return r ? err_out(err, errlen, line, "key", "too long") : 0;
	k = find_key(key);
	if (k && k->type == KEY_STATUS)
		return stage_status(k, v, vn, line, err, errlen);
	if (!vn)
		return err_out(err, errlen, line, key, "no value");
	if (!k)
		return err_out(err, errlen, line, key, "unknown key");
	if (k->type == KEY_POLICY)
		why = stage_policy(st, v, vn);
	else if (k->type == KEY_TAINT)
		why = stage_taint(st, v, vn);
	else
		why = stage_setting(k, v, vn, setting(&st->s, k));
	return why ? err_out(err, errlen, line, key, why) : 0;
}

/*
 * Apply what was staged.  The steps that can fail go first (on_oops hooks
 * the fault signals; the policy may have been unregistered since it was
 * checked), so a failure leaves everything as it was.
 */
static int apply_staged(struct staged *st, char *err, int errlen)
{
	int rc;

	for (size_t i = 0; i < NKEYS; i++) {
		const struct key *k = &keys[i];

		if (!is_setting(k) || !k->cannot)
			continue;
		rc = k->set(*setting(&st->s, k));
		if (rc) {
			if (err && errlen > 0)
				panic_snprintf(err, (size_t)errlen, "%s: %s", k->name, k->cannot);
			return rc;
		}
	}
	if (st->have_policy && kk_panic_set_policy(st->policy)) {
		if (err && errlen > 0)
			panic_snprintf(err, (size_t)errlen, "policy: %s went away", st->policy);
		return -ENOENT;
	}
	for (size_t i = 0; i < NKEYS; i++)
		if (is_setting(&keys[i]) && !keys[i].cannot)
			keys[i].set(*setting(&st->s, &keys[i]));
	for (unsigned f = 0; f < KK_TAINT_FLAGS_COUNT; f++)
		if (st->taint & (1ul << f))
			kk_add_taint(f);
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
	/* Start from the settings now: a text that names a few keys leaves the others. */
	memset(&st, 0, sizeof(st));
	for (size_t i = 0; i < NKEYS; i++)
		if (is_setting(&keys[i]))
			*setting(&st.s, &keys[i]) = __atomic_load_n(setting(&panic_set, &keys[i]),
								    __ATOMIC_RELAXED);
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
	return apply_staged(&st, err, errlen);
}

/* ---- environment ------------------------------------------------------------------ */

void panic_env_init(void)
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
			panic_dprintf(KKP_FD, "kernelkit: ignoring %s: bad value\n", vars[i][0]);
			continue;
		}
		panic_snprintf(line, sizeof(line), "%s=%s", vars[i][1], v);
		if (kk_panic_apply_settings(line, err, sizeof(err)))
			panic_dprintf(KKP_FD, "kernelkit: ignoring %s=%s (%s)\n", vars[i][0], v, err);
	}
}

/* ---- the control file ----------------------------------------------------------------- */

/* One line per key of keys[], in its order. */
static void show_key(struct kk_buf *out, const struct key *k)
{
	char now[256];
	int v;

	switch (k->type) {
	case KEY_POLICY:
		kk_buf_printf(out, "%s: %s\n", k->name, panic_policy_name());
		return;
	case KEY_TAINT:
		kk_buf_printf(out, "%s: %lu\n", k->name, kk_get_taint());
		return;
	case KEY_STATUS:
		k->now(now, sizeof(now));
		kk_buf_printf(out, "%s: %s\n", k->name, now);
		return;
	default:
		break;
	}
	v = __atomic_load_n(setting(&panic_set, k), __ATOMIC_RELAXED);
	if (k->type == KEY_RESTART)
		kk_buf_printf(out, "%s: %s\n", k->name, v >= 0 && v < 3 ? restart_names[v] : "?");
	else
		kk_buf_printf(out, "%s: %d%s\n", k->name, v, k->note && !panic_blink_fn ? k->note : "");
}

static int panic_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	for (size_t i = 0; i < NKEYS; i++)
		show_key(out, &keys[i]);
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

void panic_control_gone(void)
{
	/* Its thread is parked now: refuse new clients so they do not hang on it. */
	kk_control_refuse();
}

KK_LOAD_TEXT void panic_control_init(void)
{
	kk_control_add_lib_file(&panic_file);
}
