/* SPDX-License-Identifier: MIT */
/*
 * Build plumbing for kernel-style test modules (test/conformance/).  Nothing
 * here is kernelkit API: it only turns a module into a program.  The module's
 * init function runs from main() (test/conformance/runner.c); a nonzero
 * return fails the test, as a failed insmod would.  Then its exit function
 * runs.
 */
#ifndef KK_CONF_LINUX_MODULE_H
#define KK_CONF_LINUX_MODULE_H

#include <linux/init.h>
#include <linux/export.h>
#include <linux/kernel.h>
#include <linux/moduleparam.h>

struct kk_conf_module {
	int (*init)(void);
	void (*exit)(void);
};
extern struct kk_conf_module kk_conf_module;

#define module_init(fn)								\
	static void __attribute__((__constructor__(65535))) __kk_conf_set_init(void) \
	{ kk_conf_module.init = fn; }
#define module_exit(fn)								\
	static void __attribute__((__constructor__(65535))) __kk_conf_set_exit(void) \
	{ kk_conf_module.exit = fn; }

#define MODULE_LICENSE(s)		extern int __kk_conf_unused_license
#define MODULE_AUTHOR(s)		extern int __kk_conf_unused_author
#define MODULE_DESCRIPTION(s)		extern int __kk_conf_unused_description
#define MODULE_VERSION(s)		extern int __kk_conf_unused_version
#define MODULE_ALIAS(s)			extern int __kk_conf_unused_alias
#define MODULE_IMPORT_NS(ns)		extern int __kk_conf_unused_ns

#define THIS_MODULE			((struct module *)0)
struct module;

#endif
