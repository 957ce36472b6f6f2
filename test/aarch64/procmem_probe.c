/* SPDX-License-Identifier: MIT */
/*
 * make check-aarch64, guest fact: does code written through /proc/self/mem
 * into a read+execute mapping run?  That is how kernelkit writes code it
 * may not map writable, and what rules out qemu-user as the test bed: its
 * translated-code cache watches the guest's own stores (pages it write-
 * protects), and a write through /proc/self/mem bypasses those protections,
 * so qemu-user keeps running the old translation.  Under qemu-system the
 * guest kernel and CPU see the write like hardware does.
 * Prints one line; exit 0 when the new code ran.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if !defined(__aarch64__)
#error "aarch64 probe"
#endif

/* mov w0, #imm16; ret */
static void gen(uint32_t *p, unsigned imm)
{
	p[0] = 0x52800000u | (imm & 0xffffu) << 5;
	p[1] = 0xd65f03c0u;
}

int main(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	uint32_t code[2];
	int (*fn)(void);
	int fd, before, after;
	uint32_t *p = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	gen(p, 1);
	__builtin___clear_cache((char *)p, (char *)(p + 2));
	if (mprotect(p, pg, PROT_READ | PROT_EXEC)) {
		perror("mprotect");
		return 2;
	}
	fn = (int (*)(void))(uintptr_t)p;
	before = fn();	/* translated (qemu) / fetched (CPU) once */

	fd = open("/proc/self/mem", O_RDWR);
	if (fd < 0) {
		perror("open /proc/self/mem");
		return 2;
	}
	gen(code, 2);
	if (pwrite(fd, code, sizeof(code), (off_t)(uintptr_t)p) != (ssize_t)sizeof(code)) {
		perror("pwrite /proc/self/mem");
		return 2;
	}
	close(fd);
	__builtin___clear_cache((char *)p, (char *)(p + 2));
	after = fn();
	printf("/proc/self/mem code write: %s (returned %d then %d, want 1 then 2)\n",
	       before == 1 && after == 2 ? "new code runs" : "OLD CODE STILL RUNS",
	       before, after);
	return !(before == 1 && after == 2);
}
