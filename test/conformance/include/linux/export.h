/* SPDX-License-Identifier: MIT */
/* Build plumbing: every symbol of a test object is visible anyway. */
#ifndef KK_CONF_LINUX_EXPORT_H
#define KK_CONF_LINUX_EXPORT_H
#define EXPORT_SYMBOL(sym)		extern int __kk_conf_unused_export
#define EXPORT_SYMBOL_GPL(sym)		extern int __kk_conf_unused_export
#define EXPORT_SYMBOL_NS(sym, ns)	extern int __kk_conf_unused_export
#define EXPORT_SYMBOL_NS_GPL(sym, ns)	extern int __kk_conf_unused_export
#endif
