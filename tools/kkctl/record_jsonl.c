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

/*
 * A line is {"type":"T" and fields ,"key":value, each read from a struct
 * (the process, the event, a loss, an exit) by one table: the keys and
 * their order are the line's format, in one place.
 */
enum jkind { J_INT, J_UINT, J_U64, J_STR };

struct jfield {
	const char *key;	/* ,"key": */
	enum jkind kind;
	size_t off;		/* of the value in its struct */
};
#define JF(type, name, kind, field) { ",\"" name "\":", kind, offsetof(type, field) }

static const struct jfield proc_fields[] = {
	JF(struct kkr_proc, "host", J_STR, host), JF(struct kkr_proc, "pid", J_INT, pid),
	JF(struct kkr_proc, "vpid", J_INT, vpid), JF(struct kkr_proc, "process", J_STR, name),
};

static const struct jfield event_fields[] = {
	JF(struct kkr_event, "ts", J_U64, ts), JF(struct kkr_event, "mono", J_U64, mono),
	JF(struct kkr_event, "tid", J_INT, tid), JF(struct kkr_event, "comm", J_STR, comm),
	JF(struct kkr_event, "module", J_STR, module),
	JF(struct kkr_event, "function", J_STR, function),
	JF(struct kkr_event, "file", J_STR, file), JF(struct kkr_event, "line", J_UINT, line),
	JF(struct kkr_event, "format", J_STR, format),
	JF(struct kkr_event, "message", J_STR, message),
};

/* A loss and an exit, as the writer's calls give them. */
struct jlost {
	int tid;
	const char *comm;	/* (a loss has no thread name: "") */
	uint64_t count, ts;
};

struct jexited {
	uint64_t ts;
};

static const struct jfield lost_fields[] = {
	JF(struct jlost, "tid", J_INT, tid), JF(struct jlost, "comm", J_STR, comm),
	JF(struct jlost, "count", J_U64, count), JF(struct jlost, "ts", J_U64, ts),
};

static const struct jfield exited_fields[] = {
	JF(struct jexited, "ts", J_U64, ts),
};
#undef JF

static void put_fields(struct kkr_out *o, const struct jfield *f, size_t n, const void *base)
{
	for (const struct jfield *end = f + n; f < end; f++) {
		const char *v = (const char *)base + f->off;

		kkr_out_mem(o, f->key, strlen(f->key));
		switch (f->kind) {
		case J_INT:
			kkr_out_i64(o, *(const int *)v);
			break;
		case J_UINT:
			kkr_out_u64(o, *(const unsigned int *)v);
			break;
		case J_U64:
			kkr_out_u64(o, *(const uint64_t *)v);
			break;
		case J_STR:
			kkr_out_json(o, *(const char *const *)v);
			break;
		}
	}
}
#define PUT_FIELDS(o, table, base) put_fields(o, table, sizeof(table) / sizeof(table[0]), base)

/* {"type":"T" and the process's fields (@type: "\"T\"") */
static void head(struct kkr_out *o, const char *type, const struct kkr_proc *p)
{
	kkr_out_lit(o, "{\"type\":");
	kkr_out_mem(o, type, strlen(type));
	PUT_FIELDS(o, proc_fields, p);
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

static int jsonl_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct kkr_out *o = out_of(w);

	head(o, "\"event\"", e->proc);
	PUT_FIELDS(o, event_fields, e);
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
	const struct jlost l = { tid, "", count, ts };

	head(o, "\"lost\"", p);
	PUT_FIELDS(o, lost_fields, &l);
	kkr_out_lit(o, "}\n");
	return kkr_out_record(o);
}

static int jsonl_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct kkr_out *o = out_of(w);
	const struct jexited x = { ts };

	head(o, "\"exited\"", p);
	PUT_FIELDS(o, exited_fields, &x);
	kkr_out_lit(o, "}\n");
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
