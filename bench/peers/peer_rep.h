/* SPDX-License-Identifier: MIT */
/* Repetition macros of the kk-bench peers programs (no code: the LTTng
 * provider headers include it too). */
#ifndef KK_PEER_REP_H
#define KK_PEER_REP_H
/*
 * PEER_NSITES distinct sites, s00000 ... s16153: as many as the 16154-site
 * modules of kk-bench dyndbg (the kernel's own count in the seed), in 17
 * chunks PEER_C00 ... PEER_C16 of 1000 (the last of 154).  A program defines
 * PEER_SITE(c, n): site n of chunk c.  Chunks keep each function, and each
 * LTTng provider (one per chunk: kkpeer00 ... kkpeer16), small enough to
 * compile: one LTTng provider of 16154 events takes gcc over 9 GB.  The first
 * PEER_NCOLD sites (chunks 00-09) are the ones the disabled cost is timed
 * over (issue 26: 10000 distinct sites, so that the state words are cold).
 */
#define PEER_NSITES 16154
#define PEER_NCOLD 10000
#define PEER_R10(c, a) PEER_SITE(c, a##0) PEER_SITE(c, a##1) PEER_SITE(c, a##2) \
	PEER_SITE(c, a##3) PEER_SITE(c, a##4) PEER_SITE(c, a##5) PEER_SITE(c, a##6) \
	PEER_SITE(c, a##7) PEER_SITE(c, a##8) PEER_SITE(c, a##9)
#define PEER_R100(c, a) PEER_R10(c, a##0) PEER_R10(c, a##1) PEER_R10(c, a##2) \
	PEER_R10(c, a##3) PEER_R10(c, a##4) PEER_R10(c, a##5) PEER_R10(c, a##6) \
	PEER_R10(c, a##7) PEER_R10(c, a##8) PEER_R10(c, a##9)
#define PEER_R1000(c) PEER_R100(c, c##0) PEER_R100(c, c##1) PEER_R100(c, c##2) \
	PEER_R100(c, c##3) PEER_R100(c, c##4) PEER_R100(c, c##5) PEER_R100(c, c##6) \
	PEER_R100(c, c##7) PEER_R100(c, c##8) PEER_R100(c, c##9)
#define PEER_C00 PEER_R1000(00)
#define PEER_C01 PEER_R1000(01)
#define PEER_C02 PEER_R1000(02)
#define PEER_C03 PEER_R1000(03)
#define PEER_C04 PEER_R1000(04)
#define PEER_C05 PEER_R1000(05)
#define PEER_C06 PEER_R1000(06)
#define PEER_C07 PEER_R1000(07)
#define PEER_C08 PEER_R1000(08)
#define PEER_C09 PEER_R1000(09)
#define PEER_C10 PEER_R1000(10)
#define PEER_C11 PEER_R1000(11)
#define PEER_C12 PEER_R1000(12)
#define PEER_C13 PEER_R1000(13)
#define PEER_C14 PEER_R1000(14)
#define PEER_C15 PEER_R1000(15)
#define PEER_C16 PEER_R100(16, 160) PEER_R10(16, 1610) PEER_R10(16, 1611) PEER_R10(16, 1612) \
	PEER_R10(16, 1613) PEER_R10(16, 1614) PEER_SITE(16, 16150) PEER_SITE(16, 16151) \
	PEER_SITE(16, 16152) PEER_SITE(16, 16153)
/* Applies M to every chunk number. */
#define PEER_CHUNKS(M) M(00) M(01) M(02) M(03) M(04) M(05) M(06) M(07) M(08) M(09) \
	M(10) M(11) M(12) M(13) M(14) M(15) M(16)
#endif
