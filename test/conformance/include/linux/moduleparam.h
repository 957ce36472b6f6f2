/* SPDX-License-Identifier: MIT */
/*
 * Build plumbing for module parameters.  kernelkit defines struct
 * kernel_param and struct kernel_param_ops (in <kernelkit/dynamic_debug.h>,
 * for the classmap parameters); module_param_cb() declares one and registers
 * it with kernelkit so that it is served as a control file, which is what
 * /sys/module/<mod>/parameters/<name> is to the kernel.
 */
#ifndef KK_CONF_LINUX_MODULEPARAM_H
#define KK_CONF_LINUX_MODULEPARAM_H
#endif
