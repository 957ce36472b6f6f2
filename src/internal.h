/* SPDX-License-Identifier: MIT */
/* Helpers shared inside the library. */
#ifndef KK_INTERNAL_H
#define KK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/*
 * The module name of an ELF object: its file name without the directory, a
 * "lib" prefix or any extension ("/usr/lib/libfoo.so.1" -> "foo").
 */
void kk_object_name(const char *path, char *out, size_t len);

/*
 * Name of the object that contains @addr (see kk_object_name), and its base.
 * The main program's name comes from AT_EXECFN (readlink() of /proc/self/exe
 * only when the auxiliary vector has none), once per process.
 */
void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base);

/* The base and mapped range [lo, hi) of the object that contains @addr (all 0
 * if none).  No syscall: safe in a destructor under a sandbox. */
void kk_addr_range(const void *addr, uintptr_t *base, uintptr_t *lo, uintptr_t *hi);

/* The PROT_* bits of the ELF load segment that holds @addr, as the loader
 * mapped it, or -ENOENT.  For text, where /proc/self/maps cannot be read. */
int kk_addr_segment_prot(const void *addr);

#endif
