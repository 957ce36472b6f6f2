/* SPDX-License-Identifier: MIT */
/*
 * Build plumbing: printk and the pr_* levels print to stderr with the level
 * in front.  pr_debug() comes from <linux/dynamic_debug.h> (kernelkit).
 */
#ifndef KK_CONF_LINUX_PRINTK_H
#define KK_CONF_LINUX_PRINTK_H

#include <stdio.h>

#ifndef pr_fmt
#define pr_fmt(fmt) fmt
#endif

#define KERN_EMERG	"<0>"
#define KERN_ALERT	"<1>"
#define KERN_CRIT	"<2>"
#define KERN_ERR	"<3>"
#define KERN_WARNING	"<4>"
#define KERN_NOTICE	"<5>"
#define KERN_INFO	"<6>"
#define KERN_DEBUG	"<7>"
#define KERN_CONT	""

#define printk(fmt, ...)	fprintf(stderr, fmt, ##__VA_ARGS__)
#define pr_emerg(fmt, ...)	printk(KERN_EMERG pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...)	printk(KERN_ALERT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...)	printk(KERN_CRIT pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...)	printk(KERN_ERR pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	printk(KERN_WARNING pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...)	printk(KERN_NOTICE pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	printk(KERN_INFO pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...)	printk(fmt, ##__VA_ARGS__)

#include <linux/dynamic_debug.h>

#endif
