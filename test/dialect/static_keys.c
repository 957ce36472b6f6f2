/* SPDX-License-Identifier: MIT */
/* Static keys from every dialect: the kernel's API, and one NOP per site. */
#include <string.h>
#include <kernelkit/jump_label.h>
#include "dialect.h"

DEFINE_STATIC_KEY_FALSE(dialect_off);
DEFINE_STATIC_KEY_TRUE(dialect_on);

static int __attribute__((__noinline__)) site_off(void)
{
	if (static_branch_unlikely(&dialect_off))
		return 1;
	return 0;
}

static int __attribute__((__noinline__)) site_on(void)
{
	if (static_branch_likely(&dialect_on))
		return 1;
	return 0;
}

#ifndef KK_NO_JUMP_LABEL
/* Every site of this program that belongs to a disabled-by-default,
 * unlikely site starts as the 5-byte NOP, in C and in C++ alike. */
static int nop_sites(void)
{
	static const unsigned char nop5[5] = { 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	const struct jump_entry *e;
	int nops = 0;

	for (e = __start_kk_jump_table; e && e < __stop_kk_jump_table; e++) {
		const unsigned char *code = (const unsigned char *)&e->code + e->code;
		if (memcmp(code, nop5, sizeof(nop5)) == 0)
			nops++;
	}
	return nops;
}
#endif

int dialect_static_keys(void)
{
	DIALECT_CHECK(site_off() == 0);
	DIALECT_CHECK(site_on() == 1);
	DIALECT_CHECK(!static_key_enabled(&dialect_off));
	DIALECT_CHECK(static_key_enabled(&dialect_on));
#ifndef KK_NO_JUMP_LABEL
	/* site_off and site_on are both NOPs while their keys have their defaults */
	DIALECT_CHECK(nop_sites() >= 2);
#endif
	DIALECT_CHECK(static_branch_enable(&dialect_off) == 0);
	DIALECT_CHECK(site_off() == 1);
	DIALECT_CHECK(static_key_enabled(&dialect_off));
	DIALECT_CHECK(static_branch_disable(&dialect_on) == 0);
	DIALECT_CHECK(site_on() == 0);
	DIALECT_CHECK(static_branch_disable(&dialect_off) == 0);
	DIALECT_CHECK(site_off() == 0);
	DIALECT_CHECK(static_branch_enable(&dialect_on) == 0);
	DIALECT_CHECK(site_on() == 1);
	return 0;
}
