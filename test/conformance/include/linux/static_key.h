/* SPDX-License-Identifier: MIT */
#include <linux/jump_label.h>
