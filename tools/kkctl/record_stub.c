// SPDX-License-Identifier: MIT
/*
 * STUB, REPLACED AT MERGE: the ctf and perfetto writers are
 * tools/kkctl/record_ctf.c and record_perfetto.c (branch fix39-writers).
 * Until they are merged, these weak definitions let kkctl build and say
 * the format is not built in; the real writers' strong definitions take
 * their place, and this file is then deleted.
 */
#include "kkctl.h"
#include "record.h"

static int stub_open(struct kkr_writer *w, const char *path)
{
	(void)path;
	fprintf(stderr, "%s: --format %s is not built into this kkctl\n", kkctl_prog,
		w->ops->name);
	return -1;
}

__attribute__((weak)) const struct kkr_writer_ops kkr_ctf_ops = {
	.name = "ctf", .dir = true, .open = stub_open,
};
__attribute__((weak)) const struct kkr_writer_ops kkr_perfetto_ops = {
	.name = "perfetto", .open = stub_open,
};
