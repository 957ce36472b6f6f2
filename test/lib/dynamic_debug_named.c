// SPDX-License-Identifier: MIT
/* Sites of a unit that names its module: KK_MODNAME wins over the file name. */
#define KK_MODNAME "named_mod"
#include <kernelkit/dynamic_debug.h>

void ddn_run(int v)
{
	pr_debug("named one %d\n", v);
	pr_debug("named two %d\n", v);
}
