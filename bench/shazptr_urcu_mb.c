// SPDX-License-Identifier: MIT
/* kk-bench shazptr: the liburcu-mb comparison (inlined read side). */
#define _LGPL_SOURCE
#include <urcu/urcu-mb.h>

#define SHZB_FL(x) urcu_mb_##x
#define SHZB_NAME shzb_urcu_mb
#define SHZB_LABEL "urcu_mb"
#include "shazptr_urcu.h"
