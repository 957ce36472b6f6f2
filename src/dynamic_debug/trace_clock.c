// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/trace_clock: the clock the text of the trace shows (trace,
 * trace_pipe, the panic dump), as ftrace's trace_clock file chooses it:
 *   mono      CLOCK_MONOTONIC, the default (printk's and dmesg's time base)
 *   realtime  CLOCK_REALTIME: UTC seconds since the epoch, to line records up
 *             with logs and other hosts
 * Reading shows the choices with the current one in brackets ("[mono]
 * realtime"), as ftrace's does.  Unlike ftrace, where the clock is what the
 * ring records (and changing it clears the buffer), records here always hold
 * one stamp and a read converts it: the choice applies to every record at
 * once, old ones too, and clears nothing.  The wall-clock time is the
 * monotonic one plus CLOCK_REALTIME - CLOCK_MONOTONIC measured when the read
 * begins (docs/dynamic_debug.md: a clock step between a record and its read
 * shifts it).  trace_pipe_json gives both times always.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/trace_int.h"

static const char *const clocks[] = { "mono", "realtime" };
static atomic_int clock_choice;	/* an index into clocks[] */

bool kk_dd_tr_clock_realtime(void)
{
	return atomic_load_explicit(&clock_choice, memory_order_relaxed) == 1;
}

static int tc_show(struct kk_buf *out, void *priv)
{
	int cur = atomic_load(&clock_choice);

	(void)priv;
	for (int i = 0; i < (int)(sizeof(clocks) / sizeof(clocks[0])); i++)
		kk_buf_printf(out, i == cur ? "%s[%s]" : "%s%s", i ? " " : "", clocks[i]);
	kk_buf_printf(out, "\n");
	return out->error;
}

/* A name, or the listing the file printed ("[mono] realtime": the one in
 * brackets), so that what a read gave back is taken (unit/control_roundtrip). */
static int tc_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	const char *open = memchr(buf, '[', len), *close;

	(void)priv;
	if (open && (close = memchr(open, ']', len - (size_t)(open - buf)))) {
		buf = open + 1;
		len = (size_t)(close - buf);
	}
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	for (int i = 0; i < (int)(sizeof(clocks) / sizeof(clocks[0])); i++) {
		if (len == strlen(clocks[i]) && !memcmp(buf, clocks[i], len)) {
			atomic_store(&clock_choice, i);
			return 0;
		}
	}
	kk_buf_printf(out, "expected mono or realtime\n");
	return -EINVAL;
}

static const struct kk_control_file_ops tc_fops = {
	.show = tc_show,
	.write = tc_write,
	.max_write = 64,
};
KK_CONTROL_LIB_FILE(tc_file, "dynamic_debug/trace_clock", &tc_fops);

void kk_dd_tr_clock_init(void)
{
	kk_control_add_lib_file(&tc_file);
}
