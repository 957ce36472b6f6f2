// SPDX-License-Identifier: MIT
/*
 * The control endpoint for a ThreadSanitizer build that links a facility's
 * sources without src/control.c (mk/tsan.mk): the facility's files are
 * registered nowhere, so nothing ever reads or writes them.
 */
#include <kernelkit/control.h>
#include "control.h"

void kk_control_add_lib_file(struct kk_cfile *f)
{
	(void)f;
}

int kk_buf_printf(struct kk_buf *b, const char *fmt, ...)
{
	(void)b;
	(void)fmt;
	return 0;
}

/* The headers' constructors hold the endpoint's start: there is none.
 * (Not jump_label.h: its constructor would register this file.) */
void kk_object_register_begin(void);
void kk_object_register_end(void);

void kk_object_register_begin(void)
{
}

void kk_object_register_end(void)
{
}
