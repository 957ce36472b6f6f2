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
 * Every site is a struct _ddebug: in the section kk_dyndbg of the ELF object
 * that contains it (C), or listed by address in kk_dyndbg_ptrs (C++, so that
 * sites in inline functions and templates work: one per process, one per
 * template instantiation; see docs/dynamic_debug.md).  Its static key decides
 * the branch, so a disabled site is the jump-label NOP.  Each object
 * registers its sites from a constructor the header puts in every unit
 * (deduplicated per object), and drops them at dlclose.
 *
 * Module name of a site: KK_MODNAME if it is defined (as a string literal)
 * before this header is included, else KBUILD_MODNAME, else the file name of
 * the ELF object that holds the site without its directory, "lib" prefix or
 * extensions (libdrm_kms_helper.so.1 -> drm_kms_helper).  `#define DEBUG`
 * before the include starts the unit's sites enabled, as in the kernel.
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
 * Differences from the kernel: see docs/dynamic_debug.md and the table in
 * docs/kernel_api.md (all-or-nothing writes, per-query match/change counts,
 * `!` negation, the `d` flag, listing lines that can be written back).
 */
#ifndef KERNELKIT_DYNAMIC_DEBUG_H
#define KERNELKIT_DYNAMIC_DEBUG_H

#include <stddef.h>
#include <kernelkit/jump_label.h>
#include <kernelkit/ratelimit.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* Flag bits of a site (the listing shows them in the order p T m f s l t d). */
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
/*
 * Not a flag that queries set: the site calls its function without the
 * descriptor (_dynamic_func_call_no_desc()), so the function cannot honour
 * m f l s t d.  A query that would add one of those to such a site is
 * refused and changes nothing (-EOPNOTSUPP).  Not shown in the listing.
 */
#define _DPRINTK_FLAGS_NO_DESC		(1u << 7)
/*
 * T: record the message into the trace ring (binary, formatted when read:
 * dynamic_debug/trace), the kernel's "trace destination" flag.  Independent
 * of p, as in the kernel: p prints, T records, both do both.  Either one
 * switches the site on.  Refused (-EOPNOTSUPP) on _no_desc sites, whose
 * function is not __dynamic_pr_debug().
 */
#define _DPRINTK_FLAGS_TRACE		(1u << 8)
#define _DPRINTK_FLAGS_ENABLED		(_DPRINTK_FLAGS_PRINT | _DPRINTK_FLAGS_TRACE)

/*
 * `#define DEBUG` before this header: the unit's sites start enabled, as in
 * the kernel (their key starts true, so an enabled site is the NOP and a
 * disabled one the jump).  Programs that use DEBUG for something else can
 * define KK_DYNDBG_IGNORE_DEBUG to keep their sites off.
 */
#if defined(DEBUG) && !defined(KK_DYNDBG_IGNORE_DEBUG)
#define __KK_DD_DEBUG 1
#define _DPRINTK_FLAGS_DEFAULT		_DPRINTK_FLAGS_PRINT
#else
#define _DPRINTK_FLAGS_DEFAULT		0
#endif

#define _DPRINTK_CLASS_DFLT		63	/* a site without a class */

struct _ddebug {
	const char *modname;	/* KK_MODNAME / KBUILD_MODNAME, or set at registration */
	const char *function;
	const char *filename;
	const char *format;
	unsigned int lineno:18;
	unsigned int class_id:6;
	unsigned int flags;	/* _DPRINTK_FLAGS_*; read with atomic loads */
	union {
		struct static_key_true dd_key_true;
		struct static_key_false dd_key_false;
	} key;
} __attribute__((__aligned__(8)));

/* ---- classmaps ---------------------------------------------------------------- */

/* The kernel's order and values. */
enum class_map_type {
	DD_CLASS_TYPE_DISJOINT_BITS,	/* bit N of the parameter enables class base+N */
	DD_CLASS_TYPE_LEVEL_NUM,	/* level N enables classes base .. base+N-1 */
	DD_CLASS_TYPE_DISJOINT_NAMES,	/* "+NAME,-NAME": classes on and off by name */
	DD_CLASS_TYPE_LEVEL_NAMES,	/* "NAME": that class and the ones below it */
};

struct ddebug_class_map {
	const char *mod_name;	/* as for sites */
	const char *const *class_names;
	int length;
	int base;
	enum class_map_type map_type;
} __attribute__((__aligned__(8)));

/*
 * Name the classes base .. base+N-1 of this object's module.  A site gets a
 * class through pr_debug_cls(); a class's sites change only in queries that
 * name the class ("class DRM_UT_KMS +p").
 */
#define DECLARE_DYNDBG_CLASSMAP(_var, _maptype, _base, ...)			\
	static const char *const _var##_classnames[] = { __VA_ARGS__ };		\
	static struct ddebug_class_map _var					\
	__attribute__((__used__, __section__("kk_dyndbg_classes"), __aligned__(8))) = { \
		__KK_DD_MODNAME,						\
		_var##_classnames,						\
		(int)(sizeof(_var##_classnames) / sizeof(_var##_classnames[0])), \
		(_base),							\
		(_maptype)							\
	}

/*
 * A bitmask (or level) parameter over a classmap, like drm.debug.  Setting it
 * turns every changed bit into a "class NAME +flags" / "-flags" query and
 * applies all of them as ONE batch.
 */
struct ddebug_class_param {
	__extension__ union {
		unsigned long *bits;	/* DD_CLASS_TYPE_DISJOINT_* */
		unsigned int *lvl;	/* DD_CLASS_TYPE_LEVEL_* */
	};
	char flags[8];			/* e.g. "p" */
	const struct ddebug_class_map *map;
};

/*
 * Module parameters, the fields kernel code uses (<linux/moduleparam.h>).
 * module_param_cb() in a module registers one with kk_module_param_register().
 */
struct kernel_param;
struct module;
struct kernel_param_ops {
	unsigned int flags;
	int (*set)(const char *val, const struct kernel_param *kp);
	/* @buffer holds KK_PARAM_BUFSIZE bytes (the kernel's PAGE_SIZE) */
	int (*get)(char *buffer, const struct kernel_param *kp);
	void (*free)(void *arg);
};
struct kernel_param {
	const char *name;
	struct module *mod;
	const struct kernel_param_ops *ops;
	unsigned short perm;
	signed char level;
	unsigned char flags;
	void *arg;
};
#define KK_PARAM_BUFSIZE 4096

/*
 * The kernel's classmap parameter ops: kp->arg is a struct ddebug_class_param.
 * BITS takes a number (decimal, 0x hex, 0 octal), LEVEL_NUM a level 0..N,
 * DISJOINT_NAMES "+NAME,-NAME,..." and LEVEL_NAMES a class name ("L3": that
 * level and the ones below it, "-L3": only the ones below).  All changes of
 * one write are one batch; a bad value changes nothing: -EINVAL.
 */
extern const struct kernel_param_ops param_ops_dyndbg_classes;
int param_set_dyndbg_classes(const char *instr, const struct kernel_param *kp);
/* "0x%lx\n" for bits, "%u\n" for a level; returns the length. */
int param_get_dyndbg_classes(char *buffer, const struct kernel_param *kp);

/* The same on a struct ddebug_class_param; the get has no newline. */
int kk_param_set_dyndbg_classes(const char *instr, const struct ddebug_class_param *dcp);
int kk_param_get_dyndbg_classes(char *buf, size_t len, const struct ddebug_class_param *dcp);
/* Apply a new value; returns the number of sites changed, or -errno. */
int ddebug_classparam_set(const struct ddebug_class_param *dcp, unsigned long val);
/*
 * Serve the parameter as the control file dynamic_debug/params/@name (read
 * shows the value, write sets it).  The caller keeps @dcp alive until
 * kk_dyndbg_unregister_param().  0 or -errno.
 */
int kk_dyndbg_register_param(const char *name, const struct ddebug_class_param *dcp);
int kk_dyndbg_unregister_param(const char *name);
/*
 * Serve any module parameter as dynamic_debug/params/<@modname>.<kp->name>
 * (the kernel's /sys/module/<mod>/parameters/<name>): read calls
 * kp->ops->get, write kp->ops->set; writes need a write bit in kp->perm.
 * @kp stays the caller's until kk_module_param_unregister().  0 or -errno.
 */
int kk_module_param_register(const char *modname, const struct kernel_param *kp);
int kk_module_param_unregister(const char *modname, const struct kernel_param *kp);
/* <modname>.dyndbg=<val> (NULL or "" = "+p"): applied now.  -ENOENT for other params. */
int ddebug_dyndbg_module_param_cb(char *param, char *val, const char *modname);

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

/*
 * All or nothing (default 1): a write with a malformed query changes nothing.
 * 0: the kernel's behaviour, each query applied on its own, the malformed
 * ones reported and skipped, the write returning the last error.  Also the
 * control file dynamic_debug/all_or_nothing.  Returns the previous setting.
 */
int kk_dyndbg_set_all_or_nothing(int on);

/*
 * Inherit (default 1): the images this process execs (exec*(), fexecve(),
 * posix_spawn*()) start with the queries applied to it, live or at start-up,
 * passed in one KK_DYNDBG_INHERIT entry added to a copy of the exec's
 * environment.  0: they start from their own defaults.  Also the control file
 * dynamic_debug/inherit and KK_DYNDBG_INHERIT=0.  Returns the previous setting.
 */
int kk_dyndbg_set_inherit(int on);

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
/*
 * A sink that sends each message to the systemd journal (native protocol, no
 * libsystemd) as one entry: MESSAGE (without the final '\n'), PRIORITY=7,
 * CODE_FILE, CODE_LINE, CODE_FUNC, KK_MODULE, TID, SYSLOG_IDENTIFIER.  @arg
 * is unused.  No journal: the message goes to stderr, said once.  Operators
 * choose it without code with KK_DYNDBG_SINK=journal (or stderr, syslog).
 */
void kk_dyndbg_sink_journal(const struct _ddebug *desc, const char *msg, size_t len, void *arg);

/* ---- the trace ring (the T flag) ----------------------------------------------------- */

/*
 * Sites with T record their message into a ring of the calling thread, in
 * binary (the site, the format and the arguments packed by its conversions,
 * %s strings copied, at most 256 bytes each), formatted only when read:
 * dynamic_debug/trace (all records, oldest first, every thread merged by
 * time), dynamic_debug/trace_pipe (what came since the last read of it,
 * consumed), and a panic's report (the last 200).  Lock-free and
 * async-signal-safe; see docs/dynamic_debug.md, "Trace ring".
 *
 * The size of each thread's ring in bytes: 4 KiB to 16 MiB, rounded up to a
 * power of two (default 64 KiB).  Clears the trace; each thread takes a ring
 * of the new size at its next event.  0 or -EINVAL.  Also the control file
 * dynamic_debug/buffer_size_kb.
 */
int kk_dyndbg_trace_set_size(size_t bytes);
size_t kk_dyndbg_trace_get_size(void);
/* Forget every record (and the lost counts).  Also: write "" or "0" to dynamic_debug/trace. */
void kk_dyndbg_trace_clear(void);

void __dynamic_pr_debug(struct _ddebug *descriptor, const char *fmt, ...)
	__attribute__((__format__(__printf__, 2, 3)));

/*
 * The decoration the site's flags ask for, "[tid] module:func:file:line: "
 * (each part only when its flag m f s l t is set; "" with none), as
 * __dynamic_pr_debug() puts it before its message: for a function called
 * through _dynamic_func_call(fmt, func, ...), which gets the descriptor and
 * formats its own line.  Writes at most @len bytes to @buf, terminated when
 * @len > 0; returns the length of the whole prefix, as snprintf() does.
 */
size_t kk_dynamic_emit_prefix(const struct _ddebug *desc, char *buf, size_t len);
/* The kernel's dynamic_emit_prefix() (lib/dynamic_debug.c): @buf holds
 * KK_DYNDBG_PREFIX_SIZE bytes (the kernel's PREFIX_SIZE); returns @buf. */
#define KK_DYNDBG_PREFIX_SIZE	128
static inline char *dynamic_emit_prefix(const struct _ddebug *desc, char *buf)
{
	kk_dynamic_emit_prefix(desc, buf, KK_DYNDBG_PREFIX_SIZE);
	return buf;
}
/* The rate-limit decision of pr_debug_ratelimited(); reports through the sink. */
int __kk_dynamic_ratelimit(struct ratelimit_state *rs, struct _ddebug *descriptor);

enum { DUMP_PREFIX_NONE, DUMP_PREFIX_ADDRESS, DUMP_PREFIX_OFFSET };
void __dynamic_hex_dump(struct _ddebug *descriptor, const char *prefix_str, int prefix_type,
			int rowsize, int groupsize, const void *buf, size_t len, int ascii);

/* ---- sites ---------------------------------------------------------------------- */

/* The module of the unit's sites and classmaps: KK_MODNAME, KBUILD_MODNAME, or
 * (NULL) the file name of the object, set at registration. */
#if defined(KK_MODNAME)
#define __KK_DD_MODNAME KK_MODNAME
#elif defined(KBUILD_MODNAME)
#define __KK_DD_MODNAME KBUILD_MODNAME
#else
#define __KK_DD_MODNAME ((const char *)0)
#endif

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

#define __KK_DD_PASTE2(a, b) a##b
#define __KK_DD_PASTE(a, b) __KK_DD_PASTE2(a, b)
#define __KK_DD_UNIQUE(prefix) __KK_DD_PASTE(prefix, __COUNTER__)

/*
 * Variadic macros without `, ##__VA_ARGS__` (a GNU extension) and without an
 * empty `...` (refused by -pedantic before C23 and C++20): every macro that
 * takes "fmt, ..." is `...` only and picks its expansion by the number of
 * arguments.  __KK_DD_SELk(...) is k when there are exactly k arguments and
 * 9 when there are more (up to 64), so pr_debug("x\n") and pr_debug("%d\n", 1)
 * expand to the same code as the kernel's.
 */
#define __KK_DD_PICK(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, \
		     _17, _18, _19, _20, _21, _22, _23, _24, _25, _26, _27, _28, _29, _30, _31, \
		     _32, _33, _34, _35, _36, _37, _38, _39, _40, _41, _42, _43, _44, _45, _46, \
		     _47, _48, _49, _50, _51, _52, _53, _54, _55, _56, _57, _58, _59, _60, _61, \
		     _62, _63, _64, N, ...) N
#define __KK_DD_PICK_(...) __KK_DD_PICK(__VA_ARGS__)
#define __KK_DD_9x60								\
	9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, \
	9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, \
	9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9, 9
#define __KK_DD_SEL1(...) __KK_DD_PICK_(__VA_ARGS__, __KK_DD_9x60, 9, 9, 9, 1, _)
#define __KK_DD_SEL2(...) __KK_DD_PICK_(__VA_ARGS__, __KK_DD_9x60, 9, 9, 2, 0, _)
#define __KK_DD_SEL3(...) __KK_DD_PICK_(__VA_ARGS__, __KK_DD_9x60, 9, 3, 0, 0, _)
#define __KK_DD_SEL4(...) __KK_DD_PICK_(__VA_ARGS__, __KK_DD_9x60, 4, 0, 0, 0, _)
/* Two pasting layers: a macro cannot expand inside its own expansion, and
 * pr_debug's dispatch (A) expands __dynamic_func_call's (B). */
#define __KK_DD_CAT_A2(a, b) a##b
#define __KK_DD_CAT_A(a, b) __KK_DD_CAT_A2(a, b)
#define __KK_DD_CAT_B2(a, b) a##b
#define __KK_DD_CAT_B(a, b) __KK_DD_CAT_B2(a, b)

/*
 * One site: a struct _ddebug in the kk_dyndbg section (positional, so that
 * every dialect accepts it; the key's braced initializer because ISO C has no
 * constant compound literal).  The key starts as the flags say.
 */
#ifdef __KK_DD_DEBUG
#define _DPRINTK_KEY_INIT	{ __KK_STATIC_KEY_TRUE_BRACED }
#define DYNAMIC_DEBUG_BRANCH(descriptor) static_branch_likely(&(descriptor).key.dd_key_true)
#else
#define _DPRINTK_KEY_INIT	{ __KK_STATIC_KEY_FALSE_BRACED }
/* One NOP while the site is off (a load + test with -DKK_NO_JUMP_LABEL). */
#define DYNAMIC_DEBUG_BRANCH(descriptor) static_branch_unlikely(&(descriptor).key.dd_key_false)
#endif

#define __KK_DD_DESC_INIT(cls, fmt, flags) {					\
		__KK_DD_MODNAME,						\
		__func__,							\
		__FILE__,							\
		(fmt),								\
		__LINE__,							\
		(cls),								\
		(flags),							\
		_DPRINTK_KEY_INIT						\
	}
/*
 * A site listed by address (C++ sites, and pr_debug_if() sites in C too): the
 * descriptor stays where the compiler puts it, and an asm statement adds its
 * address to kk_dyndbg_ptrs, in the section group of the code ("?").
 *
 * C++: a site in an inline function or a template is a COMDAT variable, and
 * g++ both ignores a section attribute on it in a template (the site was
 * lost) and refuses one section for COMDAT and plain variables (a "section
 * type conflict" between an inline and a static function of one unit).  So
 * every C++ site is listed by address: the linker keeps the entries of the
 * copy it keeps, the dynamic linker resolves every object's entry to the one
 * descriptor the process uses, and the library registers each descriptor
 * once.  The operand is a symbol even in -fPIC for a preemptible
 * (vague-linkage) descriptor, where "i" is refused: aarch64 takes it as "S",
 * x86_64 as "s" (clang) or "X" printed with %p (gcc).
 *
 * pr_debug_if(): a site that is not in the code the compiler emits (its
 * condition is false) must not be listed.  A descriptor in kk_dyndbg is
 * __used__ and stays; a listed one goes with the dead code that lists it.
 */
#if defined(__aarch64__)
#define __KK_DD_SYM(op)		"%c" op
#define __KK_DD_SYM_CONSTRAINT	"S"
#elif defined(__x86_64__) && defined(__clang__)
#define __KK_DD_SYM(op)		"%c" op
#define __KK_DD_SYM_CONSTRAINT	"s"
#elif defined(__x86_64__)
#define __KK_DD_SYM(op)		"%p" op
#define __KK_DD_SYM_CONSTRAINT	"X"
#else
#define __KK_DD_SYM(op)		"%c" op
#define __KK_DD_SYM_CONSTRAINT	"i"
#endif
/*
 * The descriptor must be constant-initialised, as C requires of a static:
 * C++ would otherwise take a format that is not a constant (a forwarding
 * template's `fmt` parameter) as a dynamic initialisation at the site's
 * first run, which overwrites the registered descriptor and its key.  C++20's
 * constinit, in every dialect: g++'s __constinit (GCC 10), clang's
 * require_constant_initialization.  Error: "does not have a constant
 * initializer".
 */
#if !defined(__cplusplus)
#define __KK_DD_CONSTINIT
#elif defined(__clang__)
#define __KK_DD_CONSTINIT	__attribute__((__require_constant_initialization__))
#elif defined(__GNUC__) && __GNUC__ >= 10
#define __KK_DD_CONSTINIT	__constinit
#else
#define __KK_DD_CONSTINIT
#endif
/*
 * C++ only: the instantiation's name.  __func__ is the kernel's "push" for
 * Ring<int>::push and Ring<std::string>::push alike; __PRETTY_FUNCTION__
 * names the instantiation.  It goes into kk_dyndbg_names next to the
 * descriptor's address (the descriptor keeps its C layout), and the library
 * shows the qualified name it makes of it ("Ring<int>::push") in the
 * listing and matches `func` against it (docs/dynamic_debug.md, "C++").
 */
#ifdef __cplusplus
#define __KK_DD_NAME_ENTRY							\
	".pushsection kk_dyndbg_names, \"aw?\"\n\t"				\
	".balign 8\n\t"								\
	".quad " __KK_DD_SYM("[d]") ", " __KK_DD_SYM("[n]") "\n\t"		\
	".popsection"
#define __KK_DD_NAME_OPERAND	, [n] __KK_DD_SYM_CONSTRAINT(&__PRETTY_FUNCTION__[0])
#else
#define __KK_DD_NAME_ENTRY	""
#define __KK_DD_NAME_OPERAND
#endif
/* @listed: a constant; 0 lists nothing (clang emits dead code at -O0 when it holds a label). */
#define __KK_DD_DEFINE_LISTED(name, cls, fmt, flags, listed)		\
	static __KK_DD_CONSTINIT struct _ddebug name __attribute__((__aligned__(8))) = \
		__KK_DD_DESC_INIT(cls, fmt, flags);				\
	__asm__(".if %c[on]\n\t"						\
		".pushsection kk_dyndbg_ptrs, \"aw?\"\n\t"			\
		".balign 8\n\t"							\
		".quad " __KK_DD_SYM("[d]") "\n\t"				\
		".popsection\n\t"						\
		__KK_DD_NAME_ENTRY "\n\t"					\
		".endif"							\
		: : [d] __KK_DD_SYM_CONSTRAINT(&name), [on] "n"((listed) ? 1 : 0)	\
		__KK_DD_NAME_OPERAND)
#ifndef __cplusplus
#define __KK_DD_DEFINE(name, cls, fmt, flags)					\
	static struct _ddebug name						\
	__attribute__((__used__, __section__("kk_dyndbg"), __aligned__(8))) =	\
		__KK_DD_DESC_INIT(cls, fmt, flags)
#else
#define __KK_DD_DEFINE(name, cls, fmt, flags) __KK_DD_DEFINE_LISTED(name, cls, fmt, flags, 1)
#endif
#define DEFINE_DYNAMIC_DEBUG_METADATA_CLS(name, cls, fmt)			\
	__KK_DD_DEFINE(name, cls, fmt, _DPRINTK_FLAGS_DEFAULT)
#define DEFINE_DYNAMIC_DEBUG_METADATA(name, fmt)				\
	DEFINE_DYNAMIC_DEBUG_METADATA_CLS(name, _DPRINTK_CLASS_DFLT, fmt)

/* Define the site @id (initial flags @fl) and call func(args) when it is enabled. */
#define __kk_dd_site_call(id, cls, fmt, fl, func, args) do {			\
	__KK_DD_DEFINE(id, cls, fmt, fl);					\
	if (DYNAMIC_DEBUG_BRANCH(id))						\
		func args;							\
} while (0)

/* __dynamic_func_call_cls(id, cls, fmt, func, ...): func(&id, ...) */
#define __dynamic_func_call_cls(...)						\
	__KK_DD_CAT_B(__kk_dd_fcc_, __KK_DD_SEL4(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_fcc_4(id, cls, fmt, func)					\
	__kk_dd_site_call(id, cls, fmt, _DPRINTK_FLAGS_DEFAULT, func, (&id))
#define __kk_dd_fcc_9(id, cls, fmt, func, ...)					\
	__kk_dd_site_call(id, cls, fmt, _DPRINTK_FLAGS_DEFAULT, func, (&id, __VA_ARGS__))
/*
 * __dynamic_func_call_cls_no_desc(id, cls, fmt, func, ...): func(...).  The
 * site is marked _DPRINTK_FLAGS_NO_DESC: func gets no descriptor, so queries
 * may not ask it for decorations.
 */
#define __dynamic_func_call_cls_no_desc(...)					\
	__KK_DD_CAT_B(__kk_dd_fccn_, __KK_DD_SEL4(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_fccn_4(id, cls, fmt, func)					\
	__kk_dd_site_call(id, cls, fmt, _DPRINTK_FLAGS_DEFAULT | _DPRINTK_FLAGS_NO_DESC, func, ())
#define __kk_dd_fccn_9(id, cls, fmt, func, ...)					\
	__kk_dd_site_call(id, cls, fmt, _DPRINTK_FLAGS_DEFAULT | _DPRINTK_FLAGS_NO_DESC, func, \
			  (__VA_ARGS__))
/* __dynamic_func_call(id, fmt, func, ...) and _no_desc: the default class */
#define __dynamic_func_call(...)						\
	__KK_DD_CAT_B(__kk_dd_fc_, __KK_DD_SEL3(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_fc_3(id, fmt, func) __kk_dd_fcc_4(id, _DPRINTK_CLASS_DFLT, fmt, func)
#define __kk_dd_fc_9(id, fmt, func, ...)					\
	__kk_dd_fcc_9(id, _DPRINTK_CLASS_DFLT, fmt, func, __VA_ARGS__)
#define __dynamic_func_call_no_desc(...)					\
	__KK_DD_CAT_B(__kk_dd_fcn_, __KK_DD_SEL3(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_fcn_3(id, fmt, func) __kk_dd_fccn_4(id, _DPRINTK_CLASS_DFLT, fmt, func)
#define __kk_dd_fcn_9(id, fmt, func, ...)					\
	__kk_dd_fccn_9(id, _DPRINTK_CLASS_DFLT, fmt, func, __VA_ARGS__)

/* The "factory macros": the same with a unique descriptor name. */
#define _dynamic_func_call_cls(...)						\
	__dynamic_func_call_cls(__KK_DD_UNIQUE(__kk_ddebug_), __VA_ARGS__)
#define _dynamic_func_call_cls_no_desc(...)					\
	__dynamic_func_call_cls_no_desc(__KK_DD_UNIQUE(__kk_ddebug_), __VA_ARGS__)
#define _dynamic_func_call(...)							\
	__dynamic_func_call(__KK_DD_UNIQUE(__kk_ddebug_), __VA_ARGS__)
#define _dynamic_func_call_no_desc(...)						\
	__dynamic_func_call_no_desc(__KK_DD_UNIQUE(__kk_ddebug_), __VA_ARGS__)

/* dynamic_pr_debug_cls(cls, fmt, ...) */
#define dynamic_pr_debug_cls(...)						\
	__KK_DD_CAT_A(__kk_dd_prc_, __KK_DD_SEL2(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_prc_2(cls, fmt)							\
	_dynamic_func_call_cls(cls, fmt, __dynamic_pr_debug, pr_fmt(fmt))
#define __kk_dd_prc_9(cls, fmt, ...)						\
	_dynamic_func_call_cls(cls, fmt, __dynamic_pr_debug, pr_fmt(fmt), __VA_ARGS__)
/* dynamic_pr_debug(fmt, ...) */
#define dynamic_pr_debug(...)							\
	__KK_DD_CAT_A(__kk_dd_pr_, __KK_DD_SEL1(__VA_ARGS__))(__VA_ARGS__)
#define __kk_dd_pr_1(fmt) _dynamic_func_call(fmt, __dynamic_pr_debug, pr_fmt(fmt))
#define __kk_dd_pr_9(fmt, ...)							\
	_dynamic_func_call(fmt, __dynamic_pr_debug, pr_fmt(fmt), __VA_ARGS__)

#define pr_debug(...)			dynamic_pr_debug(__VA_ARGS__)
#define pr_debug_cls(...)		dynamic_pr_debug_cls(__VA_ARGS__)
#define __pr_debug_cls(...)		dynamic_pr_debug_cls(__VA_ARGS__)

/*
 * pr_debug_if(cond, fallback, fmt, ...): the adoption form of a program's own
 * log macro with a level, in its header:
 *
 *	#define serverLog(level, ...) \
 *		pr_debug_if((level) == LL_DEBUG, _serverLog(level, __VA_ARGS__), __VA_ARGS__)
 *
 * Where @cond is a compile-time constant that is true, the call is a
 * pr_debug(fmt, ...) site and @fallback is not evaluated.  Everywhere else,
 * @cond false or not a constant, the call is @fallback, exactly as before:
 * no site, no descriptor, no cost.  "Constant" is decided by the compiler,
 * in every dialect and at every -O: an integer constant expression in C (a
 * literal, an enumerator, a macro of one), a constant expression in C++
 * (also a constexpr variable, a template parameter); a variable level is
 * never a site, even one that inlining would make constant.
 * __KK_DD_CONST_TRUE(c) is that test; the expression @c is not evaluated.
 */
#ifndef __cplusplus
/* A null pointer constant only when @c is an integer constant expression. */
#define __KK_DD_CONST_TRUE(c)							\
	(__builtin_types_compatible_p(__typeof__(1 ? (void *)((long)!!(c) * 0l) : (int *)1), \
				      int *) && (c))
#else
}	/* extern "C" */
/* A template argument is constant-evaluated: there __builtin_constant_p of a
 * non-constant is false, at once, rather than whatever inlining makes of it. */
template <bool B> struct __kk_dd_const { static const bool value = B; };
extern "C" {
#define __KK_DD_CONST_TRUE(c) (__kk_dd_const<__builtin_constant_p(c)>::value && (c))
#endif
#define __kk_dd_lsite(id, on, fmt, args) do {				\
	__KK_DD_DEFINE_LISTED(id, _DPRINTK_CLASS_DFLT, fmt, _DPRINTK_FLAGS_DEFAULT, on); \
	if (DYNAMIC_DEBUG_BRANCH(id))						\
		__dynamic_pr_debug args;					\
} while (0)
#define __kk_dd_lpr_1(id, on, fmt) __kk_dd_lsite(id, on, fmt, (&id, pr_fmt(fmt)))
#define __kk_dd_lpr_9(id, on, fmt, ...)						\
	__kk_dd_lsite(id, on, fmt, (&id, pr_fmt(fmt), __VA_ARGS__))
#define __kk_dd_lpr(id, on, ...)						\
	__KK_DD_CAT_A(__kk_dd_lpr_, __KK_DD_SEL1(__VA_ARGS__))(id, on, __VA_ARGS__)
/* The test twice: in the if, for the optimiser; in the site's list entry,
 * for clang -O0, which emits the dead branch (it holds the asm goto's label). */
#define pr_debug_if(cond, fallback, ...) do {					\
	if (__KK_DD_CONST_TRUE(cond))						\
		__kk_dd_lpr(__KK_DD_UNIQUE(__kk_ddebug_), __KK_DD_CONST_TRUE(cond), \
			    __VA_ARGS__);					\
	else									\
		fallback;							\
} while (0)

/* pr_debug_ratelimited(fmt, ...): the rate limit is consulted only once the site is on. */
#define __kk_dd_ratelimited(id, rs, fmt, args) do {				\
	static struct ratelimit_state rs =					\
		RATELIMIT_STATE_INIT(rs, DEFAULT_RATELIMIT_INTERVAL,		\
				     DEFAULT_RATELIMIT_BURST);			\
	DEFINE_DYNAMIC_DEBUG_METADATA(id, pr_fmt(fmt));				\
	if (DYNAMIC_DEBUG_BRANCH(id) && __kk_dynamic_ratelimit(&rs, &id))	\
		__dynamic_pr_debug args;					\
} while (0)
#define __kk_dd_rl_1(id, rs, fmt) __kk_dd_ratelimited(id, rs, fmt, (&id, pr_fmt(fmt)))
#define __kk_dd_rl_9(id, rs, fmt, ...)						\
	__kk_dd_ratelimited(id, rs, fmt, (&id, pr_fmt(fmt), __VA_ARGS__))
#define __kk_dd_rl(id, rs, ...)							\
	__KK_DD_CAT_A(__kk_dd_rl_, __KK_DD_SEL1(__VA_ARGS__))(id, rs, __VA_ARGS__)
#define pr_debug_ratelimited(...)						\
	__kk_dd_rl(__KK_DD_UNIQUE(__kk_ddebug_), __KK_DD_UNIQUE(__kk_ddrs_), __VA_ARGS__)

/*
 * The site's format is @prefix_str when it is a compile-time constant, else
 * "hexdump" (the kernel's rule), so "format <prefix>" selects a dump.
 */
#define dynamic_hex_dump(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii) \
	_dynamic_func_call(__builtin_constant_p(prefix_str) ? (prefix_str) : "hexdump", \
			   __dynamic_hex_dump, prefix_str, prefix_type,		\
			   rowsize, groupsize, buf, len, ascii)
#define print_hex_dump_debug(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii) \
	dynamic_hex_dump(prefix_str, prefix_type, rowsize, groupsize, buf, len, ascii)
#define print_hex_dump_bytes(prefix_str, prefix_type, buf, len)			\
	dynamic_hex_dump(prefix_str, prefix_type, 16, 1, buf, len, 1)

/* ---- registration (one constructor per unit, deduplicated per object) ---------- */

int kk_dyndbg_add_object(struct _ddebug *start, struct _ddebug *stop,
			 struct ddebug_class_map *cstart, struct ddebug_class_map *cstop);
void kk_dyndbg_del_object(struct _ddebug *start, struct ddebug_class_map *cstart);

extern struct _ddebug __start_kk_dyndbg[] __attribute__((__weak__, __visibility__("hidden")));
extern struct _ddebug __stop_kk_dyndbg[] __attribute__((__weak__, __visibility__("hidden")));
extern struct ddebug_class_map __start_kk_dyndbg_classes[]
	__attribute__((__weak__, __visibility__("hidden")));
extern struct ddebug_class_map __stop_kk_dyndbg_classes[]
	__attribute__((__weak__, __visibility__("hidden")));

/*
 * C++ units list their sites in kk_dyndbg_ptrs (see
 * DEFINE_DYNAMIC_DEBUG_METADATA_CLS): an entry may repeat (an inlined copy)
 * or name a descriptor another object already registered; each descriptor is
 * registered once, by the first object that lists it.
 */
int kk_dyndbg_add_ptrs(struct _ddebug *const *start, struct _ddebug *const *stop,
		       struct ddebug_class_map *cstart, struct ddebug_class_map *cstop);
void kk_dyndbg_del_ptrs(struct _ddebug *const *start);
extern struct _ddebug *const __start_kk_dyndbg_ptrs[]
	__attribute__((__weak__, __visibility__("hidden")));
extern struct _ddebug *const __stop_kk_dyndbg_ptrs[]
	__attribute__((__weak__, __visibility__("hidden")));
/*
 * C++ units also list each site's __PRETTY_FUNCTION__ in kk_dyndbg_names:
 * the library names the instantiation from it (docs/dynamic_debug.md,
 * "C++").  Call before kk_dyndbg_add_ptrs(); 0 or -ENOMEM (then the sites
 * are listed and matched by __func__ only).  A name goes with its site.
 */
struct kk_dyndbg_name {
	const struct _ddebug *desc;
	const char *pretty;
};
int kk_dyndbg_add_names(const struct kk_dyndbg_name *start, const struct kk_dyndbg_name *stop);
extern const struct kk_dyndbg_name __start_kk_dyndbg_names[]
	__attribute__((__weak__, __visibility__("hidden")));
extern const struct kk_dyndbg_name __stop_kk_dyndbg_names[]
	__attribute__((__weak__, __visibility__("hidden")));

#ifndef KK_LIBRARY_BUILD	/* see jump_label.h */
/* After the jump-label constructor (101), so the sites' keys are known. */
__attribute__((__constructor__(102), __used__)) static void __kk_dyndbg_ctor(void)
{
	struct _ddebug *start = __start_kk_dyndbg, *stop = __stop_kk_dyndbg;
	struct ddebug_class_map *cstart = __start_kk_dyndbg_classes;
	struct ddebug_class_map *cstop = __stop_kk_dyndbg_classes;
	struct _ddebug *const *pstart = __start_kk_dyndbg_ptrs, *const *pstop = __stop_kk_dyndbg_ptrs;
	const struct kk_dyndbg_name *nstart = __start_kk_dyndbg_names, *nstop = __stop_kk_dyndbg_names;

	if (start == stop && cstart == cstop && pstart == pstop)
		return;
	kk_object_register_begin();	/* the endpoint waits for the whole object */
	if (start != stop || cstart != cstop)
		kk_dyndbg_add_object(start, stop, cstart, cstop);
	if (nstart != nstop)
		kk_dyndbg_add_names(nstart, nstop);
	if (pstart != pstop)
		kk_dyndbg_add_ptrs(pstart, pstop, cstart, cstop);
	kk_object_register_end();
}

/* Runs before the jump-label destructor (101) of the same object. */
__attribute__((__destructor__(102), __used__)) static void __kk_dyndbg_dtor(void)
{
	struct _ddebug *start = __start_kk_dyndbg, *stop = __stop_kk_dyndbg;
	struct ddebug_class_map *cstart = __start_kk_dyndbg_classes;
	struct ddebug_class_map *cstop = __stop_kk_dyndbg_classes;
	struct _ddebug *const *pstart = __start_kk_dyndbg_ptrs, *const *pstop = __stop_kk_dyndbg_ptrs;

	if (pstart != pstop)
		kk_dyndbg_del_ptrs(pstart);
	if (start != stop || cstart != cstop)
		kk_dyndbg_del_object(start, cstart);
}
#endif

#ifdef __cplusplus
}
#endif
#pragma GCC visibility pop
#endif /* KERNELKIT_DYNAMIC_DEBUG_H */
