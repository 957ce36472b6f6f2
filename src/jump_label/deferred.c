// SPDX-License-Identifier: MIT
/*
 * Deferred static keys (jump_label_ratelimit.h): the last decrement of a key
 * runs only after a timeout, on the library's worker (src/common/workqueue.c),
 * as the kernel runs jump_label_update_timeout() from the system workqueue.
 *
 * The struct kk_delayed_work of a key holds a struct kk_work in opaque
 * storage.  Keys may live in shared objects: when one is unloaded, its
 * pending decrements are cancelled (jump_label_deferred_forget_object()) before its
 * memory goes away, and one that runs is waited for.
 */
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdint.h>

#include <kernelkit/jump_label.h>
#include "common/internal.h"
#include "jump_label/internal.h"

#define fail jump_label_fail

_Static_assert(sizeof(struct kk_work) <= sizeof(((struct kk_delayed_work *)0)->__work),
	       "struct kk_delayed_work has no room for a struct kk_work");
_Static_assert(_Alignof(struct kk_work) <= _Alignof(unsigned long long),
	       "struct kk_delayed_work is not aligned for a struct kk_work");

static struct kk_work *dw_work(struct kk_delayed_work *dw)
{
	return (struct kk_work *)(void *)dw->__work;
}

static struct kk_delayed_work *dw_of(struct kk_work *w)
{
	return (struct kk_delayed_work *)(void *)((char *)w - offsetof(struct kk_delayed_work, __work));
}

/* The kernel's jump_label_update_timeout(). */
static void dw_timeout(struct kk_work *w)
{
	struct kk_delayed_work *dw = dw_of(w);

	static_key_slow_dec(__atomic_load_n(&dw->key, __ATOMIC_ACQUIRE));
}

static void dw_init(struct kk_delayed_work *dw, struct static_key *key)
{
	__atomic_store_n(&dw->key, key, __ATOMIC_RELEASE);
	__atomic_store_n(&dw_work(dw)->fn, dw_timeout, __ATOMIC_RELEASE);
}

KK_EXPORT int __static_key_slow_dec_deferred(struct static_key *key, struct kk_delayed_work *work,
				   unsigned long timeout)
{
	int v, ret;

	if (!key || !work)
		return fail(-EINVAL, "NULL key");
	/* Above one reference there is nothing to patch: drop it now. */
	if (jump_label_dec_not_one(key, &v))
		return 0;
	if (v <= 0)
		return fail(-EINVAL, "deferred decrement of a key whose count is %d", v);
	/* schedule_delayed_work(): a no-op while the decrement is pending. */
	dw_init(work, key);
	ret = kk_queue_work(dw_work(work), (uint64_t)timeout * 1000000ull);
	if (ret < 0)
		return fail(ret, "cannot start the worker thread for a deferred decrement");
	return 0;
}

KK_EXPORT void __static_key_deferred_flush(struct static_key *key, struct kk_delayed_work *work)
{
	(void)key;
	/* flush_delayed_work(); the work was never queued if it has no function. */
	if (work && __atomic_load_n(&dw_work(work)->fn, __ATOMIC_ACQUIRE))
		kk_flush_work(dw_work(work));
}

KK_EXPORT void jump_label_rate_limit(struct static_key_deferred *key, unsigned long rl)
{
	key->timeout = rl;
	dw_init(&key->work, &key->key);
}

/* ---- unloading ----------------------------------------------------------------------- */

#define JL_MAX_RANGES	16

struct obj_ranges {
	uintptr_t self;
	int n;
	uintptr_t lo[JL_MAX_RANGES], hi[JL_MAX_RANGES];
};

/* dl_iterate_phdr() callback: record the PT_LOAD ranges of the object holding self. */
static int find_ranges(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct obj_ranges *r = arg;
	bool found = false;

	(void)size;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < info->dlpi_phnum; i++) {
			const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
			uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

			if (ph->p_type != PT_LOAD)
				continue;
			if (pass == 0 && r->self >= lo && r->self < hi)
				found = true;
			if (pass == 1 && r->n < JL_MAX_RANGES) {
				r->lo[r->n] = lo;
				r->hi[r->n++] = hi;
			}
		}
		if (!found)
			return 0;
	}
	return 1;
}

static bool in_ranges(const struct obj_ranges *r, uintptr_t a)
{
	for (int i = 0; i < r->n; i++)
		if (a >= r->lo[i] && a < r->hi[i])
			return true;
	return false;
}

/* Work that lives in the object, or whose function does. */
static bool work_in_object(const struct kk_work *w, void (*fn)(struct kk_work *), void *arg)
{
	const struct obj_ranges *r = arg;

	return in_ranges(r, (uintptr_t)w) || in_ranges(r, (uintptr_t)fn);
}

/*
 * Called from the object's destructor (inside dlclose(), maybe in a seccomp
 * sandbox): dl_iterate_phdr() and the worker's lock only, no system call but
 * futex waits.
 */
void jump_label_deferred_forget_object(const void *self)
{
	struct obj_ranges r = { .self = (uintptr_t)self };

	/* Most processes never defer anything: then skip looking up the object. */
	if (!self || !kk_work_ever_queued() || !dl_iterate_phdr(find_ranges, &r) || !r.n)
		return;
	kk_cancel_work_matching(work_in_object, &r);
}
