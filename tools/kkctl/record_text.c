// SPDX-License-Identifier: MIT
/*
 * kkctl record --format text: the trace's own lines ("TID [TIME] MESSAGE",
 * as dynamic_debug/trace_pipe prints them), each after the process that
 * wrote it, "[HOST:]NAME-PID", as ftrace names a task:
 *
 *   srv-4242    4243 [  1831.847297123] request len=12 path=/a
 *   srv-4242    4243 [  1831.847297500] <lost 17 records>
 *   srv-4242       - [  1831.912000000] <exited>
 *
 * TIME is the process's CLOCK_MONOTONIC, in seconds to the nanosecond; with
 * --wallclock it is UTC wall-clock time, 2026-11-29T09:14:31.123456789Z.
 * Control characters in a message show as \xNN: a record is one line.
 */
#include <stdlib.h>
#include <time.h>

#include "kkctl.h"
#include "record_int.h"

/* The output, and the last event's wall clock minus its monotonic clock:
 * lost and exited lines come with wall-clock time only. */
struct text {
	struct kkr_out o;	/* first: w->priv is it too */
	uint64_t off;
};

static int text_open(struct kkr_writer *w, const char *path)
{
	struct text *t = calloc(1, sizeof(*t));

	if (!t || kkr_out_open(&t->o, path)) {
		if (!t)
			fprintf(stderr, "%s: out of memory\n", kkctl_prog);
		free(t);
		return -1;
	}
	w->priv = t;
	return 0;
}

/* @v in decimal in at least @width columns, padded with @pad on the left
 * (@left: on the right), as "%6d", "%-6d" and "%09llu" print it, without
 * printf's parse of a format (three a record). */
static void put_num(struct kkr_out *o, int64_t v, int width, char pad, bool left)
{
	char b[48], *end = b + sizeof(b), *p = kkr_digits(end, v < 0 ? 0 - (uint64_t)v : (uint64_t)v);
	int n;

	if (v < 0)
		*--p = '-';
	n = (int)(end - p);
	if (!left)
		for (; n < width; n++)
			*--p = pad;
	kkr_out_mem(o, p, (size_t)(end - p));
	for (; left && n < width; n++)
		kkr_out_lit(o, " ");
}

/* "[HOST:]NAME-PID  TID [TIME] " (@tid < 0: "-"; @mono 0: taken from @ts and
 * the last event's clocks, or the wall clock's if there was none) */
static void head(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t ts,
		 uint64_t mono)
{
	struct text *t = w->priv;
	struct kkr_out *o = &t->o;

	if (mono)
		t->off = ts - mono;
	else if (t->off && ts > t->off)
		mono = ts - t->off;

	if (p->host[0]) {
		kkr_out_text(o, p->host);
		kkr_out_lit(o, ":");
	}
	kkr_out_text(o, p->name);
	kkr_out_lit(o, "-");
	put_num(o, p->pid, 6, ' ', true);
	kkr_out_lit(o, " ");
	if (tid >= 0)
		put_num(o, tid, 6, ' ', false);
	else
		kkr_out_lit(o, "     -");
	kkr_out_lit(o, " ");
	if (w->wallclock || !mono) {
		time_t s = (time_t)(ts / 1000000000u);
		struct tm tm;
		char day[32];

		gmtime_r(&s, &tm);
		strftime(day, sizeof(day), "%Y-%m-%dT%H:%M:%S", &tm);
		kkr_out_printf(o, "[%s.%09lluZ] ", day, (unsigned long long)(ts % 1000000000u));
	} else {
		kkr_out_lit(o, "[");
		put_num(o, (int64_t)(mono / 1000000000u), 6, ' ', false);
		kkr_out_lit(o, ".");
		put_num(o, (int64_t)(mono % 1000000000u), 9, '0', false);
		kkr_out_lit(o, "] ");
	}
}

static int text_event(struct kkr_writer *w, const struct kkr_event *e)
{
	struct kkr_out *o = w->priv;

	head(w, e->proc, e->tid, e->ts, e->mono);
	kkr_out_text(o, e->message);
	kkr_out_lit(o, "\n");
	return kkr_out_record(o);
}

static int text_lost(struct kkr_writer *w, const struct kkr_proc *p, int tid, uint64_t count,
		     uint64_t ts)
{
	struct kkr_out *o = w->priv;

	head(w, p, tid, ts, 0);
	kkr_out_printf(o, "<lost %llu record%s>\n", (unsigned long long)count,
		       count == 1 ? "" : "s");
	return kkr_out_record(o);
}

static int text_exited(struct kkr_writer *w, const struct kkr_proc *p, uint64_t ts)
{
	struct kkr_out *o = w->priv;

	head(w, p, -1, ts, 0);
	kkr_out_printf(o, "<exited>\n");
	return kkr_out_record(o);
}

static int text_flush(struct kkr_writer *w)
{
	return kkr_out_flush(w->priv);
}

static int text_close(struct kkr_writer *w)
{
	int ret = kkr_out_close(w->priv);

	free(w->priv);
	w->priv = NULL;
	return ret;
}

const struct kkr_writer_ops kkr_text_ops = {
	.name = "text",
	.open = text_open,
	.event = text_event,
	.lost = text_lost,
	.exited = text_exited,
	.close = text_close,
	.flush = text_flush,
};
