/* SPDX-License-Identifier: MIT */
/*
 * Loads a kernel-style test module the way insmod would: runs its
 * module_init function, fails (exit 1) if that returns nonzero, then runs
 * its module_exit function.  Linked into every test/conformance program.
 */
#include <stdio.h>
#include <linux/module.h>

struct kk_conf_module kk_conf_module;

int main(int argc, char **argv)
{
	int ret;

	(void)argc;
	if (!kk_conf_module.init) {
		fprintf(stderr, "%s: no module_init\n", argv[0]);
		return 1;
	}
	ret = kk_conf_module.init();
	if (ret) {
		fprintf(stderr, "%s: module_init returned %d\n", argv[0], ret);
		return 1;
	}
	if (kk_conf_module.exit)
		kk_conf_module.exit();
	printf("%s: loaded and unloaded\n", argv[0]);
	return 0;
}
