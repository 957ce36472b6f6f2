// SPDX-License-Identifier: MIT
/*
 * Dynamic debug: the registry of sites, applying query blocks as one batch of
 * static-key changes, the control files, start-up queries and classmap
 * parameters.
 *
 * One ddebug_table per ELF object (sites and classmaps of its kk_dyndbg*
 * sections), in registration order.  ddebug_lock serializes everything that reads
 * or changes the tables or the sites' flags.  Lock order: ddebug_lock, then the
 * jump-label lock (inside the static_key_* calls).  Nothing under ddebug_lock may
 * take the dynamic loader's lock (dladdr, dlopen): a constructor that
 * registers an object holds that lock while it waits for ddebug_lock.
 */
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/control.h>
#include <kernelkit/dynamic_debug.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/internal.h"
#include "dynamic_debug/query.h"

_Static_assert(DDQ_F_PRINT == _DPRINTK_FLAGS_PRINT, "flag values");
_Static_assert(DDQ_F_INCL_MODNAME == _DPRINTK_FLAGS_INCL_MODNAME, "flag values");
_Static_assert(DDQ_F_INCL_FUNCNAME == _DPRINTK_FLAGS_INCL_FUNCNAME, "flag values");
_Static_assert(DDQ_F_INCL_LINENO == _DPRINTK_FLAGS_INCL_LINENO, "flag values");
_Static_assert(DDQ_F_INCL_TID == _DPRINTK_FLAGS_INCL_TID, "flag values");
_Static_assert(DDQ_F_INCL_SOURCENAME == _DPRINTK_FLAGS_INCL_SOURCENAME, "flag values");
_Static_assert(DDQ_F_INCL_STACK == _DPRINTK_FLAGS_INCL_STACK, "flag values");
_Static_assert(DDQ_F_TRACE == _DPRINTK_FLAGS_TRACE, "flag values");
_Static_assert(DDQ_CLASS_DFLT == _DPRINTK_CLASS_DFLT, "class values");

/* What a site whose function gets no descriptor cannot honour: m f l s t d,
 * and T (its function is not __dynamic_pr_debug(), so nothing would record). */
#define DDEBUG_DECORATIONS	(_DPRINTK_FLAGS_INCL_ANY | _DPRINTK_FLAGS_INCL_STACK | _DPRINTK_FLAGS_TRACE)
/* The site's key is on when it prints or records. */
#define DDEBUG_ON(f)	(((f) & _DPRINTK_FLAGS_ENABLED) != 0)

#define DDEBUG_MAX_WRITE	4096	/* writes of this size or more: E2BIG, as in the kernel */

struct ddebug_table {
	struct ddebug_table *next;
	const void *id;			/* the object's first site (or classmap) */
	struct _ddebug **sites;		/* sorted by address, each registered once */
	size_t nsites;
	struct ddebug_class_map *maps;
	size_t nmaps;
	char objname[64];
};

struct ddebug_modq {
	struct ddebug_modq *next;
	char *module;
	char *queries;
};

static pthread_mutex_t ddebug_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddebug_table *tables, **tables_tail = &tables;
static struct ddebug_modq *modqs;
static atomic_int ddebug_batched = 1;
static atomic_int ddebug_all_or_nothing = 1;
static int ddebug_verbose;

/* Start-up: KK_DYNDBG, parsed once; the load ranges of the start-up objects. */
static struct ddebug_block env_block;
static int env_ok;
/* KK_DYNDBG_INHERIT: the state of the image that exec'd us; after KK_DYNDBG. */
static struct ddebug_block inh_block;
static int inh_ok;
struct range {
	uintptr_t lo, hi;
};
static struct range *startup_ranges;
static size_t nstartup;

/* Stripped from file names: "<dir>/".  Usually fits the small buffer (in
 * .data, as it is set at load); a longer one is allocated. */
static char srcroot_buf[192] KK_LOAD_DATA;
static char *srcroot = srcroot_buf;
static size_t srcroot_len KK_LOAD_DATA;

static pthread_once_t ddebug_once = PTHREAD_ONCE_INIT;
static void ddebug_init_once(void);

/* ---- helpers ---------------------------------------------------------------------- */

static const char *rel_name(const char *f)
{
	if (srcroot_len && !strncmp(f, srcroot, srcroot_len))
		return f + srcroot_len;
	while (f[0] == '.' && f[1] == '/')
		f += 2;
	return f;
}

const char *kk_dd_rel_name(const char *f)
{
	return rel_name(f);
}

static unsigned int site_flags(const struct _ddebug *dp)
{
	return __atomic_load_n(&dp->flags, __ATOMIC_RELAXED);
}

/* The class id @name has in @module of table @t, or -1. */
static int class_id(const struct ddebug_table *t, const char *module, const char *name)
{
	for (size_t i = 0; i < t->nmaps; i++) {
		const struct ddebug_class_map *m = &t->maps[i];

		if (!m->mod_name || strcmp(m->mod_name, module))
			continue;
		for (int c = 0; c < m->length; c++)
			if (m->class_names[c] && !strcmp(m->class_names[c], name))
				return m->base + c;
	}
	return -1;
}

static const char *class_name(const struct ddebug_table *t, const struct _ddebug *dp)
{
	for (size_t i = 0; i < t->nmaps; i++) {
		const struct ddebug_class_map *m = &t->maps[i];

		if (!m->mod_name || strcmp(m->mod_name, dp->modname))
			continue;
		if ((int)dp->class_id >= m->base && (int)dp->class_id < m->base + m->length)
			return m->class_names[dp->class_id - m->base];
	}
	return NULL;
}

/* ---- applying a parsed block ----------------------------------------------------------- */

/* A site whose flags a block changes. */
struct flip {
	struct _ddebug *dp;
	unsigned int old, new;
};
/* Its key switches: it starts or stops printing or recording. */
#define FLIPS(c)	(DDEBUG_ON((c)->old) != DDEBUG_ON((c)->new))
#define TURNS_OFF(c)	(DDEBUG_ON((c)->old) && !DDEBUG_ON((c)->new))

/*
 * The tables a block is applied to: every table, or only @only (a table on
 * the list).  Every stage walks them in the same order, so the k-th site
 * seen is always nf[k] in exec_locked().
 */
static struct ddebug_table *next_target(struct ddebug_table *t, const struct ddebug_table *only)
{
	while (t && only && t != only)
		t = t->next;
	return t;
}

#define for_each_target(t, only) \
	for (struct ddebug_table *t = next_target(tables, (only)); t; t = next_target(t->next, (only)))

static size_t count_sites(const struct ddebug_table *only)
{
	size_t n = 0;

	for_each_target(t, only)
		n += t->nsites;
	return n;
}

/* The flags every stage works on: a copy, so a refused block publishes nothing. */
static void snapshot_flags(const struct ddebug_table *only, unsigned int *nf)
{
	size_t k = 0;

	for_each_target(t, only)
		for (size_t j = 0; j < t->nsites; j++)
			nf[k++] = site_flags(t->sites[j]);
}

/*
 * The class a site must have for @q to match it: the id of q's class name in
 * the site's module, the exact id, or the default class.  The sites of one
 * module are adjacent in a table, so the name is looked up once per run of
 * them (cached in @c, reset per table).
 */
struct class_want {
	const char *mod;
	int id;
};

static int wanted_class(const struct ddebug_query *q, const struct ddebug_table *t,
			const struct _ddebug *dp, struct class_want *c)
{
	if (!q->class_string)
		return q->exact_class_id >= 0 ? q->exact_class_id : _DPRINTK_CLASS_DFLT;
	if (dp->modname != c->mod) {
		c->mod = dp->modname;
		c->id = class_id(t, c->mod, q->class_string);
	}
	return c->id;
}

/* Everything but the class; the relative name is made only when the query has a file term. */
static bool site_matches(const struct ddebug_query *q, const struct _ddebug *dp)
{
	struct ddebug_site s = {
		.module = dp->modname,
		.filename = dp->filename,
		.filename_rel = q->filename ? rel_name(dp->filename) : dp->filename,
		.function = dp->function,
		.format = dp->format,
		.lineno = dp->lineno,
		.qname = q->function || q->qname ? kk_dd_cxx_name_locked(dp) : NULL,
	};

	return ddebug_match(q, &s);
}

/* What one query did to the pending flags. */
struct query_tally {
	unsigned long matched, changed, refused;
	const struct _ddebug *first_refused;
	unsigned int refused_flags;
};

/* Apply @q to the pending flags *nf of the matched site @dp. */
static void query_site(const struct ddebug_query *q, const struct _ddebug *dp, unsigned int *nf,
		       struct query_tally *qt)
{
	/* the NO_DESC mark is the site's, not the query's */
	unsigned int v = (*nf & (q->mask | _DPRINTK_FLAGS_NO_DESC)) | q->flags;

	qt->matched++;
	if ((*nf & _DPRINTK_FLAGS_NO_DESC) && (v & ~*nf & DDEBUG_DECORATIONS)) {
		/* its function gets no descriptor: it cannot decorate */
		if (!qt->refused++)
			qt->first_refused = dp;
		qt->refused_flags |= v & ~*nf & DDEBUG_DECORATIONS;
	}
	if (v != *nf) {
		qt->changed++;
		*nf = v;
	}
}

static void eval_query(const struct ddebug_query *q, const struct ddebug_table *only, unsigned int *nf,
		       struct query_tally *qt)
{
	size_t k = 0;

	for_each_target(t, only) {
		struct class_want cw = { NULL, _DPRINTK_CLASS_DFLT };

		for (size_t j = 0; j < t->nsites; j++, k++) {
			const struct _ddebug *dp = t->sites[j];

			if ((int)dp->class_id == wanted_class(q, t, dp, &cw) && site_matches(q, dp))
				query_site(q, dp, &nf[k], qt);
		}
	}
}

static void report_refused(struct kk_buf *rep, size_t i, const struct ddebug_query *q,
			   const struct query_tally *qt)
{
	const struct _ddebug *dp = qt->first_refused;
	char fl[16];

	if (!rep)
		return;
	ddebug_flags_str(qt->refused_flags, fl);
	kk_buf_printf(rep, "dyndbg: query %zu \"%s\": '%s' asks %lu site%s "
		      "for decorations that a function called without its "
		      "descriptor (_dynamic_func_call_no_desc) cannot print, "
		      "first %s:%u [%s]%s: nothing was changed\n", i + 1,
		      q->text, fl, qt->refused, qt->refused == 1 ? "" : "s",
		      rel_name(dp->filename), (unsigned int)dp->lineno, dp->modname, dp->function);
}

/*
 * Evaluate the queries of @b in order into the pending flags @nf.  A query
 * that asks a site for what it cannot do refuses the whole block, before
 * anything is published.
 */
static int eval_block(const struct ddebug_block *b, const struct ddebug_table *only, unsigned int *nf,
		      struct kk_dyndbg_result *res, struct kk_buf *rep)
{
	for (size_t i = 0; i < b->n; i++) {
		const struct ddebug_query *q = &b->q[i];
		struct query_tally qt = { 0 };

		eval_query(q, only, nf, &qt);
		if (qt.refused) {
			report_refused(rep, i, q, &qt);
			memset(res, 0, sizeof(*res));
			return -EOPNOTSUPP;
		}
		res->matched += qt.matched;
		res->changed += qt.changed;
		if (rep)
			kk_buf_printf(rep, "query %zu \"%s\": matched %lu changed %lu\n", i + 1,
				      q->text, qt.matched, qt.changed);
	}
	res->queries = (unsigned int)b->n;
	return 0;
}

/* The sites whose flags @nf changes, into @ch; returns their number. */
static size_t collect_changes(const struct ddebug_table *only, const unsigned int *nf,
			      struct flip *ch)
{
	size_t k = 0, n = 0;

	for_each_target(t, only) {
		for (size_t j = 0; j < t->nsites; j++, k++) {
			unsigned int old = site_flags(t->sites[j]);

			if (old != nf[k])
				ch[n++] = (struct flip){ t->sites[j], old, nf[k] };
		}
	}
	return n;
}

/*
 * Store the new flags of the changes that turn a site off (@off), or of the
 * others.  A site that turns on gets its flags before its key, so its
 * decorations are there at its first call; a site that turns off keeps its
 * flags until its key is off, so no call made after the patch finds it on
 * with its flags clear.  (A call that took the branch before the patch may
 * still read the cleared flags: __dynamic_pr_debug() then does nothing.)
 * @ch is not const: gcc 12 would take that for a read of malloc'ed memory.
 */
static void store_flags(struct flip *ch, size_t n, bool off)
{
	for (size_t i = 0; i < n; i++)
		if (TURNS_OFF(&ch[i]) == off)
			__atomic_store_n(&ch[i].dp->flags, ch[i].new, __ATOMIC_RELAXED);
}

static int switch_key(const struct flip *c, bool on, bool queued)
{
	struct static_key *key = &c->dp->key.dd_key_false.key;

	if (queued)
		return on ? static_key_enable_queued(key) : static_key_disable_queued(key);
	return on ? static_key_enable(key) : static_key_disable(key);
}

/* All the keys in one queued batch (one stop of the threads); on failure, none. */
static int switch_keys_batched(const struct flip *ch, size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++)
		if (FLIPS(&ch[i]))
			ret = switch_key(&ch[i], DDEBUG_ON(ch[i].new), true);
	if (!ret)
		ret = static_key_apply_queued();
	if (ret)
		kk_static_key_discard_queued();
	return ret;
}

/* One key at a time; on failure, the ones that went through are switched back. */
static int switch_keys_unbatched(const struct flip *ch, size_t n)
{
	size_t done;
	int ret = 0;

	for (done = 0; done < n && !ret; done++)
		if (FLIPS(&ch[done]))
			ret = switch_key(&ch[done], DDEBUG_ON(ch[done].new), false);
	if (ret)
		done--;		/* the one that failed did not switch */
	while (ret && done--)
		if (FLIPS(&ch[done]))
			switch_key(&ch[done], DDEBUG_ON(ch[done].old), false);
	return ret;
}

/*
 * Apply the changes @ch: the flags of the sites that stay on or off or turn
 * on, the keys, then the flags of the sites that turn off.  On failure every
 * site keeps the flags it had.
 */
static int apply_flips(struct flip *ch, size_t n)
{
	int ret;

	store_flags(ch, n, false);
	ret = atomic_load(&ddebug_batched) ? switch_keys_batched(ch, n) :
					 switch_keys_unbatched(ch, n);
	if (ret) {
		/* nothing changed: put the flags back */
		for (size_t i = 0; i < n; i++)
			__atomic_store_n(&ch[i].dp->flags, ch[i].old, __ATOMIC_RELAXED);
		return ret;
	}
	store_flags(ch, n, true);
	return 0;
}

/* Publish @nf (see apply_flips()); *@nch gets the number of changes in @ch. */
static int publish(const struct ddebug_table *only, const unsigned int *nf, struct flip *ch,
		   size_t *nch, struct kk_dyndbg_result *res)
{
	struct kk_jump_label_stats s0, s1;
	unsigned long long t0;
	size_t n, nflip = 0;
	int ret;

	kk_jump_label_get_stats(&s0);
	t0 = kk_now_ns();
	n = collect_changes(only, nf, ch);
	*nch = n;
	ret = apply_flips(ch, n);
	if (ret)
		return ret;
	for (size_t i = 0; i < n; i++)
		nflip += FLIPS(&ch[i]);
	res->apply_ns = kk_now_ns() - t0;
	kk_jump_label_get_stats(&s1);
	res->syncs = s1.syncs - s0.syncs;
	res->sites_flipped = nflip;
	return 0;
}

/*
 * Evaluate every query of @b in order against the sites (of table @only, or
 * all), then switch the sites whose print state changed in ONE queued batch
 * (or one key at a time when unbatched).  All or nothing.  Called with
 * ddebug_lock held.  @rep (may be NULL) gets the per-query lines.
 * The stages follow the kernel's ddebug_change(), but on a copy of the
 * flags (@nf), so that nothing is published until every query has passed.
 * On success *@keep (unless @keep is NULL) gets the changes made, malloc'ed,
 * and *@nkeep their number.
 */
static int exec_changes_locked(const struct ddebug_block *b, struct ddebug_table *only,
			       struct kk_dyndbg_result *res, struct kk_buf *rep, bool *said,
			       struct flip **keep, size_t *nkeep)
{
	size_t nsites = count_sites(only);
	unsigned int *nf;
	struct flip *flips;
	int ret;

	memset(res, 0, sizeof(*res));
	*said = false;
	*nkeep = 0;
	if (keep)
		*keep = NULL;
	if (!b->n || !nsites) {
		res->queries = (unsigned int)b->n;
		for (size_t i = 0; rep && i < b->n; i++)
			kk_buf_printf(rep, "query %zu \"%s\": matched 0 changed 0\n", i + 1,
				      b->q[i].text);
		return 0;
	}
	nf = malloc(nsites * sizeof(*nf));
	flips = malloc(nsites * sizeof(*flips));
	if (!nf || !flips) {
		ret = -ENOMEM;
	} else {
		snapshot_flags(only, nf);
		ret = eval_block(b, only, nf, res, rep);
		*said = ret == -EOPNOTSUPP;
		if (!ret) {
			ret = publish(only, nf, flips, nkeep, res);
			/* Said here, as eval_block() says its refusal: a refused
			 * batch is -ENOTSUP too, the same value on Linux. */
			*said = ret && rep &&
				!kk_buf_printf(rep, "dyndbg: applying failed (%s): nothing "
					       "was changed\n", kk_jump_label_strerror());
		}
	}
	free(nf);
	if (keep && !ret) {
		*keep = flips;
		return 0;
	}
	free(flips);
	if (ret)
		*nkeep = 0;
	return ret;
}

static int exec_locked(const struct ddebug_block *b, struct ddebug_table *only,
		       struct kk_dyndbg_result *res, struct kk_buf *rep, bool *said)
{
	size_t n;

	return exec_changes_locked(b, only, res, rep, said, NULL, &n);
}

/*
 * Parse and apply @text.  All or nothing.  @rep gets the report (per-query
 * lines and a summary) or the error messages.
 */
static int exec_block(const char *text, size_t len, const char *modname, struct ddebug_table *only,
		      int locked, struct kk_dyndbg_result *res, struct kk_buf *rep, int one)
{
	struct ddebug_block b;
	struct ddebug_msgs m = { 0 };
	struct kk_dyndbg_result r;
	unsigned int bad = 0;
	bool said;
	int ret;

	if (!res)
		res = &r;
	memset(res, 0, sizeof(*res));
	ret = ddebug_parse_block(text, len, modname, &b, &m, &bad);
	if (ret) {
		if (rep) {
			if (m.len)
				kk_buf_write(rep, m.buf, m.len);
			if (ret == -EINVAL && one)
				kk_buf_printf(rep, "dyndbg: query is malformed: skipped\n");
			else if (ret == -EINVAL)
				kk_buf_printf(rep, "dyndbg: query %u is malformed: "
					      "nothing was changed\n", bad);
			else
				kk_buf_printf(rep, "dyndbg: out of memory\n");
		}
		ddebug_msgs_free(&m);
		return ret;
	}
	if (!locked)
		pthread_mutex_lock(&ddebug_lock);
	ret = exec_locked(&b, only, res, rep, &said);
	if (!ret && !only)	/* applied live: exec'd images inherit it (inherit.c) */
		kk_dd_inherit_record_locked(&b, modname);
	if (!locked)
		pthread_mutex_unlock(&ddebug_lock);
	if (rep) {
		if (said)
			;	/* exec_locked() said why, in one line */
		else if (ret)
			kk_buf_printf(rep, "dyndbg: applying failed (%s): nothing was changed\n",
				      kk_jump_label_strerror());
		else
			kk_buf_printf(rep, "total: queries %u matched %lu changed %lu flipped %lu "
				      "syncs %llu apply_us %llu%s\n", res->queries, res->matched,
				      res->changed, res->sites_flipped, res->syncs, res->apply_ns / 1000,
				      atomic_load(&ddebug_batched) ? "" : " (unbatched)");
	}
	ddebug_block_free(&b);
	ddebug_msgs_free(&m);
	return ret;
}

/*
 * Parse and apply @text: all or nothing, or (dynamic_debug/all_or_nothing = 0)
 * query by query as the kernel does: the malformed queries are reported and
 * skipped, the good ones applied, and the last error returned.
 */
static int exec_text(const char *text, size_t len, const char *modname, struct ddebug_table *only,
		     int locked, struct kk_dyndbg_result *res, struct kk_buf *rep)
{
	struct kk_dyndbg_result one, sum = { 0 };
	size_t pos = 0;
	int err = 0;

	if (atomic_load(&ddebug_all_or_nothing))
		return exec_block(text, len, modname, only, locked, res, rep, 0);
	while (pos < len && text[pos]) {
		size_t n = ddebug_query_len(text + pos, len - pos);
		int r = exec_block(text + pos, n, modname, only, locked, &one, rep, 1);

		if (r) {
			err = r;
		} else {
			sum.queries += one.queries;
			sum.matched += one.matched;
			sum.changed += one.changed;
			sum.sites_flipped += one.sites_flipped;
			sum.syncs += one.syncs;
			sum.apply_ns += one.apply_ns;
		}
		pos += n + 1;
	}
	if (res)
		*res = sum;
	return err;
}

/*
 * For the trace ring (trace.c): a record names its site by address, and
 * formats its message with the site's strings only while the object that
 * holds the site is still loaded.
 */
void kk_dd_sites_lock(void)
{
	pthread_mutex_lock(&ddebug_lock);
}

void kk_dd_sites_unlock(void)
{
	pthread_mutex_unlock(&ddebug_lock);
}

static int registered_locked(const struct _ddebug *dp);

bool kk_dd_site_known_locked(const struct _ddebug *d)
{
	return registered_locked(d);
}

/*
 * For the session (session.c): a block applied with the changes remembered,
 * and those changes taken back where nobody changed the site since.
 */
int kk_dd_apply_locked(const struct ddebug_block *b, struct ddebug_table *only,
		       struct kk_dyndbg_result *res, struct kk_dd_change **ch, size_t *n,
		       struct kk_buf *why)
{
	struct flip *f = NULL;
	bool said;
	int ret = exec_changes_locked(b, only, res, why, &said, &f, n);

	*ch = NULL;
	if (ret) {
		if (!said)
			kk_buf_printf(why, "dyndbg: applying failed (%s): nothing was changed\n",
				      ret == -ENOMEM ? "out of memory" : kk_jump_label_strerror());
		return ret;
	}
	if (*n && !(*ch = malloc(*n * sizeof(**ch)))) {
		/* cannot remember them: take them back, as if refused */
		for (size_t i = 0; i < *n; i++)
			f[i] = (struct flip){ f[i].dp, f[i].new, f[i].old };
		ret = apply_flips(f, *n) ? -EIO : -ENOMEM;
		kk_buf_printf(why, "dyndbg: out of memory: %s\n", ret == -ENOMEM ?
			      "nothing was changed" : "and the sites could not be put back");
		*n = 0;
	}
	for (size_t i = 0; *ch && i < *n; i++)
		(*ch)[i] = (struct kk_dd_change){ f[i].dp, f[i].old, f[i].new };
	free(f);
	return ret;
}

int kk_dd_restore_locked(const struct kk_dd_change *ch, size_t n, unsigned long *restored,
			 unsigned long *left)
{
	struct flip *f = n ? malloc(n * sizeof(*f)) : NULL;
	size_t k = 0;
	int ret;

	*restored = *left = 0;
	if (n && !f)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		/* a site somebody changed since is left as they left it */
		if (ch[i].dp && site_flags(ch[i].dp) == ch[i].set)
			f[k++] = (struct flip){ ch[i].dp, ch[i].set, ch[i].before };
	}
	ret = k ? apply_flips(f, k) : 0;
	if (!ret) {
		*restored = k;
		*left = n - k;
	}
	free(f);
	return ret;
}

KK_EXPORT int kk_dyndbg_set_all_or_nothing(int on)
{
	return atomic_exchange(&ddebug_all_or_nothing, on ? 1 : 0);
}

KK_EXPORT int kk_dyndbg_exec(const char *text, size_t len, const char *modname,
		   struct kk_dyndbg_result *res, char **report)
{
	struct kk_buf rep = { 0 };
	int ret;

	pthread_once(&ddebug_once, ddebug_init_once);
	if (!text)
		return -EINVAL;
	ret = exec_text(text, len, modname, NULL, 0, res, report ? &rep : NULL);
	if (report) {
		*report = rep.data ? rep.data : strdup("");
		rep.data = NULL;
	}
	kk_buf_free(&rep);
	return ret;
}

KK_EXPORT int dynamic_debug_exec_queries(const char *query, const char *modname)
{
	struct kk_dyndbg_result r;
	int ret;

	if (!query)
		return -EINVAL;
	ret = kk_dyndbg_exec(query, strlen(query), modname, &r, NULL);
	if (ret)
		return ret;
	return r.matched > INT_MAX ? INT_MAX : (int)r.matched;
}

KK_EXPORT int kk_dyndbg_set_batched(int on)
{
	return atomic_exchange(&ddebug_batched, on ? 1 : 0);
}

KK_EXPORT size_t kk_dyndbg_count_sites(const char *module)
{
	size_t n = 0;

	pthread_mutex_lock(&ddebug_lock);
	for (struct ddebug_table *t = tables; t; t = t->next)
		for (size_t j = 0; j < t->nsites; j++)
			if (!module || ddebug_glob(module, t->sites[j]->modname))
				n++;
	pthread_mutex_unlock(&ddebug_lock);
	return n;
}

/* ---- per-module start-up queries --------------------------------------------------- */

static int set_modq_locked(const char *module, const char *queries)
{
	struct ddebug_modq **pp, *q;

	for (pp = &modqs; *pp && strcmp((*pp)->module, module); pp = &(*pp)->next)
		;
	q = *pp;
	if (!queries) {
		if (q) {
			*pp = q->next;
			free(q->module);
			free(q->queries);
			free(q);
		}
		return 0;
	}
	if (!q) {
		q = calloc(1, sizeof(*q));
		if (!q || !(q->module = strdup(module))) {
			free(q);
			return -ENOMEM;
		}
		q->next = modqs;
		modqs = q;
	}
	free(q->queries);
	q->queries = strdup(*queries ? queries : "+p");
	return q->queries ? 0 : -ENOMEM;
}

static int check_queries(const char *queries, const char *module, struct ddebug_msgs *m)
{
	struct ddebug_block b;
	int ret;

	if (!*queries)
		return 0;
	ret = ddebug_parse_block(queries, strlen(queries), module, &b, m, NULL);
	if (!ret)
		ddebug_block_free(&b);
	return ret;
}

KK_EXPORT int kk_dyndbg_set_module_queries(const char *module, const char *queries)
{
	struct ddebug_msgs m = { 0 };
	int ret;

	pthread_once(&ddebug_once, ddebug_init_once);
	if (!module || !*module)
		return -EINVAL;
	if (queries && (ret = check_queries(queries, module, &m))) {
		ddebug_msgs_free(&m);
		return ret;
	}
	pthread_mutex_lock(&ddebug_lock);
	ret = set_modq_locked(module, queries);
	pthread_mutex_unlock(&ddebug_lock);
	return ret;
}

/* ---- objects --------------------------------------------------------------------------- */

static int in_startup_object(const void *p)
{
	for (size_t i = 0; i < nstartup; i++)
		if ((uintptr_t)p >= startup_ranges[i].lo && (uintptr_t)p < startup_ranges[i].hi)
			return 1;
	return 0;
}

/* Apply @b (from the variable @var) to table @t; say why when that fails. */
static void startup_block_locked(const struct ddebug_block *b, struct ddebug_table *t, const char *var)
{
	struct kk_dyndbg_result r;
	struct kk_buf rep = { 0 };
	bool said;
	int ret = exec_locked(b, t, &r, &rep, &said);
	const char *why = NULL;

	if (said && rep.data) {	/* the refusal, the last line of the report */
		why = rep.data + rep.len;
		while (why > rep.data && why[-1] == '\n')
			why--;
		while (why > rep.data && why[-1] != '\n')
			why--;
	}
	if (ret && why)
		fprintf(stderr, "kernelkit: %s: applying to %s: %s", var, t->objname, why);
	else if (ret)
		fprintf(stderr, "kernelkit: %s: applying to %s failed: %s\n", var, t->objname,
			kk_jump_label_strerror());
	kk_buf_free(&rep);
}

/* Apply the start-up queries that concern table @t. Called with ddebug_lock held. */
static void startup_queries_locked(struct ddebug_table *t, int startup)
{
	struct kk_dyndbg_result r;

	if (startup && env_ok && env_block.n)
		startup_block_locked(&env_block, t, "KK_DYNDBG");
	if (startup && inh_ok && inh_block.n)
		startup_block_locked(&inh_block, t, "KK_DYNDBG_INHERIT");
	for (struct ddebug_modq *q = modqs; q; q = q->next) {
		int has = 0;

		for (size_t j = 0; j < t->nsites && !has; j++)
			has = !strcmp(t->sites[j]->modname, q->module);
		if (!has)
			continue;
		struct kk_buf rep = { 0 };

		if (exec_text(q->queries, strlen(q->queries), q->module, t, 1, &r, &rep))
			fprintf(stderr, "kernelkit: start-up queries of module %s: %s", q->module,
				rep.data ? rep.data : "failed\n");
		kk_buf_free(&rep);
	}
}

static void report_counts_locked(const struct ddebug_table *t)
{
	for (size_t j = 0; j < t->nsites; j++) {
		const char *mod = t->sites[j]->modname;
		unsigned int n = 0;
		size_t i;

		for (i = 0; i < j; i++)	/* first site of this module? */
			if (!strcmp(t->sites[i]->modname, mod))
				break;
		if (i < j)
			continue;
		for (i = j; i < t->nsites; i++)
			n += !strcmp(t->sites[i]->modname, mod);
		fprintf(stderr, "dyndbg: %3u debug prints in module %s\n", n, mod);
	}
}

static int ptr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)*(struct _ddebug *const *)a;
	uintptr_t y = (uintptr_t)*(struct _ddebug *const *)b;

	return x < y ? -1 : x > y;
}

/* Is @dp a site of a registered table?  Every table's sites are sorted by address. */
static int registered_locked(const struct _ddebug *dp)
{
	for (const struct ddebug_table *t = tables; t; t = t->next)
		if (t->nsites && bsearch(&dp, t->sites, t->nsites, sizeof(*t->sites), ptr_cmp))
			return 1;
	return 0;
}

/*
 * The sites of a C++ table: @start..@stop sorted, without repeats (one site
 * inlined twice) and without the descriptors another object registered (an
 * inline function or template that several objects hold: the dynamic linker
 * resolved every object's entry to the one copy the process uses).
 */
static size_t unique_sites_locked(struct _ddebug **v, size_t n)
{
	size_t k = 0;

	qsort(v, n, sizeof(*v), ptr_cmp);
	for (size_t i = 0; i < n; i++)
		if ((!k || v[k - 1] != v[i]) && v[i] && !registered_locked(v[i]))
			v[k++] = v[i];
	return k;
}

/*
 * The table registered last, read without the lock: the units of an object
 * call us one after the other, and all but the first find their table here
 * (as jump_label's last_added).  Set under ddebug_lock once the table is
 * registered, cleared under it when the table is dropped.
 */
static _Atomic(const void *) last_added;

/* Register @v[0..n) (malloc'ed; sorted by address) as the table @id of an object. */
static int add_table(const void *id, struct _ddebug **v, size_t n, int dedup,
		     struct ddebug_class_map *cstart, struct ddebug_class_map *cstop)
{
	char objname[64];
	struct ddebug_table *t;
	uintptr_t base;
	int startup;

	pthread_once(&ddebug_once, ddebug_init_once);
	kk_addr_object(id, objname, sizeof(objname), &base);	/* before ddebug_lock */
	startup = in_startup_object(id);
	pthread_mutex_lock(&ddebug_lock);
	for (t = tables; t; t = t->next) {
		if (t->id == id) {		/* every unit of an object calls us */
			pthread_mutex_unlock(&ddebug_lock);
			free(v);
			return 0;
		}
	}
	t = calloc(1, sizeof(*t));
	if (!t || (n && !v)) {
		pthread_mutex_unlock(&ddebug_lock);
		free(t);
		free(v);
		fprintf(stderr, "kernelkit: out of memory registering dynamic-debug sites\n");
		return -ENOMEM;
	}
	t->id = id;
	t->sites = v;
	t->nsites = dedup ? unique_sites_locked(v, n) : n;
	t->maps = cstart;
	t->nmaps = cstart && cstop ? (size_t)(cstop - cstart) : 0;
	memcpy(t->objname, objname, sizeof(objname));
	for (size_t j = 0; j < t->nsites; j++) {
		struct _ddebug *dp = t->sites[j];

		if (!dp->modname)
			dp->modname = t->objname;
		if (!dp->format)	/* a hex dump with a NULL prefix */
			dp->format = "";
	}
	for (size_t j = 0; j < t->nmaps; j++)
		if (!t->maps[j].mod_name)
			t->maps[j].mod_name = t->objname;
	*tables_tail = t;
	tables_tail = &t->next;
	if (ddebug_verbose)
		report_counts_locked(t);
	startup_queries_locked(t, startup);
	kk_dd_session_add_locked(t, t->nsites);	/* an open session's queries reach it too */
	atomic_store_explicit(&last_added, id, memory_order_release);
	pthread_mutex_unlock(&ddebug_lock);
	if (t->nsites)
		kk_control_autostart();	/* after ddebug_lock: fork takes the endpoint's locks first */
	return 0;
}

/*
 * Whether the table @id is registered.  Every unit of an object calls us
 * (nginx: ~100 units, 1313 sites): only the first may copy the table and
 * look up the object's name, or registration costs units x sites.
 */
static bool table_known(const void *id)
{
	bool known = false;

	if (atomic_load_explicit(&last_added, memory_order_acquire) == id)
		return true;
	pthread_mutex_lock(&ddebug_lock);
	for (const struct ddebug_table *t = tables; t && !known; t = t->next)
		known = t->id == id;
	pthread_mutex_unlock(&ddebug_lock);
	return known;
}

/* A C object: its sites are the array kk_dyndbg. */
KK_EXPORT int kk_dyndbg_add_object(struct _ddebug *start, struct _ddebug *stop,
			 struct ddebug_class_map *cstart, struct ddebug_class_map *cstop)
{
	const void *id = start != stop ? (const void *)start : (const void *)cstart;
	size_t n = start && stop ? (size_t)(stop - start) : 0;
	struct _ddebug **v;

	if (!id || (stop < start) || (cstop < cstart))
		return -EINVAL;
	if (table_known(id))
		return 0;
	v = n ? malloc(n * sizeof(*v)) : NULL;
	for (size_t j = 0; v && j < n; j++)
		v[j] = &start[j];
	return add_table(id, v, n, 0, cstart, cstop);
}

/* A C++ object: kk_dyndbg_ptrs lists its sites (see dynamic_debug.h). */
KK_EXPORT int kk_dyndbg_add_ptrs(struct _ddebug *const *start, struct _ddebug *const *stop,
		       struct ddebug_class_map *cstart, struct ddebug_class_map *cstop)
{
	size_t n = start && stop && stop > start ? (size_t)(stop - start) : 0;
	struct _ddebug **v;

	if (!n || (cstop < cstart))
		return -EINVAL;
	if (table_known(start))
		return 0;
	v = malloc(n * sizeof(*v));
	if (v)
		memcpy(v, start, n * sizeof(*v));
	return add_table(start, v, n, 1, cstart, cstop);
}

__attribute__((__noinline__)) static void del_table(const void *id, const void *id2)
{
	struct ddebug_table **pp, *t = NULL;

	pthread_mutex_lock(&ddebug_lock);
	for (pp = &tables; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id || (id2 && (*pp)->id == id2)) {
			t = *pp;
			*pp = t->next;
			break;
		}
	}
	if (t) {
		if (atomic_load_explicit(&last_added, memory_order_relaxed) == t->id)
			atomic_store_explicit(&last_added, NULL, memory_order_relaxed);
		tables_tail = &tables;
		while (*tables_tail)
			tables_tail = &(*tables_tail)->next;
		/* a descriptor of another object outlives this name */
		for (size_t j = 0; j < t->nsites; j++)
			if (t->sites[j]->modname == t->objname)
				t->sites[j]->modname = NULL;
		kk_dd_session_forget_locked(t->sites, t->nsites);
		kk_dd_cxx_names_forget_locked(t->sites, t->nsites);
	}
	pthread_mutex_unlock(&ddebug_lock);
	if (t) {
		kk_dd_trace_forget_formats();	/* its formats go with it */
		free(t->sites);
	}
	free(t);
}

/*
 * From the object's destructor.  An exiting process (kk_exiting()) keeps its
 * tables: the sites stay mapped until _exit, listed, switchable and printing
 * with their module's name in the threads that still run them.
 */
KK_EXPORT void kk_dyndbg_del_object(struct _ddebug *start, struct ddebug_class_map *cstart)
{
	if (!kk_exiting(start ? (const void *)start : (const void *)cstart))
		del_table(start, cstart);
}

KK_EXPORT void kk_dyndbg_del_ptrs(struct _ddebug *const *start)
{
	if (!kk_exiting(start))
		del_table(start, NULL);
}

/* ---- the control files ------------------------------------------------------------------- */

/*
 * The listing shows each file's sites by ascending line, as the kernel does
 * (the compiler emits a unit's sites in reverse).  Files keep the order of
 * their first site in the section.  Sites are never moved (their keys are
 * referenced by address), so this is a sorted index, malloc'ed.
 */
struct site_ord {
	size_t file_rank, line, idx;
};

static int site_ord_cmp(const void *a, const void *b)
{
	const struct site_ord *x = a, *y = b;

	if (x->file_rank != y->file_rank)
		return x->file_rank < y->file_rank ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static size_t *listing_order(const struct ddebug_table *t)
{
	struct site_ord *o;
	size_t *order;

	if (!t->nsites)
		return NULL;
	o = malloc(t->nsites * sizeof(*o));
	order = malloc(t->nsites * sizeof(*order));
	if (!o || !order) {
		free(o);
		free(order);
		return NULL;
	}
	for (size_t j = 0; j < t->nsites; j++) {
		const char *f = t->sites[j]->filename;
		size_t r = j;

		/* the first earlier site of the same file (units are contiguous) */
		for (size_t i = 0; i < j; i++) {
			const char *g = t->sites[i]->filename;

			if (g == f || !strcmp(g, f)) {
				r = o[i].file_rank;
				break;
			}
		}
		o[j] = (struct site_ord){ r, t->sites[j]->lineno, j };
	}
	qsort(o, t->nsites, sizeof(*o), site_ord_cmp);
	for (size_t j = 0; j < t->nsites; j++)
		order[j] = o[j].idx;
	free(o);
	return order;
}

/* A C++ site's instantiation: ` func:"Ring<int>::push"`, escaped as a format. */
static void show_qname(struct kk_buf *out, const struct _ddebug *dp)
{
	const char *qn = kk_dd_cxx_name_locked(dp);
	size_t need;
	char *esc;

	if (!qn)
		return;
	need = ddebug_escape(qn, NULL, 0) + 1;
	esc = malloc(need);
	if (!esc) {
		out->error = -ENOMEM;
		return;
	}
	ddebug_escape(qn, esc, need);
	kk_buf_printf(out, " func:\"%s\"", esc);
	free(esc);
}

static int control_show(struct kk_buf *out, void *priv)
{
	char flags[16], *esc = NULL;
	size_t esc_cap = 0;

	(void)priv;
	kk_buf_printf(out, "# filename:lineno [module]function flags format\n");
	pthread_mutex_lock(&ddebug_lock);
	for (struct ddebug_table *t = tables; t; t = t->next) {
		size_t *order = listing_order(t);

		if (!order && t->nsites) {
			pthread_mutex_unlock(&ddebug_lock);
			free(esc);
			return -ENOMEM;
		}
		for (size_t j = 0; j < t->nsites; j++) {
			const struct _ddebug *dp = t->sites[order[j]];
			size_t need = ddebug_escape(dp->format, esc, esc_cap) + 1;

			if (need > esc_cap) {
				char *n = realloc(esc, need);

				if (!n) {
					pthread_mutex_unlock(&ddebug_lock);
					free(order);
					free(esc);
					return -ENOMEM;
				}
				esc = n;
				esc_cap = need;
				ddebug_escape(dp->format, esc, esc_cap);
			}
			ddebug_flags_str(site_flags(dp), flags);
			kk_buf_printf(out, "%s:%u [%s]%s =%s \"%s\"", rel_name(dp->filename),
				      (unsigned int)dp->lineno, dp->modname, dp->function, flags, esc);
			if (dp->class_id != _DPRINTK_CLASS_DFLT) {
				const char *cn = class_name(t, dp);

				if (cn)
					kk_buf_printf(out, " class:%s", cn);
				else
					kk_buf_printf(out, " class unknown, _id:%u",
						      (unsigned int)dp->class_id);
			}
			show_qname(out, dp);
			kk_buf_write(out, "\n", 1);
		}
		free(order);
	}
	pthread_mutex_unlock(&ddebug_lock);
	free(esc);
	return out->error;
}

static int control_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	return exec_text(buf, len, NULL, NULL, 0, NULL, out);
}

static const struct kk_control_file_ops control_fops = {
	.show = control_show,
	.write = control_write,
	.max_write = DDEBUG_MAX_WRITE,
};

static int batched_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%d\n", atomic_load(&ddebug_batched)) < 0 ? -ENOMEM : 0;
}

static int batched_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 1 && (buf[0] == '0' || buf[0] == '1')) {
		kk_dyndbg_set_batched(buf[0] == '1');
		return 0;
	}
	kk_buf_printf(out, "expected 0 or 1\n");
	return -EINVAL;
}

static const struct kk_control_file_ops batched_fops = {
	.show = batched_show,
	.write = batched_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(control_file, "dynamic_debug/control", &control_fops);
KK_CONTROL_LIB_FILE(batched_file, "dynamic_debug/batched", &batched_fops);

static int aon_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%d\n", atomic_load(&ddebug_all_or_nothing)) < 0 ? -ENOMEM : 0;
}

static int aon_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 1 && (buf[0] == '0' || buf[0] == '1')) {
		kk_dyndbg_set_all_or_nothing(buf[0] == '1');
		return 0;
	}
	kk_buf_printf(out, "expected 0 or 1\n");
	return -EINVAL;
}

static const struct kk_control_file_ops aon_fops = {
	.show = aon_show,
	.write = aon_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(aon_file, "dynamic_debug/all_or_nothing", &aon_fops);

/* ---- classmap parameters ----------------------------------------------------------------- */

static unsigned long low_bits(int n)
{
	if (n <= 0)
		return 0;
	if (n >= (int)(8 * sizeof(unsigned long)))
		return ~0ul;
	return (1ul << n) - 1;
}

static int level_type(enum class_map_type t)
{
	return t == DD_CLASS_TYPE_LEVEL_NUM || t == DD_CLASS_TYPE_LEVEL_NAMES;
}

KK_EXPORT int ddebug_classparam_set(const struct ddebug_class_param *dcp, unsigned long val)
{
	const struct ddebug_class_map *map;
	unsigned long oldb, newb;
	struct kk_buf q = { 0 };
	struct kk_dyndbg_result r;
	int ret;

	if (!dcp || !(map = dcp->map) || map->length <= 0 || !dcp->flags[0])
		return -EINVAL;
	if (memchr(dcp->flags, '\0', sizeof(dcp->flags)) == NULL)
		return -EINVAL;
	switch (map->map_type) {
	case DD_CLASS_TYPE_DISJOINT_BITS:
	case DD_CLASS_TYPE_DISJOINT_NAMES:
		if (!dcp->bits)
			return -EINVAL;
		val &= low_bits(map->length);
		oldb = *dcp->bits;
		newb = val;
		break;
	case DD_CLASS_TYPE_LEVEL_NUM:
	case DD_CLASS_TYPE_LEVEL_NAMES:
		if (!dcp->lvl)
			return -EINVAL;
		if (val > (unsigned long)map->length)
			val = (unsigned long)map->length;
		oldb = low_bits((int)*dcp->lvl);
		newb = low_bits((int)val);
		break;
	default:
		return -EINVAL;
	}
	/* every changed bit is one query; all of them are one write */
	for (int bi = 0; bi < map->length; bi++) {
		if (((oldb ^ newb) >> bi & 1) == 0)
			continue;
		kk_buf_printf(&q, "class %s %c%s\n", map->class_names[bi],
			      (newb >> bi & 1) ? '+' : '-', dcp->flags);
	}
	if (q.error) {
		kk_buf_free(&q);
		return -ENOMEM;
	}
	r.changed = 0;
	ret = q.len ? kk_dyndbg_exec(q.data, q.len, NULL, &r, NULL) : 0;
	kk_buf_free(&q);
	if (ret)
		return ret;
	if (level_type(map->map_type))
		*dcp->lvl = (unsigned int)val;
	else
		*dcp->bits = val;
	return r.changed > INT_MAX ? INT_MAX : (int)r.changed;
}

/*
 * "[+-]NAME,[+-]NAME..." for the _NAMES types, applied left to right to the
 * current value as the kernel does: DISJOINT_NAMES turns one class on or off;
 * LEVEL_NAMES sets the level to the class ("L3": L0..L3) or below it ("-L3":
 * L0..L2).  The result is one value, so one batch.  An unknown name makes
 * the whole write -EINVAL (the kernel skips it).
 */
static int parse_class_names(const char *instr, const struct ddebug_class_param *dcp,
			     unsigned long *val)
{
	const struct ddebug_class_map *map = dcp->map;
	unsigned long v = level_type(map->map_type) ? *dcp->lvl : *dcp->bits;
	const char *p = instr;
	int any = 0;

	while (*p) {
		const char *e;
		int on = 1, id = -1;
		size_t n;

		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == ',')
			p++;
		if (!*p)
			break;
		if (*p == '-' || *p == '+')
			on = *p++ == '+';
		e = p + strcspn(p, ",\n");
		n = (size_t)(e - p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		for (int c = 0; c < map->length; c++) {
			const char *cn = map->class_names[c];

			if (cn && strlen(cn) == n && !memcmp(cn, p, n)) {
				id = c;
				break;
			}
		}
		if (id < 0)
			return -EINVAL;
		if (map->map_type == DD_CLASS_TYPE_DISJOINT_NAMES)
			v = on ? v | (1ul << id) : v & ~(1ul << id);
		else
			v = (unsigned long)id + (on ? 1 : 0);
		any = 1;
		p = e;
	}
	*val = v;
	return any ? 0 : -EINVAL;
}

KK_EXPORT int kk_param_set_dyndbg_classes(const char *instr, const struct ddebug_class_param *dcp)
{
	unsigned long v;
	char *end;
	int ret;

	if (!instr || !dcp || !dcp->map)
		return -EINVAL;
	switch (dcp->map->map_type) {
	case DD_CLASS_TYPE_DISJOINT_NAMES:
	case DD_CLASS_TYPE_LEVEL_NAMES:
		if (!dcp->bits)
			return -EINVAL;
		ret = parse_class_names(instr, dcp, &v);
		if (ret)
			return ret;
		break;
	default:
		errno = 0;
		v = strtoul(instr, &end, 0);
		while (*end == '\n' || *end == ' ')
			end++;
		if (errno || end == instr || *end || *instr == '-')
			return -EINVAL;
	}
	ret = ddebug_classparam_set(dcp, v);
	return ret < 0 ? ret : 0;
}

KK_EXPORT int kk_param_get_dyndbg_classes(char *buf, size_t len, const struct ddebug_class_param *dcp)
{
	if (!dcp || !dcp->map)
		return -EINVAL;
	if (level_type(dcp->map->map_type))
		return snprintf(buf, len, "%u", dcp->lvl ? *dcp->lvl : 0);
	return snprintf(buf, len, "0x%lx", dcp->bits ? *dcp->bits : 0);
}

KK_EXPORT int param_set_dyndbg_classes(const char *instr, const struct kernel_param *kp)
{
	if (!kp)
		return -EINVAL;
	return kk_param_set_dyndbg_classes(instr, kp->arg);
}

KK_EXPORT int param_get_dyndbg_classes(char *buffer, const struct kernel_param *kp)
{
	int n;

	if (!kp)
		return -EINVAL;
	n = kk_param_get_dyndbg_classes(buffer, KK_PARAM_BUFSIZE - 1, kp->arg);
	if (n < 0)
		return n;
	buffer[n++] = '\n';
	buffer[n] = '\0';
	return n;
}

KK_EXPORT const struct kernel_param_ops param_ops_dyndbg_classes = {
	.set = param_set_dyndbg_classes,
	.get = param_get_dyndbg_classes,
};

/* A class parameter served with the kk_ (dcp) form, or any kernel_param. */
struct ddebug_param {
	const struct ddebug_class_param *dcp;
	const struct kernel_param *kp;
	char path[KK_CONTROL_NAME_MAX];
};

static int param_show(struct kk_buf *out, void *priv)
{
	const struct ddebug_param *p = priv;
	char *v;
	int n;

	if (!p->kp) {
		char b[64];

		if (kk_param_get_dyndbg_classes(b, sizeof(b), p->dcp) < 0)
			return -EINVAL;
		return kk_buf_printf(out, "%s\n", b) < 0 ? -ENOMEM : 0;
	}
	if (!p->kp->ops->get)
		return -EPERM;
	v = calloc(1, KK_PARAM_BUFSIZE);
	if (!v)
		return -ENOMEM;
	n = p->kp->ops->get(v, p->kp);
	if (n >= 0)
		kk_buf_write(out, v, strnlen(v, KK_PARAM_BUFSIZE));
	free(v);
	return n < 0 ? (n == -1 ? -EINVAL : n) : out->error;
}

/*
 * A _NAMES classmap parameter reads as a number (0x6 for DISJOINT_NAMES, a
 * level for LEVEL_NAMES), as in the kernel, whose set() then takes only
 * names.  The control file also takes the number back, so that writing what
 * was read changes nothing; set() itself stays the kernel's.  True with the
 * value in *num when @v is such a number for such a parameter.
 */
static bool names_param_number(const struct ddebug_class_param *dcp, const char *v,
			       unsigned long *num)
{
	char *end;

	if (!dcp || !dcp->map || (dcp->map->map_type != DD_CLASS_TYPE_DISJOINT_NAMES &&
				  dcp->map->map_type != DD_CLASS_TYPE_LEVEL_NAMES))
		return false;
	while (*v == ' ' || *v == '\t')
		v++;
	if (*v < '0' || *v > '9')
		return false;
	errno = 0;
	*num = strtoul(v, &end, 0);
	while (*end == '\n' || *end == ' ' || *end == '\t')
		end++;
	if (errno || *end)
		return false;
	/* Only a value the parameter can print: no bit or level beyond the map. */
	if (dcp->map->map_type == DD_CLASS_TYPE_DISJOINT_NAMES)
		return (*num & ~low_bits(dcp->map->length)) == 0;
	return *num <= (unsigned long)dcp->map->length;
}

static int param_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	const struct ddebug_param *p = priv;
	const struct ddebug_class_param *dcp = p->kp ? NULL : p->dcp;
	char v[KK_PARAM_BUFSIZE];
	unsigned long num;
	int ret;

	if (len >= sizeof(v)) {
		kk_buf_printf(out, "value too long\n");
		return -EINVAL;
	}
	if (p->kp && (!p->kp->ops->set || !(p->kp->perm & 0222))) {
		kk_buf_printf(out, "%s: read-only parameter\n", p->path);
		return -EPERM;
	}
	memcpy(v, buf, len);
	v[len] = '\0';
	if (p->kp && p->kp->ops == &param_ops_dyndbg_classes)
		dcp = p->kp->arg;
	if (names_param_number(dcp, v, &num))
		ret = ddebug_classparam_set(dcp, num) < 0 ? -EINVAL : 0;
	else
		ret = p->kp ? p->kp->ops->set(v, p->kp) : kk_param_set_dyndbg_classes(v, p->dcp);
	if (ret) {
		if (dcp && (dcp->map->map_type == DD_CLASS_TYPE_DISJOINT_NAMES ||
			    dcp->map->map_type == DD_CLASS_TYPE_LEVEL_NAMES))
			kk_buf_printf(out, "bad value (expected [+-]CLASS_NAME,...): %s\n", v);
		else if (dcp)
			kk_buf_printf(out, "bad value (expected a number): %s\n", v);
		else
			kk_buf_printf(out, "bad value: %s\n", v);
	}
	return ret;
}

static const struct kk_control_file_ops param_fops = {
	.show = param_show,
	.write = param_write,
	.max_write = KK_PARAM_BUFSIZE,
};

static pthread_mutex_t params_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ddebug_param_node {
	struct ddebug_param_node *next;
	struct ddebug_param p;
} *params;

static int add_param(const char *path, const struct ddebug_class_param *dcp,
		     const struct kernel_param *kp)
{
	struct ddebug_param_node *n = calloc(1, sizeof(*n));
	int ret;

	if (!n)
		return -ENOMEM;
	n->p.dcp = dcp;
	n->p.kp = kp;
	snprintf(n->p.path, sizeof(n->p.path), "%s", path);
	ret = kk_control_create_file(n->p.path, &param_fops, &n->p);
	if (ret) {
		free(n);
		return ret;
	}
	pthread_mutex_lock(&params_lock);
	n->next = params;
	params = n;
	pthread_mutex_unlock(&params_lock);
	return 0;
}

static int del_param(const char *path)
{
	struct ddebug_param_node **pp, *n = NULL;
	int ret = kk_control_remove_file(path);

	if (ret)
		return ret;
	pthread_mutex_lock(&params_lock);
	for (pp = &params; *pp; pp = &(*pp)->next) {
		if (!strcmp((*pp)->p.path, path)) {
			n = *pp;
			*pp = n->next;
			break;
		}
	}
	pthread_mutex_unlock(&params_lock);
	free(n);
	return 0;
}

static int param_path(char *path, const char *mod, const char *name)
{
	int n;

	if (!name)
		return -EINVAL;
	n = mod ? snprintf(path, KK_CONTROL_NAME_MAX, "dynamic_debug/params/%s.%s", mod, name) :
		  snprintf(path, KK_CONTROL_NAME_MAX, "dynamic_debug/params/%s", name);
	return n < 0 || n >= KK_CONTROL_NAME_MAX ? -EINVAL : 0;
}

KK_EXPORT int kk_dyndbg_register_param(const char *name, const struct ddebug_class_param *dcp)
{
	char path[KK_CONTROL_NAME_MAX];

	if (!dcp || !dcp->map || param_path(path, NULL, name))
		return -EINVAL;
	return add_param(path, dcp, NULL);
}

KK_EXPORT int kk_dyndbg_unregister_param(const char *name)
{
	char path[KK_CONTROL_NAME_MAX];

	if (param_path(path, NULL, name))
		return -EINVAL;
	return del_param(path);
}

KK_EXPORT int kk_module_param_register(const char *modname, const struct kernel_param *kp)
{
	char path[KK_CONTROL_NAME_MAX];

	if (!modname || !kp || !kp->ops || (!kp->ops->get && !kp->ops->set) ||
	    param_path(path, modname, kp->name))
		return -EINVAL;
	return add_param(path, NULL, kp);
}

KK_EXPORT int kk_module_param_unregister(const char *modname, const struct kernel_param *kp)
{
	char path[KK_CONTROL_NAME_MAX];

	if (!modname || !kp || param_path(path, modname, kp->name))
		return -EINVAL;
	return del_param(path);
}

KK_EXPORT int ddebug_dyndbg_module_param_cb(char *param, char *val, const char *modname)
{
	const char *p;
	int ret;

	if (!param || !modname)
		return -EINVAL;
	p = strrchr(param, '.');
	p = p ? p + 1 : param;
	if (strcmp(p, "dyndbg"))
		return -ENOENT;
	ret = dynamic_debug_exec_queries(val && *val ? val : "+p", modname);
	return ret < 0 ? ret : 0;
}

/* ---- init ---------------------------------------------------------------------------------- */

static int collect_ranges(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct range *nr;

		if (ph->p_type != PT_LOAD)
			continue;
		nr = realloc(startup_ranges, (nstartup + 1) * sizeof(*nr));
		if (!nr)
			return 1;
		startup_ranges = nr;
		nr[nstartup].lo = info->dlpi_addr + ph->p_vaddr;
		nr[nstartup].hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		nstartup++;
	}
	return 0;
}

extern char **environ;

static void read_module_env(void)
{
	/* secure_getenv() semantics, as kk_getenv(): none in a setuid program */
	if (getauxval(AT_SECURE))
		return;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '='), *name, *val;
		char mod[128];
		size_t n;

		if (!eq)
			continue;
		val = eq + 1;
		if (!strncmp(*e, "KK_DYNDBG_MOD_", 14)) {
			name = *e + 14;
			n = (size_t)(eq - name);
		} else if (eq - *e > 7 && !strncmp(eq - 7, ".dyndbg", 7)) {
			name = *e;
			n = (size_t)(eq - 7 - name);
		} else {
			continue;
		}
		if (!n || n >= sizeof(mod))
			continue;
		memcpy(mod, name, n);
		mod[n] = '\0';
		struct ddebug_msgs m = { 0 };

		if (check_queries(val, mod, &m))
			fprintf(stderr, "kernelkit: %.*s: ignored:\n%s", (int)(eq - *e), *e,
				m.buf ? m.buf : "");
		else
			set_modq_locked(mod, val);
		ddebug_msgs_free(&m);
	}
}

/* Strip @dir (@n bytes) and a '/' after it from file names. */
KK_LOAD_TEXT static void set_srcroot(const char *dir, size_t n)
{
	char *p = srcroot_buf;
	size_t len = n + (dir[n - 1] != '/');

	if (len + 1 > sizeof(srcroot_buf) && !(p = malloc(len + 1))) {
		srcroot_len = 0;
		return;
	}
	if (p != dir)
		memmove(p, dir, n);
	p[len - 1] = '/';
	/* (Two stores: merged, GCC loads "/" from .rodata, a page fault at load.) */
	__asm__ volatile("" ::: "memory");
	p[len] = '\0';
	if (srcroot != srcroot_buf && srcroot != p)
		free(srcroot);
	srcroot = p;
	srcroot_len = len;
}

/*
 * The working directory the program started in: the system call glibc's
 * getcwd() makes, straight into the small buffer when it fits.  Like
 * getcwd(), a directory outside our root ("(unreachable)/...") is none.
 */
KK_LOAD_TEXT static void get_srcroot(void)
{
	char big[PATH_MAX];
	char *buf = srcroot_buf;
	long n = kk_raw_syscall4(SYS_getcwd, (long)buf, sizeof(srcroot_buf) - 1, 0, 0);

	if (n == -ERANGE) {
		buf = big;
		n = kk_raw_syscall4(SYS_getcwd, (long)buf, sizeof(big) - 1, 0, 0);
	}
	/* n counts the NUL; "/" strips nothing */
	if (n > 2 && buf[0] == '/')
		set_srcroot(buf, (size_t)n - 1);
}

/* false: ddebug_init() found no dynamic-debug setting in the environment at
 * load, and took the working directory itself: nothing is left to do. */
static bool ddebug_env_at_load = true;
static bool ddebug_init_ran KK_LOAD_DATA;

/* The settings, read at load (by ddebug_init(), or by an object that registers
 * before it in a static link). */
static void ddebug_init_once(void)
{
	const char *e;

	ddebug_init_ran = true;
	if (!ddebug_env_at_load)
		return;
	get_srcroot();
	if ((e = kk_getenv("KK_DYNDBG_SRCROOT")) && *e)
		set_srcroot(e, strlen(e));
	ddebug_verbose = kk_env_bool("KK_DYNDBG_VERBOSE", false);
	kk_dd_sink_env();
	e = kk_getenv("KK_DYNDBG");
	if (e && *e) {
		struct ddebug_msgs m = { 0 };

		if (ddebug_parse_block(e, strlen(e), NULL, &env_block, &m, NULL) == 0)
			env_ok = 1;
		else
			fprintf(stderr, "kernelkit: KK_DYNDBG ignored:\n%s", m.buf ? m.buf : "");
		ddebug_msgs_free(&m);
	}
	e = kk_dd_inherit_env();
	if (e && *e) {
		struct ddebug_msgs m = { 0 };

		if (ddebug_parse_block(e, strlen(e), NULL, &inh_block, &m, NULL) == 0)
			inh_ok = 1;
		else
			fprintf(stderr, "kernelkit: KK_DYNDBG_INHERIT ignored:\n%s", m.buf ? m.buf : "");
		ddebug_msgs_free(&m);
	}
	/* What we started with is part of the state our own execs pass on. */
	if (env_ok || inh_ok) {
		pthread_mutex_lock(&ddebug_lock);
		if (env_ok)
			kk_dd_inherit_record_locked(&env_block, NULL);
		if (inh_ok)
			kk_dd_inherit_record_locked(&inh_block, NULL);
		pthread_mutex_unlock(&ddebug_lock);
	}
	/* KK_DYNDBG is for the objects loaded with the program: every one mapped now. */
	if (env_ok || inh_ok)
		dl_iterate_phdr(collect_ranges, NULL);
	read_module_env();
}

/* Is there a KK_DYNDBG* or <module>.dyndbg variable?  (None in a setuid
 * program: kk_getenv() and read_module_env() would not read them.)  No libc
 * call and no string constant unless there is a KK_* variable: this runs in
 * every process, at load. */
KK_LOAD_TEXT static bool env_has_dyndbg(void)
{
	if (kk_env_any() && kk_env_has_prefix("KK_DYNDBG"))
		return true;
	for (char **e = environ; e && *e; e++) {
		const char *eq = *e;

		while (*eq && *eq != '=')
			eq++;
		if (*eq && eq - *e > 7 && eq[-7] == '.' && eq[-6] == 'd' && eq[-5] == 'y' &&
		    eq[-4] == 'n' && eq[-3] == 'd' && eq[-2] == 'b' && eq[-1] == 'g')
			return !getauxval(AT_SECURE);
	}
	return false;
}

static void ddebug_atfork_prepare(void)
{
	pthread_mutex_lock(&ddebug_lock);
}

static void ddebug_atfork_release(void)
{
	pthread_mutex_unlock(&ddebug_lock);
}

static const struct kk_fork_ops ddebug_fork_ops = {
	KK_INIT_DYNDBG, ddebug_atfork_prepare, ddebug_atfork_release, ddebug_atfork_release
};

/*
 * With dynamic-debug settings in the environment, read them now, as the
 * kernel reads dyndbg= at boot.  Without (the common case) the one thing to
 * take at load is the working directory, which file names are shown
 * relative to (the load ranges of the objects are only for KK_DYNDBG).
 */
KK_INIT(KK_INIT_DYNDBG) static void ddebug_init(void)
{
	kk_fork_register(&ddebug_fork_ops);
	kk_control_add_lib_file(&control_file);
	kk_control_add_lib_file(&batched_file);
	kk_control_add_lib_file(&aon_file);
	kk_dd_sink_file_add();
	kk_dd_inherit_init();
	kk_dd_trace_init();
	kk_dd_session_init();
	if (env_has_dyndbg()) {
		pthread_once(&ddebug_once, ddebug_init_once);
		return;
	}
	if (ddebug_init_ran)	/* an object registered before this constructor ran */
		return;
	ddebug_env_at_load = false;
	get_srcroot();
}
