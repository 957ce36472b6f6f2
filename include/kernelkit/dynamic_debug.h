/* SPDX-License-Identifier: MIT */
/*
 * Dynamic debug: pr_debug() sites that cost one NOP until they are switched
 * on, at run time, with the kernel's query language
 * (Documentation/admin-guide/dynamic-debug-howto.rst).
 *
 *	#include <kernelkit/dynamic_debug.h>
 *	pr_debug("queue %d full\n", q);
 *
 *	$ kkctl -p PID write dynamic_debug/control 'module myprog func drain* +pmf'
 *	$ kkctl -p PID read dynamic_debug/control
 *	$ KK_DYNDBG='file net.c +p' ./myprog
 *
 * Every site is a struct _ddebug in the section kk_dyndbg of the ELF object
 * that contains it; its static key decides the branch, so a disabled site is
 * the jump-label NOP.  Each object registers its sites from a constructor the
 * header puts in every unit (deduplicated per object), and drops them at
 * dlclose.
 *
 * Module name of a site: KK_MODNAME if it is defined (as a string literal)
 * before this header is included, else the file name of the ELF object that
 * holds the site without its directory, "lib" prefix or extensions
 * (libdrm_kms_helper.so.1 -> drm_kms_helper).
 *
 * Start-up control:
 *   KK_DYNDBG='queries'              applied to every object loaded with the
 *                                    program, before main()
 *   KK_DYNDBG_MOD_<module>='queries' (or the environment entry
 *   <module>.dyndbg='queries')       applied each time an object with sites
 *                                    of <module> registers: at start-up and at
 *                                    every dlopen; implies "module <module>";
 *                                    an empty value means "+p"
 *   KK_DYNDBG_VERBOSE=1              report "N debug prints in module M"
 *
 * Differences from the kernel: see docs/dynamic_debug.md (all-or-nothing
 * writes, per-query match/change counts, `!` negation, listing lines that
 * can be written back).
 */
#ifndef KERNELKIT_DYNAMIC_DEBUG_H
#define KERNELKIT_DYNAMIC_DEBUG_H

#include <stddef.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/ratelimit.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Flag bits of a site (the listing shows them in the order p m f s l t d). */
#define _DPRINTK_FLAGS_NONE		0
#define _DPRINTK_FLAGS_PRINT		(1u << 0)	/* p */
#define _DPRINTK_FLAGS_INCL_MODNAME	(1u << 1)	/* m */
#define _DPRINTK_FLAGS_INCL_FUNCNAME	(1u << 2)	/* f */
#define _DPRINTK_FLAGS_INCL_LINENO	(1u << 3)	/* l */
#define _DPRINTK_FLAGS_INCL_TID		(1u << 4)	/* t */
#define _DPRINTK_FLAGS_INCL_SOURCENAME	(1u << 5)	/* s */
#define _DPRINTK_FLAGS_INCL_STACK	(1u << 6)	/* d: dump the call stack */
#define _DPRINTK_FLAGS_INCL_ANY							\
	(_DPRINTK_FLAGS_INCL_MODNAME | _DPRINTK_FLAGS_INCL_FUNCNAME |		\
	 _DPRINTK_FLAGS_INCL_LINENO | _DPRINTK_FLAGS_INCL_TID |			\
	 _DPRINTK_FLAGS_INCL_SOURCENAME)

#define _DPRINTK_CLASS_DFLT		63	/* a site without a class */

struct _ddebug {
	const char *modname;	/* KK_MODNAME, or filled in at registration */
	const char *function;
	const char *filename;
	const char *format;
	unsigned int lineno:18;
	unsigned int class_id:6;
	unsigned int flags;	/* _DPRINTK_FLAGS_*; read with atomic loads */
	struct static_key_false key;
} __attribute__((aligned(8)));

/* ---- classmaps ---------------------------------------------------------------- */

enum class_map_type {
	DD_CLASS_TYPE_DISJOINT_BITS,	/* bit N of the parameter enables class base+N */
	DD_CLASS_TYPE_LEVEL_NUM,	/* level N enables classes base .. base+N-1 */
};

struct ddebug_class_map {
	const char *mod_name;	/* as for sites */
	const char *const *class_names;
	int length;
	int base;
	enum class_map_type map_type;
} __attribute__((aligned(8)));

#define __KK_DD_NARGS(...) (sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *))

/*
 * Name the classes base .. base+N-1 of this object's module.  A site gets a
 * class through pr_debug_cls(); a class's sites change only in queries that
 * name the class ("class DRM_UT_KMS +p").
 */
#define DECLARE_DYNDBG_CLASSMAP(_var, _maptype, _base, ...)			\
	static const char *const _var##_classnames[] = { __VA_ARGS__ };		\
	static struct ddebug_class_map _var					\
	__attribute__((used, section("kk_dyndbg_classes"), aligned(8))) = {	\
		.mod_name = __KK_DD_MODNAME,					\
		.class_names = _var##_classnames,				\
		.length = (int)__KK_DD_NARGS(__VA_ARGS__),			\
		.base = (_base),						\
		.map_type = (_maptype),						\
	}

/*
 * A bitmask (or level) parameter over a classmap, like drm.debug.  Setting it
 * turns every changed bit into a "class NAME +flags" / "-flags" query and
 * applies all of them as ONE batch.
 */
struct ddebug_class_param {
	union {
		unsigned long *bits;	/* DD_CLASS_TYPE_DISJOINT_BITS */
		unsigned int *lvl;	/* DD_CLASS_TYPE_LEVEL_NUM */
	};
	char flags[8];			/* e.g. "p" */
	const struct ddebug_class_map *map;
};

/* Parse @instr (decimal, 0x hex or 0 octal) and apply it.  0 or -errno. */
int param_set_dyndbg_classes(const char *instr, const struct ddebug_class_param *dcp);
/* "0x%lx" for bits, "%u" for a level; returns the length like snprintf. */
int param_get_dyndbg_classes(char *buf, size_t len, const struct ddebug_class_param *dcp);
/* Apply a new value; returns the number of sites changed, or -errno. */
int ddebug_classparam_set(const struct ddebug_class_param *dcp, unsigned long val);
/*
 * Serve the parameter as the control file dynamic_debug/params/@name (read
 * shows the value, write sets it).  The caller keeps @dcp alive until
 * kk_dyndbg_unregister_param().  0 or -errno.
 */
int kk_dyndbg_register_param(const char *name, const struct ddebug_class_param *dcp);
int kk_dyndbg_unregister_param(const char *name);

/* ---- applying queries ------------------------------------------------------------ */

/*
 * Apply a block of queries (separated by ';' or newlines) as ONE batch of
 * static-key changes.  @modname, when not NULL, is the module of every query
 * that names none.  Returns the number of matched sites, or -EINVAL when any
 * query is malformed (then nothing changed), or another -errno when patching
 * failed (nothing changed either).
 */
int dynamic_debug_exec_queries(const char *query, const char *modname);

/* Per-query results of kk_dyndbg_exec(). */
struct kk_dyndbg_result {
	unsigned int queries;		/* queries applied (comments excluded) */
	unsigned long matched;		/* sum over queries */
	unsigned long changed;		/* sum over queries */
	unsigned long sites_flipped;	/* sites whose print state changed */
	unsigned long long syncs;	/* cross-CPU syncs spent */
	unsigned long long apply_ns;	/* time spent switching the sites */
};

/*
 * dynamic_debug_exec_queries() with a report: @report (may be NULL) gets one
 * line per query ("query N: matched M changed C") and a summary line, or the
 * error messages.  @res may be NULL.  Returns 0 or -errno.
 */
int kk_dyndbg_exec(const char *text, size_t len, const char *modname,
		   struct kk_dyndbg_result *res, char **report);

/*
 * Per-module start-up queries, the analogue of modname.dyndbg=: applied (with
 * "module @module" implied) whenever an object with sites of @module
 * registers, i.e. at each dlopen.  @queries NULL removes them; "" means "+p".
 * Returns 0, -EINVAL (malformed; nothing stored) or -ENOMEM.
 */
int kk_dyndbg_set_module_queries(const char *module, const char *queries);

/* Number of registered sites whose module matches the glob @module (NULL: all). */
size_t kk_dyndbg_count_sites(const char *module);

/*
 * Batched (default 1): the queries of one write are one queued batch.  0:
 * one static-key change per site (the kernel before the 2026 RFC).  Also the
 * control file dynamic_debug/batched.  Returns the previous setting.
 */
int kk_dyndbg_set_batched(int on);

/* ---- output --------------------------------------------------------------------- */

/*
 * Where messages go.  @msg is the decorated message, ending in '\n', @len
 * bytes; @desc is the site (NULL for reports that belong to no site).
 */
typedef void (*kk_dyndbg_sink_fn)(const struct _ddebug *desc, const char *msg, size_t len,
				  void *arg);
/* NULL restores the default: the whole line with one fwrite() to stderr. */
void kk_dyndbg_set_sink(kk_dyndbg_sink_fn fn, void *arg);
/* A sink that sends each message to syslog(3) at @priority (e.g. LOG_DEBUG). */
void kk_dyndbg_sink_syslog(const struct _ddebug *desc, const char *msg, size_t len, void *arg);
#define KK_DYNDBG_SYSLOG_ARG(priority)	((void *)(long)(priority))

void __dynamic_pr_debug(struct _ddebug *descriptor, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* The rate-limit decision of pr_debug_ratelimited(); reports through the sink. */
int __kk_dynamic_ratelimit(struct ratelimit_state *rs, struct _ddebug *descriptor);

enum { DUMP_PREFIX_NONE, DUMP_PREFIX_ADDRESS, DUMP_PREFIX_OFFSET };
void __dynamic_hex_dump(struct _ddebug *descriptor, const char *prefix_str, int prefix_type,
			int rowsize, int groupsize, const void *buf, size_t len, int ascii);

/* ---- sites ---------------------------------------------------------------------- */

#ifdef KK_MODNAME
#define __KK_DD_MODNAME KK_MODNAME
#else
#define __KK_DD_MODNAME ((const char *)0)
#endif

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

#define __KK_DD_PASTE2(a, b) a##b
#define __KK_DD_PASTE(a, b) __KK_DD_PASTE2(a, b)
#define __KK_DD_UNIQUE(prefix) __KK_DD_PASTE(prefix, __COUNTER__)

#define DEFINE_DYNAMIC_DEBUG_METADATA_CLS(name, cls, fmt)			\
	static struct _ddebug name						\
	__attribute__((used, section("kk_dyndbg"), aligned(8))) = {		\
		.modname = __KK_DD_MODNAME,					\
		.function = __func__,						\
		.filename = __FILE__,						\
		.format = (fmt),						\
		.lineno = __LINE__,						\
		.class_id = (cls),						\
		.flags = 0,							\
		.key = STATIC_KEY_FALSE_INIT,					\
	}
#define DEFINE_DYNAMIC_DEBUG_METADATA(name, fmt)				\
	DEFINE_DYNAMIC_DEBUG_METADATA_CLS(name, _DPRINTK_CLASS_DFLT, fmt)

/* One NOP while the site is off (a load + test with -DKK_NO_JUMP_LABEL). */
#define DYNAMIC_DEBUG_BRANCH(descriptor) static_branch_unlikely(&(descriptor).key)

#define __dynamic_func_call_cls(id, cls, fmt, func, ...) do {			\
	DEFINE_DYNAMIC_DEBUG_METADATA_CLS(id, cls, fmt);			\
	if (DYNAMIC_DEBUG_BRANCH(id))						\
		func(&id, ##__VA_ARGS__);					\
} while (0)

#define _dynamic_func_call_cls(cls, fmt, func, ...)				\
	__dynamic_func_call_cls(__KK_DD_UNIQUE(__kk_ddebug_), cls, fmt, func, ##__VA_ARGS__)
#define _dynamic_func_call(fmt, func, ...)					\
	_dynamic_func_call_cls(_DPRINTK_CLASS_DFLT, fmt, func, ##__VA_ARGS__)

#define dynamic_pr_debug_cls(cls, fmt, ...)					\
	_dynamic_func_call_cls(cls, fmt, __dynamic_pr_debug, pr_fmt(fmt), ##__VA_ARGS__)
#define dynamic_pr_debug(fmt, ...)						\
	_dynamic_func_call(fmt, __dynamic_pr_debug, pr_fmt(fmt), ##__VA_ARGS__)

#define pr_debug(fmt, ...)		dynamic_pr_debug(fmt, ##__VA_ARGS__)
#define pr_debug_cls(cls, fmt, ...)	dynamic_pr_debug_cls(cls, fmt, ##__VA_ARGS__)
#define __pr_debug_cls(cls, fmt, ...)	dynamic_pr_debug_cls(cls, fmt, ##__VA_ARGS__)

/* The rate limit is consulted only once the site is on. */
#define __kk_dd_ratelimited(id, rs, fmt, ...) do {				\
	static struct ratelimit_state rs =					\
		RATELIMIT_STATE_INIT(rs, DEFAULT_RATELIMIT_INTERVAL,		\
				     DEFAULT_RATELIMIT_BURST);			\
	DEFINE_DYNAMIC_DEBUG_METADATA(id, pr_fmt(fmt));				\
	if (DYNAMIC_DEBUG_BRANCH(id) && __kk_dynamic_ratelimit(&rs, &id))	\
		__dynamic_pr_debug(&id, pr_fmt(fmt), ##__VA_ARGS__);		\
} while (0)
#define pr_debug_ratelimited(fmt, ...)						\
	__kk_dd_ratelimited(__KK_DD_UNIQUE(__kk_ddebug_), __KK_DD_UNIQUE(__kk_ddrs_),	\
			    fmt, ##__VA_ARGS__)

#define dynamic_hex_dump(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii) \
	_dynamic_func_call(__builtin_FILE(), __dynamic_hex_dump, prefix_str, prefix_type, \
			   rowsize, groupsize, buf, len, ascii)
#define print_hex_dump_debug(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii) \
	dynamic_hex_dump(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii)
#define print_hex_dump_bytes(prefix_str, prefix_type, buf, len)			\
	dynamic_hex_dump(prefix_str, prefix_type, 16, 1, buf, len, 1)

/* ---- registration (one constructor per unit, deduplicated per object) ---------- */

int kk_dyndbg_add_object(struct _ddebug *start, struct _ddebug *stop,
			 struct ddebug_class_map *cstart, struct ddebug_class_map *cstop);
void kk_dyndbg_del_object(struct _ddebug *start, struct ddebug_class_map *cstart);

extern struct _ddebug __start_kk_dyndbg[] __attribute__((weak, visibility("hidden")));
extern struct _ddebug __stop_kk_dyndbg[] __attribute__((weak, visibility("hidden")));
extern struct ddebug_class_map __start_kk_dyndbg_classes[]
	__attribute__((weak, visibility("hidden")));
extern struct ddebug_class_map __stop_kk_dyndbg_classes[]
	__attribute__((weak, visibility("hidden")));

#ifndef KK_LIBRARY_BUILD	/* see jump_label.h */
/* After the jump-label constructor (101), so the sites' keys are known. */
__attribute__((constructor(102), used)) static void __kk_dyndbg_ctor(void)
{
	struct _ddebug *start = __start_kk_dyndbg, *stop = __stop_kk_dyndbg;
	struct ddebug_class_map *cstart = __start_kk_dyndbg_classes;
	struct ddebug_class_map *cstop = __stop_kk_dyndbg_classes;

	if (start != stop || cstart != cstop)
		kk_dyndbg_add_object(start, stop, cstart, cstop);
}

/* Runs before the jump-label destructor (101) of the same object. */
__attribute__((destructor(102), used)) static void __kk_dyndbg_dtor(void)
{
	struct _ddebug *start = __start_kk_dyndbg, *stop = __stop_kk_dyndbg;
	struct ddebug_class_map *cstart = __start_kk_dyndbg_classes;
	struct ddebug_class_map *cstop = __stop_kk_dyndbg_classes;

	if (start != stop || cstart != cstop)
		kk_dyndbg_del_object(start, cstart);
}
#endif

#ifdef __cplusplus
}
#endif
#endif /* KERNELKIT_DYNAMIC_DEBUG_H */
