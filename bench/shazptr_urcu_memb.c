// SPDX-License-Identifier: MIT
/* kk-bench shazptr: the liburcu-memb comparison (inlined read side). */
#define _LGPL_SOURCE
#include <urcu/urcu-memb.h>

#define SHZB_FL(x) urcu_memb_##x
#define SHZB_NAME shzb_urcu_memb
#define SHZB_LABEL "urcu_memb"
#include "shazptr_urcu.h"
