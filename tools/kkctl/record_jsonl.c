// SPDX-License-Identifier: MIT
/*
 * kkctl record --format jsonl: JSON Lines, one object per record, for
 * scripts and jq.  Each is the process's trace_pipe_json line with the
 * recorder's view of its process added ("host", "pid" as kkctl sees it,
 * "vpid" as the process sees itself, "process" its name):
 *
 *   {"type":"event","host":"","pid":4242,"vpid":42,"process":"srv","ts":..,
 *    "mono":..,"tid":..,"comm":..,"module":..,"function":..,"file":..,
 *    "line":..,"format":..,"message":..,"args":[{"name":..,"type":..,"value":..}]}
 *   {"type":"lost", <process>, "tid":..,"comm":"","count":N,"ts":..}
 *   {"type":"exited", <process>, "ts":..}
 *
 * kkctl record -H reads these lines back from each host's kkctl.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "kkctl.h"
#include "record_int.h"

static struct kkr_out *out_of(struct kkr_writer *w)
{
	return w->priv;
}

static int jsonl_open(struct kkr_writer *w, const char *path)
{
	struct kkr_out *o = calloc(1, sizeof(*o));

	if (!o || kkr_out_open(o, path)) {
		if (!o)
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		free(o);
		return -1;
	}
	w->priv = o;
	return 0;
}

/* {"type":"T","host":..,"pid":..,"vpid":..,"process":.. (@type: "\"T\"") */
static void head(struct kkr_out *o, const char *type, const struct kkr_proc *p)
{
	kkr_out_lit(o, "{\"type\":");
	kkr_out_mem(o, type, strlen(type));
	kkr_out_lit(o, ",\"host\":");
	kkr_out_json(o, p->host);
	kkr_out_lit(o, ",\"pid\":");
	kkr_out_i64(o, p->pid);
	kkr_out_lit(o, ",\"vpid\":");
	kkr_out_i64(o, p->vpid);
	kkr_out_lit(o, ",\"process\":");
	kkr_out_json(o, p->name);
}

static void put_float(struct kkr_out *o, double f)
{
	if (isnan(f))
		kkr_out_lit(o, "\"nan\"");
	else if (isinf(f))
		kkr_out_printf(o, "\"%sinf\"", f < 0 ? "-" : "");
	else
		kkr_out_printf(o, "%.17g", f);
}

static void put_arg(struct kkr_out *o, const struct kkr_arg *a)
{
	static const char *const types[] = { [KKR_INT] = "\"int\"", [KKR_UINT] = "\"uint\"",
		[KKR_FLOAT] = "\"float\"", [KKR_STRING] = "\"string\"",
		[KKR_POINTER] = "\"pointer\"", [KKR_CHAR] = "\"char\"" };

	kkr_out_lit(o, "{\"name\":");
	kkr_out_json(o, a->name);
	kkr_out_lit(o, ",\"type\":");
	kkr_out_mem(o, types[a->type], strlen(types[a->type]));
	kkr_out_lit(o, ",\"value\":");
	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		kkr_out_i64(o, a->v.i);
		break;
	case KKR_UINT:
	case KKR_POINTER:
		kkr_out_u64(o, a->v.u);
		break;
	case KKR_FLOAT:
		put_float(o, a->v.f);
		break;
	case KKR_STRING:
		kkr_out_json(o, a->v.s);
		break;
	}
	kkr_out_lit(o, "}");
}

/* Each string key of an event, and where it is. */
#define EKEY(name, field) { ",\"" name "\":", offsetof(struct kkr_event, field) }
static const struct { const char *key; size_t off; } event_strs[] = {
	EKEY("module", module), EKEY("function", function), EKEY("file", file),
};
#undef EKEY

static int jsonl_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct kkr_out *o = out_of(w);

	head(o, "\"event\"", e->proc);
	kkr_out_lit(o, ",\"ts\":");
	kkr_out_u64(o, e->ts);
	kkr_out_lit(o, ",\"mono\":");
	kkr_out_u64(o, e->mono);
	kkr_out_lit(o, ",\"tid\":");
	kkr_out_i64(o, e->tid);
	kkr_out_lit(o, ",\"comm\":");
	kkr_out_json(o, e->comm);
	for (size_t i = 0; i < sizeof(event_strs) / sizeof(event_strs[0]); i++) {
		kkr_out_mem(o, event_strs[i].key, strlen(event_strs[i].key));
		kkr_out_json(o, *(const char *const *)((const char *)e + event_strs[i].off));
	}
	kkr_out_lit(o, ",\"line\":");
	kkr_out_u64(o, e->line);
	kkr_out_lit(o, ",\"format\":");
	kkr_out_json(o, e->format);
	kkr_out_lit(o, ",\"message\":");
	kkr_out_json(o, e->message);
	kkr_out_lit(o, ",\"args\":[");
	for (size_t i = 0; i < e->nargs; i++) {
		if (i)
			kkr_out_lit(o, ",");
		put_arg(o, &e->args[i]);
	}
	kkr_out_lit(o, "]}\n");
	return kkr_out_record(o);
}

static int jsonl_lost(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		      uint64_t ts)
{
	struct kkr_out *o = out_of(w);

	head(o, "\"lost\"", p);
	kkr_out_printf(o, ",\"tid\":%d,\"comm\":\"\",\"count\":%llu,\"ts\":%llu}\n", tid,
		       (unsigned long long)count, (unsigned long long)ts);
	return kkr_out_record(o);
}

static int jsonl_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct kkr_out *o = out_of(w);

	head(o, "\"exited\"", p);
	kkr_out_printf(o, ",\"ts\":%llu}\n", (unsigned long long)ts);
	return kkr_out_record(o);
}

static int jsonl_flush(struct kkr_writer *w)
{
	return kkr_out_flush(out_of(w));
}

static int jsonl_close(struct kkr_writer *w)
{
	int ret = kkr_out_close(out_of(w));

	free(w->priv);
	w->priv = NULL;
	return ret;
}

const struct kkr_writer_ops kkr_jsonl_ops = {
	.name = "jsonl",
	.open = jsonl_open,
	.event = jsonl_event,
	.lost = jsonl_lost,
	.exited = jsonl_exited,
	.close = jsonl_close,
	.flush = jsonl_flush,
};
