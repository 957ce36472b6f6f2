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
 * The main program's name costs one readlink() per process, the first time.
 */
void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base);

/* The base and mapped range [lo, hi) of the object that contains @addr (all 0
 * if none).  No syscall: safe in a destructor under a sandbox. */
void kk_addr_range(const void *addr, uintptr_t *base, uintptr_t *lo, uintptr_t *hi);

#endif
