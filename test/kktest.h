/* SPDX-License-Identifier: MIT */
/* Small helpers shared by kernelkit's test programs. */
#ifndef KK_TEST_H
#define KK_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Directory of the build being tested (set by scripts/run-tests.sh), or "build". */
static inline const char *kkt_build_dir(void)
{
	const char *b = getenv("KK_BUILD");
	return b && *b ? b : "build";
}

/* Path of a file in the build directory, in a static buffer. */
static inline const char *kkt_build_path(const char *rel)
{
	static char buf[4096];
	snprintf(buf, sizeof(buf), "%s/%s", kkt_build_dir(), rel);
	return buf;
}

#endif
