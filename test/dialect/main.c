/* SPDX-License-Identifier: MIT */
#include "dialect.h"

static const char *dialect_name(void)
{
#ifdef __cplusplus
	return "C++";
#else
	return "C";
#endif
}

int main(void)
{
	int bad = 0;

	bad |= dialect_jump_label();
	bad |= dialect_dynamic_debug();
	bad |= dialect_dynamic_debug_level();
	bad |= dialect_debugobjects();
	bad |= dialect_misc();
#ifdef __cplusplus
	printf("%s %ld: %s\n", dialect_name(), (long)__cplusplus, bad ? "FAILED" : "ok");
#else
	printf("%s %ld: %s\n", dialect_name(), (long)__STDC_VERSION__, bad ? "FAILED" : "ok");
#endif
	return bad;
}
