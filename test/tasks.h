/* SPDX-License-Identifier: MIT */
/*
 * For test programs: find a thread of this process by its name (comm), as
 * the library names its own ("kk-control").  Header-only, so that a script's
 * program needs nothing but -I$SRC/test (test/cprog-lib.sh).
 */
#ifndef KK_TEST_TASKS_H
#define KK_TEST_TASKS_H

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The id of a thread of this process named @comm; 0 if there is none. */
static inline int task_named(const char *comm)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int found = 0;

	while (!found && d && (e = readdir(d))) {
		char path[300], name[64] = "";
		FILE *f;

		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		if (e->d_name[0] == '.' || !(f = fopen(path, "r")))
			continue;
		found = fgets(name, sizeof(name), f) && !strncmp(name, comm, strlen(comm)) &&
			!strcmp(name + strlen(comm), "\n");
		fclose(f);
		if (found)
			found = atoi(e->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

#endif
