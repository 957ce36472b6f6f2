// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_threads: the threads whose records the trace readers
 * (trace, trace_pipe, trace_pipe_json) show, by thread id or by name.  The
 * kernel's ftrace has set_event_pid (pids, empty = all); threads here also
 * have names worth choosing by (pthread_setname_np), so the list holds both,
 * and a name may be a glob ("worker-*"), as the query language's func and
 * file are.
 *
 * ftrace filters when an event is written; this filters when records are
 * read.  The rings are per thread, so another thread's records take no room
 * in a chosen thread's ring, and the writer's path stays a load and a branch
 * shorter.  So the list also applies to records written before it was set,
 * a name is matched as the thread is named when the record is read, and a
 * consuming read (trace_pipe, trace_pipe_json) consumes the records it does
 * not show, as if they had never been written.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/trace_int.h"

#define TT_MAX		64	/* entries in the list */
#define TT_NAME		16	/* a thread's name: 15 bytes and the NUL, as the kernel keeps it */

struct tt_entry {
	pid_t tid;		/* 0: match by name */
	char name[TT_NAME];
};

static struct tt_entry tt_list[TT_MAX];
static size_t tt_n;		/* the list is under the trace's lock (fork-safe: see trace.c) */

static bool entry_matches(const struct tt_entry *e, pid_t tid, const char *comm)
{
	if (e->tid)
		return e->tid == tid;
	return comm[0] && fnmatch(e->name, comm, 0) == 0;
}

bool kk_dd_tr_thread_shown(pid_t tid, const char *comm)
{
	bool shown = !tt_n;

	for (size_t i = 0; i < tt_n && !shown; i++)
		shown = entry_matches(&tt_list[i], tid, comm);
	return shown;
}

/* One entry from @s (@n bytes, trimmed): a tid when all digits, else a name.  0 or -EINVAL. */
static int parse_entry(const char *s, size_t n, struct tt_entry *e, struct kk_buf *out)
{
	size_t i = 0;
	unsigned long v = 0;

	memset(e, 0, sizeof(*e));
	while (i < n && s[i] >= '0' && s[i] <= '9' && v < 0x7fffffff)
		v = v * 10 + (unsigned long)(s[i++] - '0');
	if (i == n) {
		if (!v || v > 0x7fffffff) {
			kk_buf_printf(out, "not a thread id: %.*s\n", (int)n, s);
			return -EINVAL;
		}
		e->tid = (pid_t)v;
		return 0;
	}
	if (n >= TT_NAME) {
		kk_buf_printf(out, "thread name longer than %d bytes: %.*s\n", TT_NAME - 1, (int)n, s);
		return -EINVAL;
	}
	memcpy(e->name, s, n);
	return 0;
}

/* The entries of @buf, separated by commas or newlines, into @v (TT_MAX).  Count or -EINVAL. */
static int parse_list(const char *buf, size_t len, struct tt_entry *v, struct kk_buf *out)
{
	size_t i = 0;
	int n = 0;

	while (i < len) {
		size_t a = i, b;

		while (i < len && buf[i] != ',' && buf[i] != '\n')
			i++;
		b = i++;
		while (a < b && kk_is_space(buf[a]))
			a++;
		while (b > a && kk_is_space(buf[b - 1]))
			b--;
		if (a == b)
			continue;
		if (n == TT_MAX) {
			kk_buf_printf(out, "more than %d threads\n", TT_MAX);
			return -EINVAL;
		}
		if (parse_entry(buf + a, b - a, &v[n], out))
			return -EINVAL;
		n++;
	}
	return n;
}

/* A write replaces the list, all or nothing; an empty one shows every thread again. */
static int tt_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	struct tt_entry v[TT_MAX];
	int n = parse_list(buf, len, v, out);

	(void)priv;
	if (n < 0)
		return n;
	kk_dd_tr_lock();
	memcpy(tt_list, v, (size_t)n * sizeof(v[0]));
	tt_n = (size_t)n;
	kk_dd_tr_unlock();
	return 0;
}

/* One entry a line; nothing when every thread is shown. */
static int tt_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	kk_dd_tr_lock();
	for (size_t i = 0; i < tt_n; i++) {
		if (tt_list[i].tid)
			kk_buf_printf(out, "%d\n", (int)tt_list[i].tid);
		else
			kk_buf_printf(out, "%s\n", tt_list[i].name);
	}
	kk_dd_tr_unlock();
	return out->error;
}

static const struct kk_control_file_ops tt_fops = {
	.show = tt_show,
	.write = tt_write,
	.max_write = 4096,
};
KK_CONTROL_LIB_FILE(tt_file, "dynamic_debug/trace_threads", &tt_fops);

void kk_dd_tr_threads_init(void)
{
	kk_control_add_lib_file(&tt_file);
}
