/* SPDX-License-Identifier: MIT */
/* The kernel header is kernelkit's. */
#include <kernelkit/debugobjects.h>
