// SPDX-License-Identifier: MIT
/*
 * For test/scripts/jump_label_export.sh: a program with an operator-
 * switchable key ("feature", exported) and one it keeps to itself
 * ("private").  It prints its pid, then answers each line on stdin with
 * the branches its sites take now ("feature=0 private=0"), until EOF.
 */
#include <stdio.h>
#include <unistd.h>

#include <kernelkit/jump_label.h>

DEFINE_STATIC_KEY_FALSE(feature);
DEFINE_STATIC_KEY_FALSE(private_key);

__attribute__((noinline)) static int feature_on(void)
{
	return static_branch_unlikely(&feature);
}

__attribute__((noinline)) static int private_on(void)
{
	return static_branch_unlikely(&private_key);
}

int main(void)
{
	char line[64];

	if (kk_static_branch_export(&feature, NULL)) {
		fprintf(stderr, "export: %s\n", kk_jump_label_strerror());
		return 1;
	}
	printf("%d\n", (int)getpid());
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		printf("feature=%d private=%d\n", feature_on(), private_on());
		fflush(stdout);
	}
	return 0;
}
