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
#include <stdlib.h>

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

/* {"type":"T","host":..,"pid":..,"vpid":..,"process":.. */
static void head(struct kkr_out *o, const char *type, const struct kkr_proc *p)
{
	kkr_out_printf(o, "{\"type\":\"%s\",\"host\":", type);
	kkr_out_json(o, p->host);
	kkr_out_printf(o, ",\"pid\":%d,\"vpid\":%d,\"process\":", p->pid, p->vpid);
	kkr_out_json(o, p->name);
}

static void put_arg(struct kkr_out *o, const struct kkr_arg *a)
{
	static const char *const types[] = { [KKR_INT] = "int", [KKR_UINT] = "uint",
		[KKR_FLOAT] = "float", [KKR_STRING] = "string", [KKR_POINTER] = "pointer",
		[KKR_CHAR] = "char" };

	kkr_out_printf(o, "{\"name\":");
	kkr_out_json(o, a->name);
	kkr_out_printf(o, ",\"type\":\"%s\",\"value\":", types[a->type]);
	switch (a->type) {
	case KKR_INT:
	case KKR_CHAR:
		kkr_out_printf(o, "%lld", (long long)a->v.i);
		break;
	case KKR_UINT:
	case KKR_POINTER:
		kkr_out_printf(o, "%llu", (unsigned long long)a->v.u);
		break;
	case KKR_FLOAT:
		if (isnan(a->v.f))
			kkr_out_printf(o, "\"nan\"");
		else if (isinf(a->v.f))
			kkr_out_printf(o, "\"%sinf\"", a->v.f < 0 ? "-" : "");
		else
			kkr_out_printf(o, "%.17g", a->v.f);
		break;
	case KKR_STRING:
		kkr_out_json(o, a->v.s);
		break;
	}
	kkr_out_printf(o, "}");
}

static int jsonl_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct kkr_out *o = out_of(w);

	head(o, "event", e->proc);
	kkr_out_printf(o, ",\"ts\":%llu,\"mono\":%llu,\"tid\":%d,\"comm\":",
		       (unsigned long long)e->ts, (unsigned long long)e->mono, e->tid);
	kkr_out_json(o, e->comm);
	kkr_out_printf(o, ",\"module\":");
	kkr_out_json(o, e->module);
	kkr_out_printf(o, ",\"function\":");
	kkr_out_json(o, e->function);
	kkr_out_printf(o, ",\"file\":");
	kkr_out_json(o, e->file);
	kkr_out_printf(o, ",\"line\":%u,\"format\":", e->line);
	kkr_out_json(o, e->format);
	kkr_out_printf(o, ",\"message\":");
	kkr_out_json(o, e->message);
	kkr_out_printf(o, ",\"args\":[");
	for (size_t i = 0; i < e->nargs; i++) {
		if (i)
			kkr_out_printf(o, ",");
		put_arg(o, &e->args[i]);
	}
	kkr_out_printf(o, "]}\n");
	return kkr_out_record(o);
}

static int jsonl_lost(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		      uint64_t ts)
{
	struct kkr_out *o = out_of(w);

	head(o, "lost", p);
	kkr_out_printf(o, ",\"tid\":%d,\"comm\":\"\",\"count\":%llu,\"ts\":%llu}\n", tid,
		       (unsigned long long)count, (unsigned long long)ts);
	return kkr_out_record(o);
}

static int jsonl_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct kkr_out *o = out_of(w);

	head(o, "exited", p);
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
