/* SPDX-License-Identifier: MIT */
/* LTTng-UST tracepoint provider of the kk-bench peers program peer-lttng. */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER kkpeer

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "./kkpeer_tp.h"

#if !defined(KKPEER_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define KKPEER_TP_H

#include <lttng/tracepoint.h>

/* The hot site: an int and a string, like the other peers' message. */
TRACEPOINT_EVENT(kkpeer, hot,
	TP_ARGS(int, i, const char *, s),
	TP_FIELDS(ctf_integer(int, i, i) ctf_string(s, s)))

/* PEER_NSITES distinct events, one per distinct site (s000 ... s999). */
#define PEER_SITE(n) TRACEPOINT_EVENT(kkpeer, s##n, TP_ARGS(int, i), TP_FIELDS(ctf_integer(int, i, i)))
#include "peer_rep.h"
PEER_R1000
#undef PEER_SITE

#endif

#include <lttng/tracepoint-event.h>
