// SPDX-License-Identifier: MIT
/* The LTTng-UST probes and tracepoint definitions of one provider of
 * peer-lttng, in its own object as LTTng's manual builds a provider:
 * KKPEER_TP_HEADER names the header (kkpeer_tp.h or a kkpeerNN_tp.h). */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include KKPEER_TP_HEADER
