/* SPDX-License-Identifier: MIT */
/* The system's <linux/errno.h> (libc's <errno.h> includes it too), and errno. */
#ifndef KK_CONF_LINUX_ERRNO_H
#define KK_CONF_LINUX_ERRNO_H
#include_next <linux/errno.h>
#include <errno.h>
#endif
