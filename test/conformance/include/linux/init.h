/* SPDX-License-Identifier: MIT */
/* Build plumbing: section annotations mean nothing in user space. */
#ifndef KK_CONF_LINUX_INIT_H
#define KK_CONF_LINUX_INIT_H
#define __init
#define __exit
#define __initdata
#define __exitdata
#define __ro_after_init
#endif
