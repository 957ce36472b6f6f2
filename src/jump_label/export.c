// SPDX-License-Identifier: MIT
/*
 * Keys the control endpoint may switch: kk_static_key_export(), and the
 * write side of the static_keys file.
 *
 * Data structures first.  An export is a small node (the key, the name it
 * is switched by) on one list, under jump_label_mutex like the rest of the
 * registry.  A process exports a handful of keys (feature flags), so the
 * list is searched linearly; the listing asks each key whether it is
 * exported.  A name is one key in the process: a write names a key, and two
 * keys behind one name would make the operator's "on" ambiguous.
 *
 * Why a registration call and not a DEFINE_STATIC_KEY_FALSE_CONTROL(name)
 * definition: it exports any key (TRUE or FALSE, an array element, the key
 * of a deferred key, one a header declares and another object defines)
 * without touching how keys are defined ("static" and attributes in front
 * of DEFINE_* keep working, and no new section, constructor or ABI of the
 * site tables is needed: objects built with older headers are unchanged);
 * the program chooses when a key becomes switchable (after its own set-up,
 * or never in a build that does not want it) and can withdraw it; and the
 * kernel, too, makes a key switchable from outside by registering a
 * control (a debugfs file, sched_features), not by defining the key
 * differently.  It has no kernel twin, hence the kk_ prefix.
 *
 * A write is static_key_enable()/static_key_disable() of each key named,
 * all in one batch (jump_label_set_keys_locked): "on" on a key that is on
 * already leaves its count alone; "off" on a key whose count the program
 * raised above 1 (static_branch_inc) is refused, as static_key_disable()
 * refuses it.  Every line is checked before any key moves (rule 5).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include <kernelkit/jump_label.h>
#include "common/internal.h"
#include "control.h"
#include "jump_label/internal.h"

#define EXPORT_NAME_MAX	64	/* with the NUL */

struct jump_label_export {
	struct jump_label_export *next;
	struct static_key *key;
	char name[EXPORT_NAME_MAX];
};

static struct jump_label_export *exports;

#define fail jump_label_fail

/* What a name may hold: a key's own name, an array element "name[3]", or a
 * dotted path ("net.tx.trace"); no space, no '#' (comments), nothing kkctl
 * would have to escape. */
static const char name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789_.:-[]";

static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	return n > 0 && n < EXPORT_NAME_MAX && strspn(name, name_chars) == n;
}

static struct jump_label_export *find_key(const struct static_key *key)
{
	for (struct jump_label_export *x = exports; x; x = x->next)
		if (x->key == key)
			return x;
	return NULL;
}

static struct jump_label_export *find_name(const char *name)
{
	for (struct jump_label_export *x = exports; x; x = x->next)
		if (!strcmp(x->name, name))
			return x;
	return NULL;
}

const char *jump_label_export_name(const struct static_key *key)
{
	struct jump_label_export *x = find_key(key);

	return x ? x->name : NULL;
}

bool jump_label_exports_any(void)
{
	return exports != NULL;
}

void jump_label_exports_forget(uintptr_t lo, uintptr_t hi)
{
	for (struct jump_label_export **pp = &exports, *x; (x = *pp);) {
		if ((uintptr_t)x->key >= lo && (uintptr_t)x->key < hi) {
			*pp = x->next;
			free(x);
		} else {
			pp = &x->next;
		}
	}
}

/* ---- the API ------------------------------------------------------------------------ */

static int export_locked(struct static_key *key, const char *name)
{
	struct jump_label_export *x = find_key(key), *y = find_name(name);
	char module[64];
	int ret;

	if (x)
		return strcmp(x->name, name) ? fail(-EEXIST, "the key is already exported as '%s'",
						    x->name) : 0;
	if (y) {
		jump_label_key_module(y->key, module, sizeof(module));
		return fail(-EEXIST, "'%s' is already the name of another key (in %s); one name is "
			    "one key per process", name, module);
	}
	if (!(x = calloc(1, sizeof(*x))))
		return fail(-ENOMEM, "out of memory exporting '%s'", name);
	if ((ret = jump_label_key_known(key))) {	/* listed from now on */
		free(x);
		return ret;
	}
	x->key = key;
	snprintf(x->name, sizeof(x->name), "%s", name);
	x->next = exports;
	exports = x;
	return 0;
}

KK_EXPORT int kk_static_key_export(struct static_key *key, const char *name)
{
	char own[128];
	int ret;

	if (!key)
		return fail(-EINVAL, "NULL key");
	if (!name && !key->name)
		return fail(-EINVAL, "key@%p has no name: export it with one", (void *)key);
	if (!name) {
		jump_label_key_name(key, own, sizeof(own));
		name = own;
	}
	if (!name_ok(name))
		return fail(-EINVAL, "cannot export a key as '%.64s': a name is 1 to %d bytes of "
			    "[A-Za-z0-9_.:-] and []", name, EXPORT_NAME_MAX - 1);
	if (jump_label_lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	ret = export_locked(key, name);
	jump_label_unlock();
	if (!ret)	/* there is something to control now, also without sites */
		kk_control_autostart();
	return ret;
}

KK_EXPORT int kk_static_key_unexport(struct static_key *key)
{
	struct jump_label_export **pp, *x;
	int ret = 0;

	if (!key)
		return fail(-EINVAL, "NULL key");
	if (jump_label_lock_held())
		return fail(-EDEADLK, "called with jump_label_lock() held");
	jump_label_lock();
	for (pp = &exports; *pp && (*pp)->key != key; pp = &(*pp)->next)
		;
	if ((x = *pp)) {
		*pp = x->next;
		free(x);
	} else {
		ret = fail(-ENOENT, "the key is not exported");
	}
	jump_label_unlock();
	return ret;
}

/* ---- writes of static_keys ---------------------------------------------------------- */

/* One key a write sets; a key named twice takes its last line, as in the queue. */
struct rules {
	struct static_key **keys;
	bool *on;
	unsigned *line;
	size_t n;
};

static const struct {
	const char *word;
	bool on;
} values[] = {
	{ "on", true }, { "off", false }, { "1", true }, { "0", false },
};

/* The keys a name that is not exported stands for (several keys may share
 * their own name), and how many of them are on. */
struct own_name {
	const char *name;
	unsigned n, on;
};

static void match_own_name(struct static_key *key, void *arg)
{
	struct own_name *o = arg;
	char name[128];

	jump_label_key_name(key, name, sizeof(name));
	if (!strcmp(name, o->name)) {
		o->n++;
		o->on += static_key_count(key) > 0;
	}
}

/*
 * A line that names a key not exported: refused when it would change the
 * key (with why in @out), accepted when the key is in that state already,
 * so that the listing written back is taken (every control file takes back
 * what it printed) and changes nothing.
 */
static int not_exported(const char *name, bool on, unsigned no, struct kk_buf *out)
{
	struct own_name o = { name, 0, 0 };

	jump_label_for_each_key(match_own_name, &o);
	if (!o.n) {
		kk_buf_printf(out, "line %u: no key '%.64s' (kkctl read static_keys lists them); "
			      "nothing changed\n", no, name);
		return -ENOENT;
	}
	if (o.on == (on ? o.n : 0))
		return 0;
	kk_buf_printf(out, "line %u: key '%s' is read-only: the program did not export it "
		      "(kk_static_key_export()); nothing changed\n", no, name);
	return -EACCES;
}

static int parse_value(const char *word, bool *on)
{
	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		if (!strcmp(word, values[i].word)) {
			*on = values[i].on;
			return 0;
		}
	}
	return -EINVAL;
}

static void add_rule(struct rules *r, struct static_key *key, bool on, unsigned no)
{
	size_t i;

	for (i = 0; i < r->n && r->keys[i] != key; i++)
		;
	r->keys[i] = key;
	r->on[i] = on;
	r->line[i] = no;
	if (i == r->n)
		r->n++;
}

/*
 * One line: "NAME VALUE", or a line of the listing ("NAME ENABLED COUNT
 * SITES MODULE MODE": the last four are ignored).  Blank lines and '#'
 * comments (the listing's header) are skipped.
 */
static int parse_line(char *line, unsigned no, struct rules *r, struct kk_buf *out)
{
	static const char sep[] = " \t\r";
	char *save, *name = strtok_r(line, sep, &save), *word;
	struct jump_label_export *x;
	unsigned rest = 0;
	bool on;

	if (!name || name[0] == '#')
		return 0;
	word = strtok_r(NULL, sep, &save);
	while (word && rest < 5 && strtok_r(NULL, sep, &save))
		rest++;
	if (!word || (rest != 0 && rest != 4) || parse_value(word, &on)) {
		kk_buf_printf(out, "line %u: '%.64s%s%.16s%s' is not NAME on|off (or 1|0); "
			      "nothing changed\n", no, name, word ? " " : "", word ? word : "",
			      rest ? " ..." : "");
		return -EINVAL;
	}
	if (!(x = find_name(name)))
		return not_exported(name, on, no, out);
	add_rule(r, x->key, on, no);
	return 0;
}

/* Every line, then the counts: all checked before any key moves. */
static int parse_all(char *text, struct rules *r, struct kk_buf *out)
{
	unsigned no = 1;
	int ret = 0;

	for (char *p = text, *nl; p && !ret; p = nl ? nl + 1 : NULL, no++) {
		if ((nl = strchr(p, '\n')))
			*nl = '\0';
		ret = parse_line(p, no, r, out);
	}
	for (size_t i = 0; i < r->n && !ret; i++) {
		int v = static_key_count(r->keys[i]);

		if (!r->on[i] && v > 1) {
			kk_buf_printf(out, "line %u: key '%s' holds %d references the program took; "
				      "off needs at most 1; nothing changed\n", r->line[i],
				      jump_label_export_name(r->keys[i]), v);
			ret = -EBUSY;
		}
	}
	return ret;
}

static void report(const struct rules *r, const int *before, struct kk_buf *out)
{
	for (size_t i = 0; i < r->n; i++)
		kk_buf_printf(out, "%s %s%s\n", jump_label_export_name(r->keys[i]),
			      r->on[i] ? "on" : "off",
			      (before[i] > 0) == r->on[i] ? " (already)" : "");
}

int jump_label_control_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	size_t lines = 1;
	struct rules r = { 0 };
	char *text = strndup(buf, len);
	int *before = NULL, ret;

	(void)priv;
	for (size_t i = 0; i < len; i++)
		lines += buf[i] == '\n';
	r.keys = malloc(lines * sizeof(*r.keys));
	r.on = malloc(lines * sizeof(*r.on));
	r.line = malloc(lines * sizeof(*r.line));
	before = malloc(lines * sizeof(*before));
	if (!text || !r.keys || !r.on || !r.line || !before) {
		kk_buf_printf(out, "out of memory for a write of %zu lines; nothing changed\n", lines);
		ret = -ENOMEM;
	} else if (jump_label_lock_held()) {
		kk_buf_printf(out, "written with jump_label_lock() held; nothing changed\n");
		ret = -EDEADLK;
	} else {
		jump_label_lock();
		ret = parse_all(text, &r, out);
		for (size_t i = 0; i < r.n && !ret; i++)
			before[i] = static_key_count(r.keys[i]);
		if (!ret && (ret = jump_label_set_keys_locked(r.keys, r.on, r.n)))
			kk_buf_printf(out, "%s; nothing changed\n", kk_jump_label_strerror());
		if (!ret)
			report(&r, before, out);
		jump_label_unlock();
	}
	free(text);
	free(r.keys);
	free(r.on);
	free(r.line);
	free(before);
	return ret;
}
