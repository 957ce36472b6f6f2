// SPDX-License-Identifier: MIT
/*
 * Naming ELF objects the way module names are shown in listings.
 *
 * This never calls dladdr(): dladdr takes glibc's loader lock, and the
 * registries call us with their own lock held while dlopen() holds the loader
 * lock and runs constructors that want the registry lock.  dl_iterate_phdr()
 * takes only the short-lived lock that guards the list of objects.
 */
#include <errno.h>
#include <link.h>
#include <limits.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/internal.h"

/* The module name of the object at @path: its file name without the
 * directory, a "lib" prefix or any extension ("/usr/lib/libfoo.so.1" -> "foo"). */
static void kk_object_name(const char *path, char *out, size_t len)
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
	uintptr_t base, lo, hi;
	const char *path;
	int found;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct lookup *l = data;
	int hit = 0;

	(void)size;
	l->lo = UINTPTR_MAX;
	l->hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (l->addr >= lo && l->addr < lo + ph->p_memsz)
			hit = 1;
		if (lo < l->lo)
			l->lo = lo;
		if (lo + ph->p_memsz > l->hi)
			l->hi = lo + ph->p_memsz;
	}
	if (!hit)
		return 0;
	l->base = info->dlpi_addr;
	l->path = info->dlpi_name;
	l->found = 1;
	return 1;
}

static int lookup(const void *addr, struct lookup *l)
{
	memset(l, 0, sizeof(*l));
	l->addr = (uintptr_t)addr;
	return addr && dl_iterate_phdr(find_object, l) && l->found;
}

void kk_addr_range(const void *addr, uintptr_t *base, uintptr_t *lo, uintptr_t *hi)
{
	struct lookup l;

	*base = *lo = *hi = 0;
	if (!lookup(addr, &l))
		return;
	*base = l.base;
	*lo = l.lo;
	*hi = l.hi;
}

/*
 * The main program has no name in the loader's list: ask the kernel, once
 * per process (the executable does not change across fork), and only when a
 * name is wanted, never on the path of a destructor.
 */
static char exe_name[64];
static pthread_once_t exe_once = PTHREAD_ONCE_INIT;

static void exe_lookup(void)
{
	const char *fn = (const char *)getauxval(AT_EXECFN);
	char exe[PATH_MAX];
	ssize_t n;

	/* The name it was run by, from the auxiliary vector: no syscall, and
	 * it works without /proc.  readlink() only where there is none. */
	if (fn && *fn) {
		kk_object_name(fn, exe_name, sizeof(exe_name));
		return;
	}
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = '\0';
		kk_object_name(exe, exe_name, sizeof(exe_name));
	} else {
		snprintf(exe_name, sizeof(exe_name), "?");
	}
}

void kk_addr_object(const void *addr, char *name, size_t len, uintptr_t *base)
{
	struct lookup l;

	*base = 0;
	snprintf(name, len, "?");
	if (!lookup(addr, &l))
		return;
	*base = l.base;
	if (l.path && l.path[0]) {
		kk_object_name(l.path, name, len);
		return;
	}
	pthread_once(&exe_once, exe_lookup);
	snprintf(name, len, "%s", exe_name);
}

struct prot_lookup {
	uintptr_t addr;
	int prot;
};

static int find_prot(struct dl_phdr_info *info, size_t size, void *data)
{
	struct prot_lookup *l = data;

	(void)size;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && l->addr >= lo && l->addr < lo + ph->p_memsz) {
			l->prot = (ph->p_flags & PF_R ? PROT_READ : 0) |
				  (ph->p_flags & PF_W ? PROT_WRITE : 0) |
				  (ph->p_flags & PF_X ? PROT_EXEC : 0);
			return 1;
		}
	}
	return 0;
}

int kk_addr_segment_prot(const void *addr)
{
	struct prot_lookup l = { (uintptr_t)addr, -ENOENT };

	dl_iterate_phdr(find_prot, &l);
	return l.prot;
}
