// SPDX-License-Identifier: MIT
/*
 * kk-bench peers: USDT probes (<sys/sdt.h>) in the shared workloads (peer.h).
 * Built twice: peer-usdt (a NOP per probe) and, with -DPEER_SEM, peer-usdt-sem
 * (each probe behind its semaphore, a load and a branch, as a program with
 * expensive arguments writes it).  bpftrace switches them on from outside.
 */
#ifdef PEER_SEM
#define _SDT_HAS_SEMAPHORES 1
#define PEER_PROV kkpeersem
#define PEER_SEM_DECL(e) __extension__ unsigned short kkpeersem_##e##_semaphore \
	__attribute__((unused, section(".probes")));
#define PEER_GUARD(e) if (__builtin_expect(kkpeersem_##e##_semaphore, 0))
#else
#define PEER_PROV kkpeer
#define PEER_SEM_DECL(e)
#define PEER_GUARD(e)
#endif
#include <sys/sdt.h>

#define PEER_HOT(i) do { PEER_GUARD(hot) DTRACE_PROBE2(PEER_PROV, hot, (i), "some payload text"); } while (0)
#define PEER_SITE(c, n) PEER_GUARD(s##n) DTRACE_PROBE1(PEER_PROV, s##n, i);
static int peer_on(const char *mode) { (void)mode; return -1; }
PEER_SEM_DECL(hot)
#ifdef PEER_SEM
#undef PEER_SITE
#define PEER_SITE(c, n) PEER_SEM_DECL(s##n)
#include "peer_rep.h"
#define PEER_SEM_CHUNK(c) PEER_C##c
PEER_CHUNKS(PEER_SEM_CHUNK)
#undef PEER_SITE
#define PEER_SITE(c, n) PEER_GUARD(s##n) DTRACE_PROBE1(PEER_PROV, s##n, i);
#endif
#include "peer.h"

int main(int argc, char **argv)
{
#ifdef PEER_SEM
	/* "on": wait (bounded) until bpftrace has attached and raised the semaphore. */
	if (argc > 1 && !strcmp(argv[1], "on")) {
		unsigned long long end = peer_now_ns() + 30000000000ull;

		while (!kkpeersem_hot_semaphore && peer_now_ns() < end)
			;
		if (!kkpeersem_hot_semaphore)
			return 1;
	}
#endif
	return peer_main(argc, argv);
}
