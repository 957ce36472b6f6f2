/* SPDX-License-Identifier: MIT */
/* Adoption header: Valkey's LTTng tracepoints (src/trace/) as kernelkit dynamic debug sites.
 * Force-included (-include) into every Valkey object instead of Valkey's own trace headers:
 * it claims their include guards, so src/trace/ is untouched and USE_LTTNG stays off.
 * Each tracepoint call becomes one pr_debug site (module "valkey") whose format prints the
 * event as LTTng's text output would: "valkey_server:module_acquire_gil: { duration = %llu }".
 * Also kk_valkey_serverLog(): serverLog(LL_DEBUG, ...) as a site, the other levels as before
 * (serverlog.sh puts it in server.h's serverLog). */
#ifndef KK_VALKEY_TRACE_H
#define KK_VALKEY_TRACE_H

/* Valkey's trace headers: already "included" (trace_rdb.h's guard is really __VALKEY_TRACE_SYS_H__). */
#define __VALKEY_TRACE_H__
#define __VALKEY_TRACE_AOF_H__
#define __VALKEY_TRACE_CLUSTER_H__
#define __VALKEY_TRACE_SERVER_H__
#define __VALKEY_TRACE_DB_H__
#define __VALKEY_TRACE_SYS_H__
#define __VALKEY_TRACE_COMMANDS_H__

/* Valkey's feature macros first, as every Valkey source has them (IOV_MAX, off_t). */
#include "fmacros.h"

#define KK_MODNAME "valkey"
#include <kernelkit/dynamic_debug.h>

/* The latency macros measure time only when a tracer may want it (latency.h). */
#define LATENCY_TRACE_SWITCH 1

/* The duration events: one uint64_t field each (aof, cluster, db, rdb, server providers). */
#define kk_valkey_duration_trace(prov, event, d) \
	pr_debug(#prov ":" #event ": { duration = %llu }", (unsigned long long)(d))
#define valkey_aof_trace(prov, event, d)	kk_valkey_duration_trace(prov, event, d)
#define valkey_cluster_trace(prov, event, d)	kk_valkey_duration_trace(prov, event, d)
#define valkey_db_trace(prov, event, d)		kk_valkey_duration_trace(prov, event, d)
#define valkey_rdb_trace(prov, event, d)	kk_valkey_duration_trace(prov, event, d)
#define valkey_server_trace(prov, event, d)	kk_valkey_duration_trace(prov, event, d)

/* valkey_commands:command_call: prot (conn type), addr, laddr, name, duration. */
#define valkey_commands_trace(prov, event, prot, addr, laddr, name, d)                          \
	pr_debug(#prov ":" #event ": { prot = %d, addr = \"%s\", laddr = \"%s\", name = \"%s\", " \
		 "duration = %llu }", (int)(prot), (addr), (laddr), (name), (unsigned long long)(d))

#define latencyTraceIfNeeded(type, event, var) valkey_##type##_trace(valkey_##type, event, (var))

/*
 * Valkey's log macro, adopted in its header (issue 40): serverLog(LL_DEBUG, ...)
 * becomes a pr_debug site, and every other level logs as before, with no site
 * and no cost.  server.h defines serverLog after this header is included, so
 * the adoption is its one definition there (serverlog.sh puts it in):
 *
 *	#define serverLog(level, ...) kk_valkey_serverLog(level, __VA_ARGS__)
 *
 * A level that is not a compile-time constant (module.c's `level`) logs as
 * before too.  Valkey's own `loglevel debug` then no longer prints the debug
 * lines: `module valkey format ... +p` does, at run time.
 */
#define kk_valkey_serverLog_as_before(level, ...)				\
	do {									\
		if (((level) & 0xff) < server.verbosity)			\
			break;							\
		_serverLog(level, __VA_ARGS__);					\
	} while (0)
#define kk_valkey_serverLog(level, ...)						\
	pr_debug_if((level) == LL_DEBUG, kk_valkey_serverLog_as_before(level, __VA_ARGS__), __VA_ARGS__)

#endif /* KK_VALKEY_TRACE_H */
