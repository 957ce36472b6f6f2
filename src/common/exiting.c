// SPDX-License-Identifier: MIT
/*
 * Is the process exiting?  Every object's destructors ask before they
 * unregister the object's sites and keys: an exiting process need not undo
 * its registries one site at a time (the kernel does not unload its modules
 * at shutdown either; nginx -t spent 106000 instructions there, ~130 a site).
 *
 * The answer must never be yes while an object can still be unmapped: a
 * destructor that runs in dlclose() has to unregister, or the registries
 * keep pointers into unmapped memory.  So the process is exiting from the
 * moment a destructor of the main program runs:
 *  - the main program is never unloaded: its destructors run only in exit()
 *    (a return from main, exit() in any thread or in a fork child), from
 *    _dl_fini, or from a static program's call of its fini array;
 *  - _dl_fini keeps the main program first when it orders the objects, and
 *    it has raised every object's open count before it calls any
 *    destructor: from there on no dlclose() unmaps anything until _exit;
 *  - what exit() runs before _dl_fini (the program's atexit handlers, the
 *    destructors of the main program's static C++ objects) is not yet
 *    "exiting": a dlclose() there unregisters, as anywhere.
 * Why not an atexit handler registered at load: a shared library's
 * constructors run before __libc_start_main registers _dl_fini, so such a
 * handler runs after _dl_fini (from the library's own __cxa_finalize, inside
 * it): too late.  One registered later (the first registration from the
 * main program) runs before the handlers registered before it, whose
 * dlclose() would then find the process "exiting".
 * A program none of whose units includes a kernelkit header has no such
 * destructor: its libraries' objects are unregistered one by one at exit, as
 * at dlclose() (correct, and as slow as before).
 */
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/internal.h"

atomic_bool kk_exiting_flag;
/* The main program's mapped range [lo, hi): it never moves, also across fork. */
static _Atomic uintptr_t main_lo, main_hi;

/* dl_iterate_phdr() lists the main program first. */
static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t lo = UINTPTR_MAX, hi = 0;

	(void)size;
	(void)data;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi) {
		atomic_store_explicit(&main_lo, lo, memory_order_relaxed);
		atomic_store_explicit(&main_hi, hi, memory_order_release);	/* lo first */
	}
	return 1;
}

/* No syscall (dl_iterate_phdr() makes none): destructors run in sandboxes. */
bool kk_exiting_slow(const void *self)
{
	uintptr_t a = (uintptr_t)self, hi;

	if (!self)
		return false;
	if (!(hi = atomic_load_explicit(&main_hi, memory_order_acquire))) {
		dl_iterate_phdr(first_object, NULL);
		hi = atomic_load_explicit(&main_hi, memory_order_acquire);
	}
	if (a >= hi || a < atomic_load_explicit(&main_lo, memory_order_relaxed))
		return false;
	atomic_store_explicit(&kk_exiting_flag, true, memory_order_relaxed);
	return true;
}
