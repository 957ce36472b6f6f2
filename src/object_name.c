// SPDX-License-Identifier: MIT
/* Naming ELF objects the way module names are shown in listings. */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "internal.h"

void kk_object_name(const char *path, char *out, size_t len)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	if (!strncmp(base, "lib", 3) && base[3] && base[3] != '.')
		base += 3;
	n = strcspn(base, ".");
	if (n >= len)
		n = len - 1;
	memcpy(out, base, n);
	out[n] = '\0';
}

void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base)
{
	char exe[PATH_MAX];
	Dl_info di, main_di;
	ssize_t n;

	*base = 0;
	snprintf(name, len, "?");
	if (!dladdr(addr, &di))
		return;
	*base = (uintptr_t)di.dli_fbase;
	/* dladdr names the main program after argv[0], which can be anything:
	 * ask the kernel for the executable instead. */
	if (!dladdr((const void *)getauxval(AT_PHDR), &main_di) ||
	    main_di.dli_fbase != di.dli_fbase) {
		if (di.dli_fname && di.dli_fname[0])
			kk_object_name(di.dli_fname, name, len);
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		kk_object_name(exe, name, len);
	}
}
