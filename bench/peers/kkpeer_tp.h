/* SPDX-License-Identifier: MIT */
/* LTTng-UST tracepoint provider kkpeer of the kk-bench peers program
 * peer-lttng: the hot site.  The distinct sites are in the providers
 * kkpeer00 ... kkpeer16, made from kkpeer_chunk_tp.h.in (mk/peers.mk). */
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

#endif

#include <lttng/tracepoint-event.h>
