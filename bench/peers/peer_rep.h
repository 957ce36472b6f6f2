/* SPDX-License-Identifier: MIT */
/* Repetition macros of the kk-bench peers programs (no code: the LTTng
 * provider header includes it too). */
#ifndef KK_PEER_REP_H
#define KK_PEER_REP_H
#define PEER_NSITES 1000
/* 1000 distinct sites from one macro: PEER_SITE(000) ... PEER_SITE(999). */
#define PEER_R10(a) PEER_SITE(a##0) PEER_SITE(a##1) PEER_SITE(a##2) PEER_SITE(a##3) \
	PEER_SITE(a##4) PEER_SITE(a##5) PEER_SITE(a##6) PEER_SITE(a##7) PEER_SITE(a##8) PEER_SITE(a##9)
#define PEER_R100(a) PEER_R10(a##0) PEER_R10(a##1) PEER_R10(a##2) PEER_R10(a##3) PEER_R10(a##4) \
	PEER_R10(a##5) PEER_R10(a##6) PEER_R10(a##7) PEER_R10(a##8) PEER_R10(a##9)
#define PEER_R1000 PEER_R100(0) PEER_R100(1) PEER_R100(2) PEER_R100(3) PEER_R100(4) \
	PEER_R100(5) PEER_R100(6) PEER_R100(7) PEER_R100(8) PEER_R100(9)
#endif
