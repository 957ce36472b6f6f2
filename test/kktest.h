/* SPDX-License-Identifier: MIT */
/* Small helpers shared by kernelkit's test programs. */
#ifndef KK_TEST_H
#define KK_TEST_H

#include <dirent.h>
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

/* Threads of the calling process (entries of /proc/self/task), or -1. */
static inline int kkt_nr_tasks(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

#endif
