/* SPDX-License-Identifier: MIT */
/*
 * kk_sync_core(): a core-serializing instruction in user space (the
 * kernel's sync_core()), for a thread that must not run instructions it
 * fetched before another thread rewrote them.
 *   x86_64:  cpuid (serializing at any privilege level; iret-to-self, the
 *            kernel's choice, needs more code for the same effect);
 *   aarch64: isb (the instruction fetches after it see the cache
 *            maintenance the writer did: the writer's side is the
 *            kernel's job through /proc/self/mem or the remap).
 */
#ifndef KK_ARCH_SYNC_CORE_H
#define KK_ARCH_SYNC_CORE_H

static inline void kk_sync_core(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a = 0, b, c = 0, d;

	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d) : : "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("isb" : : : "memory");
#else
	/* No known serializing instruction: the handler's kernel entry and
	 * exit are all there is.  Architectures that patch text add theirs. */
	__sync_synchronize();
#endif
}

#endif
