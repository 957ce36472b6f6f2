/* SPDX-License-Identifier: MIT */
/*
 * Static keys: branches that cost one NOP until they are switched on, and are
 * switched by patching the code of a running, multi-threaded process.
 *
 * The API is the kernel's (Documentation/staging/static-keys.rst):
 *
 *	DEFINE_STATIC_KEY_FALSE(key);
 *	if (static_branch_unlikely(&key))
 *		do_unlikely_thing();
 *	static_branch_enable(&key);
 *
 * Differences from the kernel, all additive:
 *  - The functions that change a key return 0 or a negative errno instead of
 *    void (kernel code that ignores the result compiles unchanged).  On error
 *    nothing changed: the key, its count and every site are as before.
 *    kk_jump_label_strerror() describes the last failure of the calling thread.
 *  - The _cpuslocked variants are for callers that already hold the patching
 *    lock, jump_label_lock().  User space has no CPU-hotplug lock; this lock is
 *    the analogue of the kernel's jump_label_mutex.
 *  - The queued API of the 2026 RFC (static_key_enable_queued() ...) batches
 *    the changes of any number of keys into one patch with three syncs.
 *  - Deferred keys take their timeout in milliseconds, not jiffies.
 *
 * Publication order: when static_key_enabled() returns true, every site of the
 * key already takes the enabled branch.  On the way down the flag is cleared
 * first and the sites follow, so a false flag may briefly coexist with sites
 * that still take the enabled branch (the kernel's order).  A thread that
 * calls a site while another thread switches the key observes either the old
 * or the new value, never anything else.
 *
 * Build with -DKK_NO_JUMP_LABEL (automatic on architectures without a
 * patcher) to get a load+test+branch on the key's count with the same API.
 *
 * Languages: C (C99 to C23, GNU or ISO) and C++ (C++11 to C++23) both work,
 * warning-free under -Wall -Wextra -pedantic, with the same code: a disabled
 * site is the same single NOP (5 bytes on x86_64, 4 on aarch64) and the same
 * kk_jump_table entry in both.  A site may be anywhere a statement may: in
 * inline functions, templates, member functions and lambdas, also in -fPIC
 * shared objects and header-only libraries, on a key defined in any object.  A wrong key type is a compile error in both.  Differences:
 *  - DEFINE_STATIC_KEY_ARRAY_* cannot have "static" or an attribute in front
 *    (C: it begins with __extension__; C++: it is an alias of a
 *    constant-initialised array).
 *  - STATIC_KEY_{TRUE,FALSE}_INIT initialise a static object only in GNU C
 *    (ISO C has no constant compound literal before C23), as in the kernel.
 * docs/kernel_api.md lists every kernel name and how kernelkit differs.
 */
#ifndef KERNELKIT_JUMP_LABEL_H
#define KERNELKIT_JUMP_LABEL_H

#include <stdbool.h>
#include <stdint.h>

/* Our declarations stay default-visibility even in a program that includes us
 * after "#pragma GCC visibility push(hidden)" or builds with -fvisibility=hidden. */
#pragma GCC visibility push(default)

#ifdef __cplusplus
extern "C" {
#endif

/* The architectures with a code patcher; elsewhere a site is load+test+branch. */
#if !defined(__x86_64__) && !defined(__aarch64__) && !defined(KK_NO_JUMP_LABEL)
#define KK_NO_JUMP_LABEL 1
#endif

struct static_key {
	int enabled;		/* reference count; 0 = disabled */
	int type;		/* initial value: 1 for a TRUE key */
	const char *name;	/* for listings; NULL for STATIC_KEY_INIT keys */
	const struct static_key *array;	/* first element, for DEFINE_STATIC_KEY_ARRAY_* */
	void *priv;		/* the library's record of this key */
};

struct static_key_true {
	struct static_key key;
};

struct static_key_false {
	struct static_key key;
};

/*
 * Initializers are positional: designated initializers do not exist in C++
 * before C++20.  STATIC_KEY_TRUE_INIT and STATIC_KEY_FALSE_INIT are values, as
 * in the kernel (`key = STATIC_KEY_FALSE_INIT;`): a compound literal in C, a
 * functional cast in C++.
 */
#define STATIC_KEY_INIT_TRUE	{ 1, 1, 0, 0, 0 }
#define STATIC_KEY_INIT_FALSE	{ 0, 0, 0, 0, 0 }
#define STATIC_KEY_INIT		STATIC_KEY_INIT_FALSE
/*
 * ISO C has no constant compound literal, so `-pedantic` refuses
 * STATIC_KEY_FALSE_INIT inside the initializer of a static object (GNU C takes
 * it, as the kernel does).  Headers that embed a key in a static object use
 * these braced forms, which are valid in every dialect.
 */
#define __KK_STATIC_KEY_TRUE_BRACED	{ STATIC_KEY_INIT_TRUE }
#define __KK_STATIC_KEY_FALSE_BRACED	{ STATIC_KEY_INIT_FALSE }
#ifdef __cplusplus
#define STATIC_KEY_TRUE_INIT	static_key_true{ STATIC_KEY_INIT_TRUE }
#define STATIC_KEY_FALSE_INIT	static_key_false{ STATIC_KEY_INIT_FALSE }
#else
#define STATIC_KEY_TRUE_INIT	((struct static_key_true){ STATIC_KEY_INIT_TRUE })
#define STATIC_KEY_FALSE_INIT	((struct static_key_false){ STATIC_KEY_INIT_FALSE })
#endif

#define __KK_KEY_INIT_ARR(val, nm, arr)	{ { (val), (val), (nm), (arr), 0 } }
#define __KK_KEY_INIT(val, nm)		__KK_KEY_INIT_ARR(val, nm, 0)

#define DEFINE_STATIC_KEY_TRUE(name)	struct static_key_true name = __KK_KEY_INIT(1, #name)
#define DEFINE_STATIC_KEY_FALSE(name)	struct static_key_false name = __KK_KEY_INIT(0, #name)
#define DEFINE_STATIC_KEY_TRUE_RO(name)	DEFINE_STATIC_KEY_TRUE(name)
#define DEFINE_STATIC_KEY_FALSE_RO(name) DEFINE_STATIC_KEY_FALSE(name)
#define DECLARE_STATIC_KEY_TRUE(name)	extern struct static_key_true name
#define DECLARE_STATIC_KEY_FALSE(name)	extern struct static_key_false name

/* ---- key types: what static_branch_*() accepts ------------------------------------ */

#ifdef __cplusplus
}	/* extern "C": templates need C++ linkage */
extern "C++" {
template <typename T> struct __kk_key_traits {
	enum { is_key = 0, is_branch = 0, is_true = 0 };
};
template <> struct __kk_key_traits<struct static_key> {
	enum { is_key = 1, is_branch = 0, is_true = 0 };
};
template <> struct __kk_key_traits<struct static_key_true> {
	enum { is_key = 1, is_branch = 1, is_true = 1 };
};
template <> struct __kk_key_traits<struct static_key_false> {
	enum { is_key = 1, is_branch = 1, is_true = 0 };
};
template <typename T> struct __kk_key_traits<const T> : __kk_key_traits<T> {};
template <typename T> struct __kk_key_traits<T &> : __kk_key_traits<T> {};

/*
 * DEFINE_STATIC_KEY_ARRAY_*: C++ has no range designator.  The keys live in
 * a wrapper whose elements are built by a constexpr function over an index
 * pack (constant initialisation: they hold their values before any
 * constructor runs), and the array itself is an alias of the wrapper, so its
 * type is exactly struct static_key_xxx[count].
 */
template <unsigned long... I> struct __kk_seq {};
template <class A, class B> struct __kk_seq_cat;
template <unsigned long... I, unsigned long... J>
struct __kk_seq_cat<__kk_seq<I...>, __kk_seq<J...> > {
	typedef __kk_seq<I..., (sizeof...(I) + J)...> type;
};
template <unsigned long N> struct __kk_make_seq {
	typedef typename __kk_seq_cat<typename __kk_make_seq<N / 2>::type,
				      typename __kk_make_seq<N - N / 2>::type>::type type;
};
template <> struct __kk_make_seq<0> { typedef __kk_seq<> type; };
template <> struct __kk_make_seq<1> { typedef __kk_seq<0> type; };

template <class K, unsigned long N> struct __kk_key_array {
	K keys[N];
};
template <class K, unsigned long N, unsigned long... I>
constexpr __kk_key_array<K, N> __kk_key_array_init(__kk_seq<I...>, int val, const char *name,
						   const struct static_key *first)
{
	return __kk_key_array<K, N>{ { ((void)I, K{ { val, val, name, first, 0 } })... } };
}
}	/* extern "C++" */
extern "C" {

#define __KK_KEY_ARRAY(ktype, val, name, count)					\
	extern struct ktype name[count]						\
		__attribute__((__alias__("__kk_keys_" #name)));			\
	static __kk_key_array<struct ktype, (count)> __kk_keys_##name		\
		__asm__("__kk_keys_" #name) __attribute__((__used__)) =		\
		__kk_key_array_init<struct ktype, (count)>(			\
			__kk_make_seq<(count)>::type(), (val), #name, &name[0].key)

#define __kk_is_key(x)		(__kk_key_traits<__typeof__(*(x))>::is_key)
#define __kk_is_branch_key(x)	(__kk_key_traits<__typeof__(*(x))>::is_branch)
#define __kk_is_true_key(x)	(__kk_key_traits<__typeof__(*(x))>::is_true)
#define __kk_is_plain_key(x)	(__kk_is_key(x) && !__kk_is_branch_key(x))
#define __KK_CHECK_BRANCH(x)							\
	static_assert(__kk_is_branch_key(x),					\
		      "static_branch_*() needs a struct static_key_true or _false")
#define __KK_CHECK_PLAIN(x)							\
	static_assert(__kk_is_plain_key(x), "static_key_true/false() need a struct static_key")
#define __KK_CONSTEXPR		constexpr

#else /* C */

/* The range designator is GNU C: __extension__ keeps -pedantic quiet.  In C
 * the definition cannot take a storage class ("static") in front. */
#define __KK_KEY_ARRAY(ktype, val, name, count)					\
	__extension__ struct ktype name[count] = {				\
		[0 ... (count) - 1] = __KK_KEY_INIT_ARR(val, #name, &name[0].key) }

#define __kk_types_eq(x, t)	__builtin_types_compatible_p(__typeof__(*(x)), t)
#define __kk_is_true_key(x)	(__kk_types_eq(x, struct static_key_true) ||	\
				 __kk_types_eq(x, const struct static_key_true))
#define __kk_is_false_key(x)	(__kk_types_eq(x, struct static_key_false) ||	\
				 __kk_types_eq(x, const struct static_key_false))
#define __kk_is_plain_key(x)	(__kk_types_eq(x, struct static_key) ||		\
				 __kk_types_eq(x, const struct static_key))
#define __kk_is_branch_key(x)	(__kk_is_true_key(x) || __kk_is_false_key(x))
#define __kk_is_key(x)		(__kk_is_branch_key(x) || __kk_is_plain_key(x))

/* __error__, not error: programs #define error (OpenSSH does). */
extern int __kk_wrong_branch_type(void)
	__attribute__((__error__("static_branch_*() needs a struct static_key_true or _false")));
extern struct static_key *__kk_wrong_key_type(void)
	__attribute__((__error__("not a struct static_key, static_key_true or static_key_false")));
#define __KK_CHECK_BRANCH(x)							\
	(void)__builtin_choose_expr(__kk_is_branch_key(x), 0, __kk_wrong_branch_type())
#define __KK_CHECK_PLAIN(x)							\
	(void)__builtin_choose_expr(__kk_is_plain_key(x), 0, __kk_wrong_key_type())
#define __KK_CONSTEXPR

#endif /* C */

/*
 * The key inside a static_key_true/_false.  C converts the pointer (the key
 * is the first member) so that a wrong type reaches the __error__ check
 * instead of stopping at a missing member first; C++'s static_assert is
 * reported whatever follows.
 */
#ifdef __cplusplus
#define __kk_branch_key(x)	(&(x)->key)
#else
#define __kk_branch_key(x)	((struct static_key *)(x))
#endif

#define DEFINE_STATIC_KEY_ARRAY_TRUE(name, count)				\
	__KK_KEY_ARRAY(static_key_true, 1, name, count)
#define DEFINE_STATIC_KEY_ARRAY_FALSE(name, count)				\
	__KK_KEY_ARRAY(static_key_false, 0, name, count)
#define DEFINE_STATIC_KEY_ARRAY_TRUE_RO(name, count)				\
	DEFINE_STATIC_KEY_ARRAY_TRUE(name, count)
#define DEFINE_STATIC_KEY_ARRAY_FALSE_RO(name, count)				\
	DEFINE_STATIC_KEY_ARRAY_FALSE(name, count)
#define DECLARE_STATIC_KEY_ARRAY_TRUE(name, count)  extern struct static_key_true name[count]
#define DECLARE_STATIC_KEY_ARRAY_FALSE(name, count) extern struct static_key_false name[count]

/* ---- reading a key ---------------------------------------------------------- */

static inline int static_key_count(struct static_key *key)
{
	return __atomic_load_n(&key->enabled, __ATOMIC_ACQUIRE);
}

#ifdef __cplusplus
}
extern "C++" {
/* static_key_enabled() takes any of the three key types, and nothing else. */
static inline struct static_key *__kk_key_of(const struct static_key *k)
{
	return const_cast<struct static_key *>(k);
}
static inline struct static_key *__kk_key_of(const struct static_key_true *k)
{
	return const_cast<struct static_key *>(&k->key);
}
static inline struct static_key *__kk_key_of(const struct static_key_false *k)
{
	return const_cast<struct static_key *>(&k->key);
}
}
extern "C" {
#define static_key_enabled(x)	(static_key_count(__kk_key_of(x)) > 0)
#else
#define static_key_enabled(x)							\
	(static_key_count((struct static_key *)					\
		__builtin_choose_expr(__kk_is_key(x), (x), __kk_wrong_key_type())) > 0)
#endif

#define jump_label_enabled	static_key_enabled

/* ---- kernel boot plumbing: always done in a process ----------------------- */

/* True from the start: the library is ready before the first constructor
 * that could use a key (the kernel's is false until jump_label_init()). */
extern bool static_key_initialized;
#define STATIC_KEY_CHECK_USE(key)	((void)(key))
/* No-ops, for code that calls them. */
void jump_label_init(void);
void jump_label_init_ro(void);

enum jump_label_type {
	JUMP_LABEL_NOP = 0,
	JUMP_LABEL_JMP,
};

/* ---- the kernel's config-dependent forms (IS_ENABLED(CONFIG_X)) ------------ */

/*
 * __KK_IS_ENABLED(CONFIG_X) is 1 when CONFIG_X or CONFIG_X_MODULE is
 * defined as 1 and 0 otherwise (undefined), as the kernel's IS_ENABLED(), by
 * the kconfig placeholder technique: the program needs no IS_ENABLED().
 */
#define __KK_ARG_PLACEHOLDER_1			0,
#define __kk_take_second_arg(ignored, val, ...)	val
#define __kk_is_defined(x)			___kk_is_defined(x)
#define ___kk_is_defined(val)			____kk_is_defined(__KK_ARG_PLACEHOLDER_##val)
#define ____kk_is_defined(arg1_or_junk)		__kk_take_second_arg(arg1_or_junk 1, 0, 0)
#define __KK_IS_ENABLED(option)							\
	(__kk_is_defined(option) || __kk_is_defined(option##_MODULE))
/* The same, as one preprocessing token 0 or 1 (for pasting). */
#define __KK_IS_ENABLED_TOKEN(option)	__kk_or(__kk_is_defined(option), __kk_is_defined(option##_MODULE))
#define __kk_or(a, b)			___kk_or(a, b)
#define ___kk_or(a, b)			__kk_or_##a##b
#define __kk_or_00			0
#define __kk_or_01			1
#define __kk_or_10			1
#define __kk_or_11			1
#define __KK_PASTE(a, b)		___KK_PASTE(a, b)
#define ___KK_PASTE(a, b)		a##b

#define __KK_DEFINE_STATIC_KEY_1(name)		DEFINE_STATIC_KEY_TRUE(name)
#define __KK_DEFINE_STATIC_KEY_0(name)		DEFINE_STATIC_KEY_FALSE(name)
#define __KK_DEFINE_STATIC_KEY_RO_1(name)	DEFINE_STATIC_KEY_TRUE_RO(name)
#define __KK_DEFINE_STATIC_KEY_RO_0(name)	DEFINE_STATIC_KEY_FALSE_RO(name)
#define __KK_DECLARE_STATIC_KEY_1(name)		DECLARE_STATIC_KEY_TRUE(name)
#define __KK_DECLARE_STATIC_KEY_0(name)		DECLARE_STATIC_KEY_FALSE(name)
/* A TRUE key when the option is enabled, a FALSE one otherwise. */
#define DEFINE_STATIC_KEY_MAYBE(cfg, name)					\
	__KK_PASTE(__KK_DEFINE_STATIC_KEY_, __KK_IS_ENABLED_TOKEN(cfg))(name)
#define DEFINE_STATIC_KEY_MAYBE_RO(cfg, name)					\
	__KK_PASTE(__KK_DEFINE_STATIC_KEY_RO_, __KK_IS_ENABLED_TOKEN(cfg))(name)
#define DECLARE_STATIC_KEY_MAYBE(cfg, name)					\
	__KK_PASTE(__KK_DECLARE_STATIC_KEY_, __KK_IS_ENABLED_TOKEN(cfg))(name)

/* ---- changing a key: 0 or -errno ---------------------------------------------- */

int static_key_slow_inc(struct static_key *key);
int static_key_slow_dec(struct static_key *key);
/* Take a reference only if the key is already enabled (nothing to patch, no
 * lock): true if taken.  The kernel's, for paths that must not sleep. */
bool static_key_fast_inc_not_disabled(struct static_key *key);
int static_key_enable(struct static_key *key);
int static_key_disable(struct static_key *key);

/* For callers that hold jump_label_lock(); -EPERM otherwise. */
int static_key_slow_inc_cpuslocked(struct static_key *key);
int static_key_slow_dec_cpuslocked(struct static_key *key);
int static_key_enable_cpuslocked(struct static_key *key);
int static_key_disable_cpuslocked(struct static_key *key);

/* The patching lock.  Not recursive; the plain calls return -EDEADLK under it. */
void jump_label_lock(void);
void jump_label_unlock(void);

/*
 * The queued API: record the new state of any number of keys, then patch all
 * their sites in one batch.  A key queued twice takes its last queued state;
 * an immediate call on a queued key takes it off the queue.  The queue is
 * process-wide.  apply returns 0 or -errno; on error no key changed and the
 * queue is kept.
 */
int static_key_enable_queued(struct static_key *key);
int static_key_disable_queued(struct static_key *key);
int static_key_apply_queued(void);
/* Drop everything queued without applying it. */
void kk_static_key_discard_queued(void);

#define static_branch_inc(x)		static_key_slow_inc(&(x)->key)
#define static_branch_dec(x)		static_key_slow_dec(&(x)->key)
#define static_branch_enable(x)		static_key_enable(&(x)->key)
#define static_branch_disable(x)	static_key_disable(&(x)->key)
#define static_branch_inc_cpuslocked(x)	static_key_slow_inc_cpuslocked(&(x)->key)
#define static_branch_dec_cpuslocked(x)	static_key_slow_dec_cpuslocked(&(x)->key)
#define static_branch_enable_cpuslocked(x)  static_key_enable_cpuslocked(&(x)->key)
#define static_branch_disable_cpuslocked(x) static_key_disable_cpuslocked(&(x)->key)
#define static_branch_enable_queued(x)	static_key_enable_queued(&(x)->key)
#define static_branch_disable_queued(x)	static_key_disable_queued(&(x)->key)

/* ---- process-level extras (no kernel twin) --------------------------------------- */

struct kk_jump_label_stats {
	unsigned long long syncs;	/* cross-CPU syncs: membarrier SYNC_CORE calls */
	unsigned long long batches;	/* patch batches written */
	unsigned long long sites_patched;
	unsigned long long traps;	/* int3 traps emulated while a batch was in flight */
	unsigned long long keys;	/* keys the registry knows now */
	unsigned long long sites;	/* sites of every loaded object */
	unsigned long long objects;	/* ELF objects with sites */
	unsigned long long stopped;	/* batches written under stop_machine (tracer, valgrind) */
	unsigned long long repairs;	/* failed batches finished or undone afterwards */
	unsigned long long stuck;	/* sites emulated now: a failed batch awaits repair */
	unsigned long long signal_syncs; /* syncs done by signalling threads (no membarrier) */
};
void kk_jump_label_get_stats(struct kk_jump_label_stats *st);
/* A description of the calling thread's last failed key change. */
const char *kk_jump_label_strerror(void);
/* How text is written: "proc-mem", "remap" (copy + mremap per page) or "none". */
const char *kk_jump_label_method(void);
/* How the last batch reached the other threads: "membarrier", "signal"
 * (the fallback without membarrier SYNC_CORE), "swap" (rebuilt pages
 * swapped in: no trap, no signal), "stop-machine", "single-thread" or
 * "unused". */
const char *kk_jump_label_sync_method(void);

/*
 * Let the control endpoint switch @key: `kkctl write static_keys 'NAME on'`
 * (or off, 1, 0) calls static_key_enable() or static_key_disable() on it,
 * for whoever may use the endpoint (who may ptrace the process).  A key
 * not exported stays read-only from outside.  @name (1-63 bytes of
 * [A-Za-z0-9_.:-]; NULL: the key's own name) is what `kkctl read
 * static_keys` lists it by and what a write names; one name is one key in
 * the process: a name another key holds is -EEXIST, as is a second name
 * for the same key (the same again is 0).  The export ends with
 * kk_static_key_unexport() (-ENOENT when not exported) or when the object
 * that holds the key is unloaded.  0 or -errno; on error nothing changed.
 * No kernel twin (the kernel's switches are debugfs files written by hand).
 */
int kk_static_key_export(struct static_key *key, const char *name);
int kk_static_key_unexport(struct static_key *key);
#define kk_static_branch_export(x, name)	kk_static_key_export(&(x)->key, (name))
#define kk_static_branch_unexport(x)		kk_static_key_unexport(&(x)->key)

/* ---- branch sites ------------------------------------------------------------------ */

/*
 * One entry per site, in the section kk_jump_table of the object that holds
 * the site.  @code and @target are relative to the field itself, as in the
 * kernel.  @key is absolute: the key's address plus flags, an ordinary data
 * relocation (against the key's symbol in a shared object), which is what
 * lets a site in any object, in any function, use a key defined in any
 * other object.  Bit 0 of @key is the branch polarity: the site jumps when
 * (enabled XOR branch).  Bit 1 is set: it says @key is the address.  (Clear,
 * in objects built with the headers before issue 23: @key is then the
 * offset from the field to a per-site slot holding the key's address; the
 * library reads both.)  The key is 8-aligned, so the bits are free.
 *
 * The section is writable ("aw"): when the object registers, the library
 * sorts the table in place so that the entries of each key are adjacent,
 * re-basing the relative fields of the entries it moves (the kernel's
 * jump_label_sort_entries), and links each key to its run through
 * static_key.priv.  A table that is already grouped is not written.
 */
struct jump_entry {
	int32_t code;
	int32_t target;
	int64_t key;
};

/*
 * Every object (executable or shared library) that includes this header
 * registers its own table when it is loaded and drops it, with the keys that
 * live in it, when it is unloaded.  Registration makes no syscall per key or
 * site and reads no text; the destructor makes none a sandbox would refuse.
 * The bounds are hidden so that each object sees its own; they are weak so
 * that an object without sites links, and then start == stop.  This is also
 * compiled under KK_NO_JUMP_LABEL: the library must handle objects built
 * either way, and the destructor forgets keys that live in an unloaded object.
 */
int kk_jump_label_add_object(const struct jump_entry *start, const struct jump_entry *stop);
void kk_jump_label_del_object(const struct jump_entry *start, const struct jump_entry *stop,
			      const void *self);
extern const struct jump_entry __start_kk_jump_table[]
	__attribute__((__weak__, __visibility__("hidden")));
extern const struct jump_entry __stop_kk_jump_table[]
	__attribute__((__weak__, __visibility__("hidden")));

/*
 * An object's tables are registered by two constructors, this one (101) and
 * dynamic_debug.h's (102).  Between kk_object_register_begin() and
 * kk_object_register_end() the control endpoint does not start, so that it
 * never answers for half an object.  (From the control endpoint's source:
 * no syscall, one store each.)
 */
void kk_object_register_begin(void);
void kk_object_register_end(void);
/* The object's pr_debug tables, under names of this header's own (their type
 * is dynamic_debug.h's): only whether they are empty is looked at. */
extern const char __kk_bound_dyndbg_start[] __asm__("__start_kk_dyndbg")
	__attribute__((__weak__, __visibility__("hidden")));
extern const char __kk_bound_dyndbg_stop[] __asm__("__stop_kk_dyndbg")
	__attribute__((__weak__, __visibility__("hidden")));
extern const char __kk_bound_dyndbg_ptrs_start[] __asm__("__start_kk_dyndbg_ptrs")
	__attribute__((__weak__, __visibility__("hidden")));
extern const char __kk_bound_dyndbg_ptrs_stop[] __asm__("__stop_kk_dyndbg_ptrs")
	__attribute__((__weak__, __visibility__("hidden")));

/* The library's own units (KK_LIBRARY_BUILD) have no sites and it is never
 * unloaded: they register nothing and spend nothing at load or exit. */
#ifndef KK_LIBRARY_BUILD
__attribute__((__constructor__(101), __used__)) static void __kk_jump_label_ctor(void)
{
	const struct jump_entry *start = __start_kk_jump_table, *stop = __stop_kk_jump_table;
	const char *d = __kk_bound_dyndbg_start, *de = __kk_bound_dyndbg_stop;
	const char *dp = __kk_bound_dyndbg_ptrs_start, *dpe = __kk_bound_dyndbg_ptrs_stop;

	if (start == stop)
		return;
	if (d != de || dp != dpe)	/* dynamic_debug.h's constructor ends it */
		kk_object_register_begin();
	kk_jump_label_add_object(start, stop);
}

/* Any address inside this object tells the library which object is going
 * away; a data object, because ISO C has no function-to-object pointer cast. */
static const char __kk_jump_label_self = 0;

/* Always called: an object may define keys that only other objects use. */
__attribute__((__destructor__(101), __used__)) static void __kk_jump_label_dtor(void)
{
	kk_jump_label_del_object(__start_kk_jump_table, __stop_kk_jump_table,
				 &__kk_jump_label_self);
}
#endif

#ifndef KK_NO_JUMP_LABEL

/* The arch's part of a site: JUMP_LABEL_NOP_SIZE, its two instructions
 * (__KK_JUMP_INSN, __KK_NOP_INSN) and how the asm takes the key's address as
 * a symbol (__KK_KEY_OPERAND, printed by __KK_KEY_SYM). */
#if defined(__x86_64__)
#include <kernelkit/arch/x86_64/jump_label.h>
#elif defined(__aarch64__)
#include <kernelkit/arch/aarch64/jump_label.h>
#endif

/*
 * The key must be a constant address, as in the kernel: said by the
 * compiler in one line ("not a constant expression", "initializer element
 * is not constant") rather than by the assembler about the asm operand.
 * The object is never referenced: the optimiser drops it (gcc keeps such
 * constants at -O0: 8 bytes of data, no code).
 */
#define __KK_CHECK_CONST_KEY(keyp)						\
	static __KK_CONSTEXPR const struct static_key *const __kk_const_key	\
		__attribute__((__unused__)) = (keyp)

/*
 * One site, the same asm statement in C and C++.  @jump, a constant, picks
 * the initial instruction: the arch's NOP, or its jump to l_yes.  The entry's
 * key is the key's own address (an absolute ".quad", see struct jump_entry),
 * given to the asm as a symbol (__KK_KEY_OPERAND): no per-site object, so a
 * site in a C++ inline function or template, whose static locals would be
 * interposable symbols in a shared object, is like any other.  The entry
 * goes to kk_jump_table in the section group of the code ("?"), so that when
 * the linker drops a duplicate of a C++ inline function or template (a
 * COMDAT group) it drops the duplicate's entries too.
 * Evaluates to true when the code took the jump.
 */
#define __KK_SITE_ASM								\
	"1:\n\t"								\
	".if %c[j]\n\t"							\
	__KK_JUMP_INSN								\
	".else\n\t"								\
	__KK_NOP_INSN								\
	".endif\n\t"								\
	".pushsection kk_jump_table, \"aw?\"\n\t"				\
	".balign 8\n\t"							\
	".long 1b - ., %l[l_yes] - .\n\t"					\
	".quad " __KK_KEY_SYM " + %c[b] + 2\n\t"				\
	".popsection\n\t"
#define __KK_SITE_OPERANDS(keyp, branch, jump)					\
	[k] __KK_KEY_OPERAND(keyp), [b] "i"(branch), [j] "i"(jump)

#if defined(__cplusplus) && defined(__clang__)
/*
 * clang++: the asm goto sits in a static member function of a local class,
 * always inlined, so the site is the same code in the caller.  clang before
 * 17 checks every asm goto of a function against every asm-goto label of
 * that function (as for computed gotos), and refused a function in which
 * one site's label was in a scope another site was outside of: "cannot jump
 * from this asm goto statement to one of its possible targets" for two
 * sites on either side of an object with a destructor, or one in a try
 * block (LLVM fixed it in 17; ClangBuiltLinux issue 1886).  Not a lambda:
 * a function with a switch or a goto has its lambdas' bodies checked with
 * it.  The member function needs nothing of the caller's but the key, which
 * has static storage (a local class may name the caller's statics and
 * template parameters).  Every clang takes this path, so the one tested is
 * the one used.
 */
#define __kk_static_branch(keyp, branch, jump) (__extension__ ({		\
	__KK_CHECK_CONST_KEY(keyp);						\
	struct __kk_site {							\
		static __attribute__((__always_inline__)) bool take()		\
		{								\
			__asm__ goto(__KK_SITE_ASM				\
				 : : __KK_SITE_OPERANDS(keyp, branch, jump)	\
				 : : l_yes);					\
			return false;						\
		l_yes:								\
			return true;						\
		}							\
	};									\
	__kk_site::take();							\
}))
/*
 * No __builtin_expect around it: after the member function is inlined, the
 * expect of its result (a phi of the asm goto's two ways) put its branch
 * weights on the caller's surrounding branches instead (a loop around a
 * site was made cold: one more jmp per iteration).  The asm goto itself
 * lays the code out, the disabled way falling through; the expect had no
 * effect on clang's code before this path either.
 */
#define __KK_BRANCH_HINT(e, v)	(e)
#else
#define __KK_BRANCH_HINT(e, v)	__builtin_expect(e, v)
#define __kk_static_branch(keyp, branch, jump) (__extension__ ({		\
	__label__ l_yes, l_done;						\
	__KK_CHECK_CONST_KEY(keyp);						\
	bool __kk_ret;								\
	__asm__ goto(__KK_SITE_ASM						\
		 : : __KK_SITE_OPERANDS(keyp, branch, jump)			\
		 : : l_yes);							\
	__kk_ret = false;							\
	goto l_done;								\
l_yes:										\
	__kk_ret = true;							\
l_done:										\
	__kk_ret;								\
}))
#endif

/* The kernel's arch hooks: a site that starts as a NOP, or as a jump. */
#define arch_static_branch(keyp, branch)	__kk_static_branch(keyp, branch, 0)
#define arch_static_branch_jump(keyp, branch)	__kk_static_branch(keyp, branch, 1)

/*
 * The initial instruction is a jump exactly when (likely XOR true-key): a
 * site compiled for its key's default value is a NOP.
 */
#define static_branch_likely(x) __KK_BRANCH_HINT(__extension__ ({		\
	__KK_CHECK_BRANCH(x);							\
	!__kk_static_branch(__kk_branch_key(x), 1, !__kk_is_true_key(x));	\
}), 1)

#define static_branch_unlikely(x) __KK_BRANCH_HINT(__extension__ ({		\
	__KK_CHECK_BRANCH(x);							\
	__kk_static_branch(__kk_branch_key(x), 0, __kk_is_true_key(x));		\
}), 0)

#else /* KK_NO_JUMP_LABEL: load + test + branch */

#define __kk_branch_count(x) (__extension__ ({					\
	__KK_CHECK_BRANCH(x);							\
	__atomic_load_n(&__kk_branch_key(x)->enabled, __ATOMIC_RELAXED) > 0;	\
}))

#define static_branch_likely(x)		__builtin_expect(__kk_branch_count(x), 1)
#define static_branch_unlikely(x)	__builtin_expect(__kk_branch_count(x), 0)

#endif /* KK_NO_JUMP_LABEL */

/* The kernel's config-dependent branch: likely when the option is enabled. */
#define static_branch_maybe(config, x)						\
	(__KK_IS_ENABLED(config) ? static_branch_likely(x) : static_branch_unlikely(x))

/*
 * The kernel's original API, on a plain struct static_key: static_key_false()
 * is an unlikely branch, static_key_true() a likely one.  Both sites start as
 * the NOP, so the key's initial value must match (STATIC_KEY_INIT_FALSE for
 * static_key_false(), STATIC_KEY_INIT_TRUE for static_key_true()), as in the
 * kernel.
 */
#ifndef KK_NO_JUMP_LABEL
#define static_key_false(x) __KK_BRANCH_HINT(__extension__ ({			\
	__KK_CHECK_PLAIN(x);							\
	__kk_static_branch((struct static_key *)(x), 0, 0);			\
}), 0)
#define static_key_true(x) __KK_BRANCH_HINT(__extension__ ({			\
	__KK_CHECK_PLAIN(x);							\
	!__kk_static_branch((struct static_key *)(x), 1, 0);			\
}), 1)
#else
#define __kk_plain_count(x) (__extension__ ({					\
	__KK_CHECK_PLAIN(x);							\
	__atomic_load_n(&((struct static_key *)(x))->enabled, __ATOMIC_RELAXED) > 0; \
}))
#define static_key_false(x)	__builtin_expect(__kk_plain_count(x), 0)
#define static_key_true(x)	__builtin_expect(__kk_plain_count(x), 1)
#endif

#ifdef __cplusplus
}
#endif

#pragma GCC visibility pop

#include <kernelkit/jump_label_ratelimit.h>

#endif /* KERNELKIT_JUMP_LABEL_H */
