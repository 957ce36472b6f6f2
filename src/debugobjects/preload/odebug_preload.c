// SPDX-License-Identifier: MIT
/*
 * libkernelkit-odebug.so: LD_PRELOAD it to have free(), realloc() and
 * munmap() call debug_check_no_obj_freed() on the memory they release, so
 * that freeing memory which still holds an active tracked object is caught
 * (and fixed up) before the memory goes away.
 *
 * It links libkernelkit.so, so a program that links kernelkit itself shares
 * the same tracker table.  Preloading switches tracking on unless
 * KK_DEBUG_OBJECTS=0.
 *
 * realloc(): when the block may move (it grows) the whole old block is
 * checked, since objects in it change address; when it shrinks, only the
 * tail that is released.
 *
 * Recursion: the real functions are looked up with dlsym(RTLD_NEXT) in the
 * constructor; a call that comes in before that (or while dlsym itself
 * allocates) goes to glibc's __libc_free/__libc_realloc or the raw syscall.
 * The checks themselves never allocate: trackers come from kernelkit's own
 * mmap'ed slab, and per-thread state is initial-exec TLS.
 *
 * free() may run in a signal handler that interrupted its thread inside
 * debug objects: the check then only try-locks and takes no pool lock (see
 * src/debugobjects/internal.h); what it cannot check it skips and counts.
 */
#include <dlfcn.h>
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <kernelkit/debugobjects.h>
#include "common/internal.h"

extern void __libc_free(void *p);
extern void *__libc_realloc(void *p, size_t n);

static void (*real_free)(void *);
static void *(*real_realloc)(void *, size_t);
static int (*real_munmap)(void *, size_t);

#define PAGE_ROUND(n)	(((n) + 4095ul) & ~4095ul)

KK_EXPORT void free(void *p)
{
	void (*f)(void *);

	if (p && static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_check_no_obj_freed(p, malloc_usable_size(p));
	f = __atomic_load_n(&real_free, __ATOMIC_ACQUIRE);
	if (f)
		f(p);
	else
		__libc_free(p);
}

KK_EXPORT void *realloc(void *p, size_t n)
{
	void *(*f)(void *, size_t);

	if (p && static_branch_unlikely(&kk_debug_objects_key)) {
		size_t old = malloc_usable_size(p);

		if (n == 0 || n > old)
			__kk_odebug_check_no_obj_freed(p, old);	/* freed, or may move */
		else if (n < old)
			__kk_odebug_check_no_obj_freed((char *)p + n, old - n);
	}
	f = __atomic_load_n(&real_realloc, __ATOMIC_ACQUIRE);
	return f ? f(p, n) : __libc_realloc(p, n);
}

KK_EXPORT int munmap(void *addr, size_t len)
{
	int (*f)(void *, size_t);

	if (len && static_branch_unlikely(&kk_debug_objects_key))
		__kk_odebug_check_no_obj_freed(addr, PAGE_ROUND(len));
	f = __atomic_load_n(&real_munmap, __ATOMIC_ACQUIRE);
	if (f)
		return f(addr, len);
	return (int)syscall(SYS_munmap, addr, len);
}

KK_INIT(KK_INIT_ODEBUG_PRELOAD) static void odebug_preload_init(void)
{
	const char *e = kk_getenv("KK_DEBUG_OBJECTS");
	bool on = true;
	void *f;

	/* dlsym may allocate and free: those calls take the fallbacks above */
	if ((f = dlsym(RTLD_NEXT, "free")) && f != (void *)free)
		__atomic_store_n(&real_free, (void (*)(void *))f, __ATOMIC_RELEASE);
	if ((f = dlsym(RTLD_NEXT, "realloc")) && f != (void *)realloc)
		__atomic_store_n(&real_realloc, (void *(*)(void *, size_t))f, __ATOMIC_RELEASE);
	if ((f = dlsym(RTLD_NEXT, "munmap")) && f != (void *)munmap)
		__atomic_store_n(&real_munmap, (int (*)(void *, size_t))f, __ATOMIC_RELEASE);
	/* an invalid value was already reported by libkernelkit's constructor:
	 * parse quietly, and keep the default (on) */
	if (e)
		kk_parse_bool(e, &on);
	if (on)
		kk_debug_objects_enable();
}
