/* SPDX-License-Identifier: MIT */
/* Build plumbing: kmalloc and friends are malloc. */
#ifndef KK_CONF_LINUX_SLAB_H
#define KK_CONF_LINUX_SLAB_H
#include <stdlib.h>
#define GFP_KERNEL	0
#define GFP_ATOMIC	0
#define kmalloc(size, gfp)	malloc(size)
#define kzalloc(size, gfp)	calloc(1, size)
#define kcalloc(n, size, gfp)	calloc(n, size)
#define kfree(p)		free(p)
#endif
