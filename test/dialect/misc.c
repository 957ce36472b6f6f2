/* SPDX-License-Identifier: MIT */
/* panic (WARN), shazptr, ratelimit, control and kernelkit.h from every dialect. */
#include <kernelkit/kernelkit.h>
#include <kernelkit/control.h>
#include <kernelkit/panic.h>
#include <kernelkit/ratelimit.h>
#include <kernelkit/shazptr.h>
#include "dialect.h"

static int shared_value;

int dialect_misc(void)
{
	struct shazptr_guard g;
	unsigned long warns = kk_warn_count();
	int i, allowed = 0;
	static DEFINE_RATELIMIT_STATE(rs, 1000000, 3);

	/* WARN_ON is an expression with the condition's value */
	DIALECT_CHECK(WARN_ON(0) == 0);
	DIALECT_CHECK(WARN_ON_ONCE(1) != 0);
	DIALECT_CHECK(kk_warn_count() == warns + 1);

	g = shazptr_acquire(&shared_value);
	DIALECT_CHECK(kk_shazptr_scan(&shared_value) == -16 /* -EBUSY */);
	shazptr_clear(g);
	synchronize_shazptr(&shared_value);

	for (i = 0; i < 10; i++)
		allowed += __ratelimit(&rs);
	DIALECT_CHECK(allowed == 3);
	return 0;
}
