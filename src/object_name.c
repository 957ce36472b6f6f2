// SPDX-License-Identifier: MIT
/*
 * Naming ELF objects the way module names are shown in listings.
 *
 * This never calls dladdr(): dladdr takes glibc's loader lock, and the
 * registries call us with their own lock held while dlopen() holds the loader
 * lock and runs constructors that want the registry lock.  dl_iterate_phdr()
 * takes only the short-lived lock that guards the list of objects.
 */
#include <link.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
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

struct lookup {
	uintptr_t addr;
	uintptr_t base;
	const char *path;
	int found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph->p_memsz) {
			l->base = info->dlpi_addr;
			l->path = info->dlpi_name;
			l->found = 1;
			return 1;
		}
	}
	return 0;
}

void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base)
{
	struct lookup l = { (uintptr_t)addr, 0, NULL, 0 };
	char exe[PATH_MAX];
	ssize_t n;

	*base = 0;
	snprintf(name, len, "?");
	if (!addr || !dl_iterate_phdr(find_object, &l) || !l.found)
		return;
	*base = l.base;
	if (l.path && l.path[0]) {
		kk_object_name(l.path, name, len);
		return;
	}
	/* The main program has no name in the list: ask the kernel. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		kk_object_name(exe, name, len);
	}
}
