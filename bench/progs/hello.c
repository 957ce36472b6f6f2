// SPDX-License-Identifier: MIT
/* The guest benchmark's hello world, built twice: with and without
 * -lkernelkit (mk/guest.mk).  It uses nothing of the library. */
#include <stdio.h>

int main(void)
{
	puts("hello, world");
	return 0;
}
