// SPDX-License-Identifier: MIT
/*
 * dynamic_debug/print_time: printed pr_debug lines start with the time, as
 * the kernel's printk lines do with printk.time=1 ("[    5.123456] ").  As
 * in the kernel it is one switch for all the output, not a per-site flag:
 * the kernel's dynamic debug flags (p T m f s l t d) have no time either.
 * The time is CLOCK_MONOTONIC, the clock printk's stamps count on (time
 * since boot) and the one the trace ring's text lines show, so printed lines,
 * trace lines and dmesg line up.  Off by default, as printk.time is without
 * CONFIG_PRINTK_TIME.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include <kernelkit/control.h>
#include "common/internal.h"
#include "control.h"
#include "dynamic_debug/internal.h"

static atomic_bool print_time;

size_t kk_dd_time_prefix(char *buf, size_t len)
{
	struct timespec ts;
	int n;

	if (!atomic_load_explicit(&print_time, memory_order_relaxed))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	n = snprintf(buf, len, "[%5lld.%06ld] ", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	if (n < 0)
		return 0;
	return (size_t)n < len ? (size_t)n : (len ? len - 1 : 0);
}

static int pt_show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "%d\n", atomic_load(&print_time) ? 1 : 0) < 0 ? -ENOMEM : 0;
}

/* "1" or "0" (Y and N too, as the kernel's bool parameters take them). */
static int pt_write(const char *buf, size_t len, struct kk_buf *out, void *priv)
{
	(void)priv;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (len == 1 && (buf[0] == '1' || buf[0] == 'Y' || buf[0] == 'y')) {
		atomic_store(&print_time, true);
		return 0;
	}
	if (len == 1 && (buf[0] == '0' || buf[0] == 'N' || buf[0] == 'n')) {
		atomic_store(&print_time, false);
		return 0;
	}
	kk_buf_printf(out, "expected 1 or 0\n");
	return -EINVAL;
}

static const struct kk_control_file_ops pt_fops = {
	.show = pt_show,
	.write = pt_write,
	.max_write = 16,
};
KK_CONTROL_LIB_FILE(pt_file, "dynamic_debug/print_time", &pt_fops);

void kk_dd_print_time_init(void)
{
	kk_control_add_lib_file(&pt_file);
}
