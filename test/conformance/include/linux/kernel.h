/* SPDX-License-Identifier: MIT */
/*
 * Build plumbing: the few <linux/kernel.h> helpers test modules use, and
 * printk mapped to stderr.  pr_debug() is NOT here: it is kernelkit's
 * (<linux/dynamic_debug.h>), as in the kernel with CONFIG_DYNAMIC_DEBUG.
 */
#ifndef KK_CONF_LINUX_KERNEL_H
#define KK_CONF_LINUX_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <linux/types.h>
#include <linux/errno.h>
#include <linux/printk.h>

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))
#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)
#define BIT(n)		(1UL << (n))
#define GENMASK(h, l)	(((~0UL) << (l)) & (~0UL >> (sizeof(long) * 8 - 1 - (h))))

#endif
