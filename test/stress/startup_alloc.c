// SPDX-License-Identifier: MIT
/*
 * A guest allocates nothing at load: the library's constructors (control
 * files, settings, dynamic debug, panic, shazptr) run before main() without
 * a single malloc, calloc or realloc.  The program interposes the allocator
 * and counts the calls made before main(); the library's references resolve
 * to it (-rdynamic).  Then it uses the registry, which must still list the
 * library's files, so that the files registered at load are not lost.
 * Exit 0 pass, 1 fail, 77 skip (a sanitizer brings its own allocator).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>

#if defined(__SANITIZE_ADDRESS__)
int main(void)
{
	puts("skip: the sanitizer brings its own allocator");
	return 77;
}
#else

extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);

static int in_main;
static unsigned long before_main;

void *malloc(size_t n)
{
	if (!__atomic_load_n(&in_main, __ATOMIC_RELAXED))
		__atomic_fetch_add(&before_main, 1, __ATOMIC_RELAXED);
	return __libc_malloc(n);
}

void *calloc(size_t n, size_t size)
{
	if (!__atomic_load_n(&in_main, __ATOMIC_RELAXED))
		__atomic_fetch_add(&before_main, 1, __ATOMIC_RELAXED);
	return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	if (!__atomic_load_n(&in_main, __ATOMIC_RELAXED))
		__atomic_fetch_add(&before_main, 1, __ATOMIC_RELAXED);
	return __libc_realloc(p, n);
}

static int show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "x\n");
}

static const struct kk_control_file_ops ops = { .show = show };

int main(void)
{
	static const char *const lib[] = {
		"debug_objects/policy", "debug_objects/stats", "dynamic_debug/batched",
		"dynamic_debug/control", "panic", "shazptr/skip_synchronize_self_scan",
		"shazptr/stats", "static_keys",
	};
	unsigned long n = __atomic_load_n(&before_main, __ATOMIC_RELAXED);
	int fail = 0;

	__atomic_store_n(&in_main, 1, __ATOMIC_RELAXED);
	if (n) {
		fprintf(stderr, "startup_alloc: %lu allocations before main()\n", n);
		fail = 1;
	}
	/* The library's files are there, and their names are taken. */
	for (size_t i = 0; i < sizeof(lib) / sizeof(lib[0]); i++) {
		char *txt = NULL;
		int r = kk_control_create_file(lib[i], &ops, NULL);

		if (r != -EEXIST) {
			fprintf(stderr, "startup_alloc: creating %s: %d, not -EEXIST\n", lib[i], r);
			fail = 1;
		}
		if (!strcmp(lib[i], "debug_objects/stats") || !strcmp(lib[i], "panic") ||
		    !strcmp(lib[i], "static_keys")) {
			r = kk_control_read(lib[i], &txt, NULL);
			if (r || !txt || !*txt) {
				fprintf(stderr, "startup_alloc: reading %s: %d\n", lib[i], r);
				fail = 1;
			}
			free(txt);
		}
	}
	if (kk_control_remove_file("panic") || kk_control_read("panic", NULL, NULL) != -ENOENT) {
		fprintf(stderr, "startup_alloc: panic could not be removed\n");
		fail = 1;
	}
	return fail;
}
#endif
