/* SPDX-License-Identifier: MIT */
/*
 * Build plumbing for module parameters.  kernelkit defines struct
 * kernel_param and struct kernel_param_ops (in <kernelkit/dynamic_debug.h>,
 * for the classmap parameters); module_param_cb() declares one and registers
 * it with kernelkit (kk_module_param_register()) so that it is served as the
 * control file dynamic_debug/params/<KBUILD_MODNAME>.<name>, which is what
 * /sys/module/<mod>/parameters/<name> is to the kernel.  The registration is
 * dropped when the module is unloaded.
 */
#ifndef KK_CONF_LINUX_MODULEPARAM_H
#define KK_CONF_LINUX_MODULEPARAM_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <kernelkit/dynamic_debug.h>

#define module_param_cb(_name, _ops, _arg, _perm)				\
	static struct kernel_param __kk_param_##_name = {			\
		.name = #_name, .mod = (struct module *)0, .ops = (_ops),	\
		.perm = (_perm), .level = -1, .flags = 0, .arg = (_arg) };	\
	static void __attribute__((__constructor__(103))) __kk_param_reg_##_name(void) \
	{ kk_module_param_register(KBUILD_MODNAME, &__kk_param_##_name); }	\
	static void __attribute__((__destructor__(103))) __kk_param_unreg_##_name(void) \
	{ kk_module_param_unregister(KBUILD_MODNAME, &__kk_param_##_name); }	\
	extern int __kk_conf_unused_param

#define MODULE_PARM_DESC(_parm, desc)	extern int __kk_conf_unused_parm_desc

/* module_param() for the plain types: int, uint, ulong, bool. */
static inline int __kk_param_set_long(const char *val, const struct kernel_param *kp, int type)
{
	char *end;
	long v;

	if (type == 3) {
		if (!strcmp(val, "1") || !strcmp(val, "1\n") || !strcmp(val, "y") ||
		    !strcmp(val, "Y") || !strcmp(val, "y\n") || !strcmp(val, "Y\n"))
			v = 1;
		else if (!strcmp(val, "0") || !strcmp(val, "0\n") || !strcmp(val, "n") ||
			 !strcmp(val, "N") || !strcmp(val, "n\n") || !strcmp(val, "N\n"))
			v = 0;
		else
			return -EINVAL;
		*(bool *)kp->arg = v;
		return 0;
	}
	errno = 0;
	v = strtol(val, &end, 0);
	if (errno || end == val || (*end && strcmp(end, "\n")))
		return -EINVAL;
	if (type == 0)
		*(int *)kp->arg = (int)v;
	else if (type == 1)
		*(unsigned int *)kp->arg = (unsigned int)v;
	else
		*(unsigned long *)kp->arg = (unsigned long)v;
	return 0;
}
static inline int __kk_param_get_long(char *buf, const struct kernel_param *kp, int type)
{
	if (type == 0)
		return snprintf(buf, KK_PARAM_BUFSIZE, "%d\n", *(int *)kp->arg);
	if (type == 1)
		return snprintf(buf, KK_PARAM_BUFSIZE, "%u\n", *(unsigned int *)kp->arg);
	if (type == 2)
		return snprintf(buf, KK_PARAM_BUFSIZE, "%lu\n", *(unsigned long *)kp->arg);
	return snprintf(buf, KK_PARAM_BUFSIZE, "%c\n", *(bool *)kp->arg ? 'Y' : 'N');
}
#define __KK_PARAM_OPS(type, n)							\
	static inline int __kk_param_set_##type(const char *v, const struct kernel_param *kp) \
	{ return __kk_param_set_long(v, kp, n); }				\
	static inline int __kk_param_get_##type(char *b, const struct kernel_param *kp) \
	{ return __kk_param_get_long(b, kp, n); }				\
	static const struct kernel_param_ops __attribute__((__unused__)) param_ops_##type = { \
		.set = __kk_param_set_##type, .get = __kk_param_get_##type }
__KK_PARAM_OPS(int, 0);
__KK_PARAM_OPS(uint, 1);
__KK_PARAM_OPS(ulong, 2);
__KK_PARAM_OPS(bool, 3);

#define module_param_named(_name, _value, _type, _perm)				\
	module_param_cb(_name, &param_ops_##_type, &(_value), _perm)
#define module_param(_name, _type, _perm)	module_param_named(_name, _name, _type, _perm)

#endif
