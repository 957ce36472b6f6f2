/* SPDX-License-Identifier: MIT */
/*
 * The dialect consumer: one program that uses every public header the way a
 * program would, built as C99, C11, C17, C23, gnu11 and C++11..C++23 with gcc
 * and clang (mk/dialect.mk).  Each facility file exports one check function
 * that returns 0 or prints what went wrong and returns 1.  Everything here is
 * in the common subset of C and C++: no designated initializers, no compound
 * literals, casts on void pointers.
 */
#ifndef KK_DIALECT_H
#define KK_DIALECT_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

int dialect_jump_label(void);
int dialect_dynamic_debug(void);
int dialect_dynamic_debug_level(void);	/* a log macro with a level: pr_debug_if() */
int dialect_debugobjects(void);
int dialect_misc(void);		/* panic, shazptr, ratelimit, control, kernelkit */

#define DIALECT_CHECK(cond) do {						\
	if (!(cond)) {								\
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		return 1;							\
	}									\
} while (0)

#ifdef __cplusplus
}
#endif
#endif
