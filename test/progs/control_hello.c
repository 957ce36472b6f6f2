// SPDX-License-Identifier: MIT
/*
 * A hello world that links kernelkit and has no sites: the control endpoint
 * must not start unless there is something to control.
 *   control_hello                 report
 *   control_hello file            create a control file of the program's own, report
 *   control_hello start           kk_control_start(), report
 *   control_hello dlopen LIB      dlopen LIB (an object with sites), report
 * The report is "tasks=<threads> endpoint=<0|1>": the number of entries of
 * /proc/self/task and whether @kernelkit/<pid> listens in /proc/net/unix.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kernelkit/control.h>

#include "kktest.h"

static int show(struct kk_buf *out, void *priv)
{
	(void)priv;
	return kk_buf_printf(out, "hello\n");
}

static const struct kk_control_file_ops hello_ops = { .show = show };

static int endpoint(void)
{
	char want[64], line[512];
	FILE *f = fopen("/proc/net/unix", "re");
	int found = 0;

	snprintf(want, sizeof(want), " @kernelkit/%d\n", (int)getpid());
	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	if (f)
		fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "file") &&
	    kk_control_create_file("hello/world", &hello_ops, NULL))
		return 2;
	if (argc > 1 && !strcmp(argv[1], "start") && kk_control_start())
		return 3;
	if (argc > 2 && !strcmp(argv[1], "dlopen") && !dlopen(argv[2], RTLD_NOW)) {
		fprintf(stderr, "%s\n", dlerror());
		return 4;
	}
	printf("tasks=%d endpoint=%d\n", kkt_nr_tasks(), endpoint());
	return 0;
}
