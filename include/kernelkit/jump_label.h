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
 */
#ifndef KERNELKIT_JUMP_LABEL_H
#define KERNELKIT_JUMP_LABEL_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if !defined(__x86_64__) && !defined(KK_NO_JUMP_LABEL)
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

#define STATIC_KEY_INIT_TRUE	{ .enabled = 1, .type = 1, .name = 0, .array = 0, .priv = 0 }
#define STATIC_KEY_INIT_FALSE	{ .enabled = 0, .type = 0, .name = 0, .array = 0, .priv = 0 }
#define STATIC_KEY_INIT		STATIC_KEY_INIT_FALSE
#define STATIC_KEY_TRUE_INIT	{ .key = STATIC_KEY_INIT_TRUE }
#define STATIC_KEY_FALSE_INIT	{ .key = STATIC_KEY_INIT_FALSE }

#define __KK_KEY_INIT_ARR(val, nm, arr)						\
	{ .key = { .enabled = (val), .type = (val), .name = (nm), .array = (arr), .priv = 0 } }
#define __KK_KEY_INIT(val, nm)	__KK_KEY_INIT_ARR(val, nm, 0)

#define DEFINE_STATIC_KEY_TRUE(name)	struct static_key_true name = __KK_KEY_INIT(1, #name)
#define DEFINE_STATIC_KEY_FALSE(name)	struct static_key_false name = __KK_KEY_INIT(0, #name)
#define DEFINE_STATIC_KEY_TRUE_RO(name)	DEFINE_STATIC_KEY_TRUE(name)
#define DEFINE_STATIC_KEY_FALSE_RO(name) DEFINE_STATIC_KEY_FALSE(name)
#define DECLARE_STATIC_KEY_TRUE(name)	extern struct static_key_true name
#define DECLARE_STATIC_KEY_FALSE(name)	extern struct static_key_false name

#define DEFINE_STATIC_KEY_ARRAY_TRUE(name, count)				\
	struct static_key_true name[count] = {					\
		[0 ... (count) - 1] = __KK_KEY_INIT_ARR(1, #name, &name[0].key) }
#define DEFINE_STATIC_KEY_ARRAY_FALSE(name, count)				\
	struct static_key_false name[count] = {					\
		[0 ... (count) - 1] = __KK_KEY_INIT_ARR(0, #name, &name[0].key) }
#define DECLARE_STATIC_KEY_ARRAY_TRUE(name, count)  extern struct static_key_true name[count]
#define DECLARE_STATIC_KEY_ARRAY_FALSE(name, count) extern struct static_key_false name[count]

/* ---- reading a key ---------------------------------------------------------- */

static inline int static_key_count(struct static_key *key)
{
	return __atomic_load_n(&key->enabled, __ATOMIC_ACQUIRE);
}

#define __kk_key_type_ok(x)							\
	(__builtin_types_compatible_p(__typeof__(*(x)), struct static_key) ||	\
	 __builtin_types_compatible_p(__typeof__(*(x)), struct static_key_true) || \
	 __builtin_types_compatible_p(__typeof__(*(x)), struct static_key_false))

#define static_key_enabled(x) ({						\
	_Static_assert(__kk_key_type_ok(x), "static_key_enabled: not a key"); \
	static_key_count((struct static_key *)(x)) > 0;				\
})

/* ---- changing a key: 0 or -errno ---------------------------------------------- */

int static_key_slow_inc(struct static_key *key);
int static_key_slow_dec(struct static_key *key);
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
 * (the fallback without membarrier SYNC_CORE), "stop-machine",
 * "single-thread" or "unused". */
const char *kk_jump_label_sync_method(void);

/* ---- branch sites ------------------------------------------------------------------ */

/*
 * One entry per site, in the section kk_jump_table of the object that holds
 * the site.  Offsets are relative to the field itself so the table needs no
 * relocation.  @key points at a per-site slot that holds the key's address:
 * the slot gets an ordinary data relocation, which is what lets a site in a
 * shared object use a key defined in another one.  Bit 0 of @key is the
 * branch polarity: the site jumps when (enabled XOR branch).
 *
 * The section is writable ("aw"): when the object registers, the library
 * sorts the table in place so that the entries of each key are adjacent,
 * re-basing the offsets of the entries it moves (the kernel's
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
	__attribute__((weak, visibility("hidden")));
extern const struct jump_entry __stop_kk_jump_table[]
	__attribute__((weak, visibility("hidden")));

/* The library's own units (KK_LIBRARY_BUILD) have no sites and it is never
 * unloaded: they register nothing and spend nothing at load or exit. */
#ifndef KK_LIBRARY_BUILD
__attribute__((constructor(101), used)) static void __kk_jump_label_ctor(void)
{
	const struct jump_entry *start = __start_kk_jump_table, *stop = __stop_kk_jump_table;

	if (start != stop)
		kk_jump_label_add_object(start, stop);
}

/* Always called: an object may define keys that only other objects use. */
__attribute__((destructor(101), used)) static void __kk_jump_label_dtor(void)
{
	kk_jump_label_del_object(__start_kk_jump_table, __stop_kk_jump_table,
				 (const void *)&__kk_jump_label_dtor);
}
#endif


extern int __kk_wrong_branch_type(void)
	__attribute__((error("static_branch_*() needs a struct static_key_true or _false")));

#define __kk_is_true_key(x)  __builtin_types_compatible_p(__typeof__(*(x)), struct static_key_true)
#define __kk_is_false_key(x) __builtin_types_compatible_p(__typeof__(*(x)), struct static_key_false)

#ifndef KK_NO_JUMP_LABEL

#define JUMP_LABEL_NOP_SIZE 5

#define __KK_JUMP_TABLE_ENTRY							\
	".pushsection kk_jump_table, \"aw\"\n\t"				\
	".balign 8\n\t"								\
	".long 1b - ., %l[l_yes] - .\n\t"					\
	".quad %c0 - . + %c1\n\t"						\
	".popsection\n\t"

#define __kk_static_branch(keyp, branch, insn) ({				\
	__label__ l_yes, l_done;						\
	static struct static_key *const __kk_kref				\
		__attribute__((used, aligned(8))) = (keyp);			\
	bool __kk_ret;								\
	asm goto("1: " insn "\n\t" __KK_JUMP_TABLE_ENTRY			\
		 : : "i"(&__kk_kref), "i"(branch) : : l_yes);			\
	__kk_ret = false;							\
	goto l_done;								\
l_yes:										\
	__kk_ret = true;							\
l_done:										\
	__kk_ret;								\
})

/* A site that starts as a 5-byte NOP, or as a jmp rel32 to the branch. */
#define arch_static_branch(keyp, branch)					\
	__kk_static_branch(keyp, branch, ".byte 0x0f,0x1f,0x44,0x00,0x00")
#define arch_static_branch_jump(keyp, branch)					\
	__kk_static_branch(keyp, branch, ".byte 0xe9\n\t.long %l[l_yes] - (1b + 5)")

#define static_branch_likely(x)							\
	__builtin_expect(__builtin_choose_expr(__kk_is_true_key(x),		\
		!arch_static_branch(&(x)->key, true),				\
		__builtin_choose_expr(__kk_is_false_key(x),			\
			!arch_static_branch_jump(&(x)->key, true),		\
			__kk_wrong_branch_type())), 1)

#define static_branch_unlikely(x)						\
	__builtin_expect(__builtin_choose_expr(__kk_is_true_key(x),		\
		arch_static_branch_jump(&(x)->key, false),			\
		__builtin_choose_expr(__kk_is_false_key(x),			\
			arch_static_branch(&(x)->key, false),			\
			__kk_wrong_branch_type())), 0)

#else /* KK_NO_JUMP_LABEL: load + test + branch */

#define __kk_branch_check(x)							\
	__builtin_choose_expr(__kk_is_true_key(x) || __kk_is_false_key(x),	\
		__atomic_load_n(&(x)->key.enabled, __ATOMIC_RELAXED) > 0,	\
		__kk_wrong_branch_type())

#define static_branch_likely(x)		__builtin_expect(__kk_branch_check(x), 1)
#define static_branch_unlikely(x)	__builtin_expect(__kk_branch_check(x), 0)

#endif /* KK_NO_JUMP_LABEL */

#ifdef __cplusplus
}
#endif

#include <kernelkit/jump_label_ratelimit.h>

#endif /* KERNELKIT_JUMP_LABEL_H */
